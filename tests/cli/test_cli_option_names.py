"""The job options' names on the command line: every header key is a flag of `plan` and
`submit` under the same name."""

from __future__ import annotations

import typer.main

from slurm_mlsched.cli.app import app
from slurm_mlsched.files.job_options import OPTIONS


def test_every_header_key_is_a_flag_of_plan_and_submit() -> None:
    """Issue 15: the header key `--output` and the flag `--output-pattern` differed. Every
    job option's header key must be accepted, under the same name, by both commands."""
    command = typer.main.get_command(app)
    for name in ("plan", "submit"):
        sub = command.commands[name]  # type: ignore[attr-defined]
        flags = {opt for p in sub.params for opt in p.opts}
        missing = sorted(flag for flag, _ in OPTIONS.values() if flag not in flags)
        assert missing == [], (name, missing)
