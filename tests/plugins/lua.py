"""The Lua interpreter Slurm's plugins link (lua5.1 on Debian 12 and 13), for the plugin
tests: installed with apt-get when missing (as root), else the tests skip (fail under CI)."""

from __future__ import annotations

import os
import shutil
import subprocess

from slurm_mlsched.plugins.check import DEFAULT_LUA
from tests.conftest import require_or_skip

PACKAGE = "lua5.1"


def _install() -> str | None:
    """apt-get install lua5.1 (after apt-get update if the first try fails); returns why
    it failed, or None."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"{DEFAULT_LUA} is not installed and this is not a root Debian machine to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=600"]  # scripts/pyslurm.sh may be installing too
    install = ["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", PACKAGE]
    problem = None
    for cmd in (install, ["apt-get", *lock, "update", "-qq"], install):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            problem = f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}"
        elif cmd is install:
            return None
    return problem


def ensure_lua() -> str:
    """The path of lua5.1, installing it first if needed (or skip / fail under CI)."""
    found = shutil.which(DEFAULT_LUA)
    if found:
        return found
    problem = _install()
    found = shutil.which(DEFAULT_LUA)
    if found is None:
        require_or_skip(problem or f"{DEFAULT_LUA} not found after installing {PACKAGE}")
    assert found is not None
    return found
