"""docs/user-guide.md stays in step with the code it documents."""

from __future__ import annotations

import re
from pathlib import Path

from slurm_mlsched.errors import EXIT_CODES
from slurm_mlsched.files.job_options import OPTIONS
from slurm_mlsched.files.profiles import load_profiles

GUIDE = (Path(__file__).resolve().parents[2] / "docs" / "user-guide.md").read_text()


def test_exit_code_table_matches_errors_module() -> None:
    rows = dict(re.findall(r"^\| (\d) \| (.+?) \|$", GUIDE, flags=re.MULTILINE))
    assert {int(k): v for k, v in rows.items()} == EXIT_CODES


def test_every_job_option_is_documented() -> None:
    for flag, _ in OPTIONS.values():
        assert f"| `{flag}" in GUIDE, flag


def test_every_profiled_model_is_documented() -> None:
    for name in load_profiles():
        assert f"| `{name}` |" in GUIDE, name
