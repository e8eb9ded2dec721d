"""docs/user-guide.md's table of every sbatch option is the code's table
(``files/sbatch_lines.SBATCH_OPTIONS``), and each option behaves as its row says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.files.sbatch_lines import (
    BY_NAME,
    SBATCH_OPTIONS,
    Kind,
    SbatchOption,
    parse_sbatch_lines,
    sort_lines,
)
from slurm_mlsched.model.narrowing import NodeFilter

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "user-guide.md"
HEADER = "| option | what mlsub does | why / exact meaning |"
#: A valid value for the options whose values mlsub reads itself (the rest take any text).
SAMPLES = {
    "nodelist": "node1",
    "exclude": "node1",
    "constraint": "ib",
    "mem": "1G",
    "cpus-per-task": "2",
    "mincpus": "2",
    "gres": "gpu:1",
}


def documented() -> dict[str, tuple[str, str]]:
    """option name -> (what, why) from the guide's table."""
    lines = GUIDE.read_text().splitlines()
    start = lines.index(HEADER) + 2
    rows: dict[str, tuple[str, str]] = {}
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        names = re.findall(r"`--([a-z-]+)`", cells[0])
        assert len(names) == 1, line
        rows[names[0]] = (cells[1], cells[2].replace("\\|", "|"))
    return rows


def test_the_guide_lists_every_option_once_with_its_class_and_reason() -> None:
    rows = documented()
    assert set(rows) == {o.name for o in SBATCH_OPTIONS}
    for name, (what, why) in rows.items():
        option = BY_NAME[name]
        expected = option.kind.value + (" (every component)" if option.per_component else "")
        assert what == expected, name
        assert why == option.why, name


def _line(option: SbatchOption) -> str:
    if option.arg == "none":
        return f"#SBATCH --{option.name}\n"
    return f"#SBATCH --{option.name}={SAMPLES.get(option.name, 'x1')}\n"


@pytest.mark.parametrize("name", sorted(documented()))
def test_each_option_is_handled_as_the_table_says(name: str) -> None:
    what = documented()[name][0].split()[0]
    option = BY_NAME[name]
    text = "#!/bin/bash\n" + _line(option)
    if what in (Kind.REFUSED, Kind.NOT_APPLICABLE):
        with pytest.raises(InputError) as info:
            parse_sbatch_lines(text, "t.sh")
        assert info.value.code == "sbatch-line"
        assert info.value.context == {"file": "t.sh", "line": 2, "option": name}
        return
    header = sort_lines(parse_sbatch_lines(text, "t.sh"), "t.sh")
    if option.job_option is not None:
        assert list(header.job_values) == [option.job_option]
    elif what == Kind.CARRIED:
        assert [p.option.name for p in header.carried] == [name]
    else:
        assert what == Kind.NARROWS
        assert header.narrowing != NodeFilter() and not header.carried
