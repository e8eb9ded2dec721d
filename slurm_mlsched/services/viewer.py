"""Who runs a command (light: the CLI builds it before any store or planner is loaded)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Viewer:
    """Who runs the command."""

    user: str
    is_admin: bool = False
