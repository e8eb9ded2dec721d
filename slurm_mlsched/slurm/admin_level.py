"""A user's Slurm ``AdminLevel``, read from slurmdbd with ``sacctmgr`` (pure parsing here;
the command runs through :class:`~slurm_mlsched.slurm.runner.SlurmCommands`).

``sacctmgr -nP show user name=NAME format=adminlevel`` prints one line, ``None``,
``Operator`` or ``Administrator``; nothing when the user has no association.
"""

from __future__ import annotations

from ..errors import SlurmError
from .runner import SlurmCommands

ADMIN_LEVELS = ("none", "operator", "administrator")
"""Slurm's AdminLevel values, lowest first (sacctmgr prints them capitalized)."""

#: How long to wait for slurmdbd (sacctmgr does not talk to slurmctld).
SACCTMGR_TIMEOUT_S = 3.0


def parse_admin_level(stdout: str) -> str:
    """``none``, ``operator`` or ``administrator`` from sacctmgr's output (no line: none).

    Raises :class:`SlurmError` on anything else (sacctmgr's output changed)."""
    lines = {line.strip().lower() for line in stdout.splitlines() if line.strip()}
    if not lines:
        return "none"
    if len(lines) == 1 and (level := lines.pop()) in ADMIN_LEVELS:
        return level
    raise SlurmError(
        f"cannot read an AdminLevel from sacctmgr's output: {stdout.strip()[:200]!r}",
        hint="run: sacctmgr -nP show user name=$USER format=adminlevel",
        context={"command": "sacctmgr show user"},
    )


def at_least(level: str, required: str) -> bool:
    """Whether AdminLevel ``level`` is ``required`` or above (both as ADMIN_LEVELS)."""
    return ADMIN_LEVELS.index(level) >= ADMIN_LEVELS.index(required)


def admin_level(user: str, slurm: SlurmCommands) -> str:
    """The Slurm AdminLevel of ``user`` (one bounded sacctmgr call)."""
    out = slurm.run_local(
        ["sacctmgr", "-nP", "show", "user", f"name={user}", "format=adminlevel"],
        timeout=SACCTMGR_TIMEOUT_S,
    )
    return parse_admin_level(out)
