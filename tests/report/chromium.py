"""Debian's headless Chromium for the report tests and bench/report_scale.py: installed
with apt-get when missing (as root), else the tests skip (fail under CI)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests.apt import ensure_command

PACKAGE = "chromium"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,1100")


def ensure_chromium() -> str:
    """The path of chromium, installing it first if needed (or skip / fail under CI)."""
    return ensure_command(PACKAGE, PACKAGE, timeout=900)


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
