"""The Lua unit tests of plugins/job_submit.lua and plugins/cli_filter.lua
(tests/plugins/test_*.lua), run with the interpreter Slurm links (lua5.1), one pytest case
per Lua test. The slurm table is a stub (slurm_mlsched/plugins/lua/slurm_stub.lua)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
_TEST = re.compile(r'^T\["(?P<name>[^"]+)"\] = function', re.MULTILINE)


def _cases() -> list[tuple[str, str]]:
    return [
        (path.name, match["name"])
        for path in sorted(HERE.glob("test_*.lua"))
        for match in _TEST.finditer(path.read_text())
    ]


@pytest.mark.parametrize(("file", "name"), _cases(), ids=[f"{f}::{n}" for f, n in _cases()])
def test_lua(lua: str, tmp_path: Path, file: str, name: str) -> None:
    done = subprocess.run(
        [lua, str(HERE / file), str(ROOT), name, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.startswith("ok - "), done.stdout + done.stderr


def test_every_lua_test_is_collected(lua: str) -> None:
    for path in sorted(HERE.glob("test_*.lua")):
        listed = subprocess.run(
            [lua, str(path), str(ROOT), "--list"], capture_output=True, text=True, timeout=60
        )
        assert listed.returncode == 0, listed.stderr
        assert listed.stdout.split("\n")[:-1] == [n for f, n in _cases() if f == path.name]
