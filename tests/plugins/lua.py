"""The Lua interpreter Slurm's plugins link (lua5.1 on Debian 12 and 13), for the plugin
tests: installed with apt-get when missing (as root), else the tests skip (fail under CI)."""

from __future__ import annotations

from slurm_mlsched.plugins.check import DEFAULT_LUA
from tests.apt import ensure_command

PACKAGE = "lua5.1"


def ensure_lua() -> str:
    """The path of lua5.1, installing it first if needed (or skip / fail under CI)."""
    return ensure_command(DEFAULT_LUA, PACKAGE)
