"""One declaration per job option (files/job_options.SPECS) drives plan's and submit's
flags, the '# mlsub:' header reader and the config's [job] table (issue 16 item 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer.main

from slurm_mlsched.cli.app import app
from slurm_mlsched.config import load_config
from slurm_mlsched.errors import InputError
from slurm_mlsched.files.job_options import OPTIONS, SPECS, parse_script_header

COMMANDS = {c.name: c for c in typer.main.get_command(app).commands.values()}  # type: ignore[attr-defined]
FIELDS = {s.field for s in SPECS}


@pytest.mark.parametrize("name", ["plan", "submit"])
def test_plan_and_submit_expose_exactly_the_table(name: str) -> None:
    params = {p.name: p for p in COMMANDS[name].params}
    assert set(params) >= FIELDS, sorted(FIELDS - set(params))
    for spec in SPECS:
        param = params[spec.field]
        assert tuple(param.opts) == (spec.flag, *spec.aliases)
        assert param.help == spec.help
    job_flags = {o for p in params.values() if p.name in FIELDS for o in p.opts}
    assert job_flags == {f for s in SPECS for f in (s.flag, *s.aliases)}


def test_the_header_and_the_config_read_the_same_table(tmp_path: Path) -> None:
    assert set(OPTIONS) == FIELDS
    assert {flag for flag, _ in OPTIONS.values()} == {s.flag for s in SPECS}
    header = "#!/bin/sh\n# mlsub: " + " ".join(f"{s.flag} 1" for s in SPECS[:3]) + "\n"
    assert parse_script_header(header, "x.sh")[::2] == [s.flag for s in SPECS[:3]]
    user = tmp_path / "user.toml"
    user.write_text("[job]\n" + "".join(f'{s.field} = "1"\n' for s in SPECS))
    cfg = load_config({}, system_path=tmp_path / "none", user_path=user)
    assert {k for k, _ in cfg.job} == FIELDS
    user.write_text('[job]\nnot_an_option = "1"\n')
    with pytest.raises(InputError, match="unknown job option"):
        load_config({}, system_path=tmp_path / "none", user_path=user)
