"""A Debian package a test needs (lua5.1, chromium): installed with apt-get when missing
(as root), else the test skips (fails under CI, tests/conftest.require_or_skip)."""

from __future__ import annotations

import os
import shutil
import subprocess

from tests.conftest import require_or_skip


def _install(package: str, timeout: float) -> str | None:
    """apt-get install ``package`` (after apt-get update if the first try fails); returns
    why it failed, or None."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return f"{package} is not installed and this is not a root Debian machine to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=600"]  # scripts/pyslurm.sh may be installing too
    install = ["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", package]
    problem = None
    for cmd in (install, ["apt-get", *lock, "update", "-qq"], install):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            problem = f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}"
        elif cmd is install:
            return None
    return problem


def ensure_command(command: str, package: str, *, timeout: float = 600) -> str:
    """The path of ``command``, installing ``package`` first if needed (or skip)."""
    found = shutil.which(command)
    if found:
        return found
    problem = _install(package, timeout)
    found = shutil.which(command)
    if found is None:
        require_or_skip(problem or f"{command} not found after installing {package}")
    assert found is not None
    return found
