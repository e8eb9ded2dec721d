"""The user's training program as a submission sees it: where the script is, its
arguments, and the command every task runs (``INTERPRETER PROGRAM ARGS…``)."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class JobScript:
    """The user's program: the script, its arguments, how to run it."""

    path: Path  # absolute, on this machine
    args: tuple[str, ...] = ()

    @property
    def executable(self) -> bool:
        """Whether the script may be run directly (executable here)."""
        return os.access(self.path, os.X_OK)

    def command(self, interpreter: str | None, program: str | None = None) -> tuple[str, ...]:
        """What every task runs: ``INTERPRETER PROGRAM ARGS…``, ``PROGRAM`` being where the
        script is on the cluster (default: :attr:`path`). Without ``--interpreter``: a
        ``*.py`` script runs with ``python3``, an executable one directly, others with
        ``bash``."""
        where = program or str(self.path)
        if interpreter:
            return (*shlex.split(interpreter), where, *self.args)
        if self.path.suffix == ".py":
            return ("python3", where, *self.args)
        if self.executable:
            return (where, *self.args)
        return ("bash", where, *self.args)
