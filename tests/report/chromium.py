"""Debian's headless Chromium for the report tests and bench/report_scale.py: installed
with apt-get when missing (as root), else the tests skip (fail under CI)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from tests.conftest import require_or_skip

PACKAGE = "chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1100")


def _install() -> str | None:
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "chromium is not installed and this is not a root Debian machine to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=600"]
    install = ["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", PACKAGE]
    problem = None
    for cmd in (install, ["apt-get", *lock, "update", "-qq"], install):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            problem = f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}"
        elif cmd is install:
            return None
    return problem


def ensure_chromium() -> str:
    """The path of chromium, installing it first if needed (or skip / fail under CI)."""
    found = shutil.which(PACKAGE)
    if found:
        return found
    problem = _install()
    found = shutil.which(PACKAGE)
    if found is None:
        require_or_skip(problem or "chromium not found after installing it")
    assert found is not None
    return found


def dump_dom(chromium: str, page: Path, fragment: str = "", budget_ms: int = 5000) -> str:
    """The page's DOM after its scripts ran (``fragment``: the URL's ``#…``)."""
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    done = subprocess.run(
        [chromium, *FLAGS, f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
        capture_output=True, text=True, timeout=180, check=True,
    )  # fmt: skip
    return done.stdout


def screenshot(chromium: str, page: Path, out: Path) -> None:
    subprocess.run(
        [chromium, *FLAGS, "--virtual-time-budget=3000", f"--screenshot={out}",
         page.resolve().as_uri()],
        capture_output=True, text=True, timeout=180, check=True,
    )  # fmt: skip


def body_data(dom: str) -> dict[str, str]:
    """The ``data-*`` attributes of the page's body (what its self-test recorded)."""
    match = re.search(r"<body([^>]*)>", dom)
    assert match, dom[:500]
    return dict(re.findall(r'data-([a-z-]+)="([^"]*)"', match.group(1)))
