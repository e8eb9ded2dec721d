"""The decision tag's rules, once: tests/fixtures/tag_cases.json is read by Python's
``find_tags`` and, through the Lua interpreter Slurm links, by both plugins'
(``job_submit.lua`` ``parse_tag``, ``cli_filter.lua`` ``tag_status``), so the three
readers of a tag cannot drift apart."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from slurm_mlsched.sbatch.tag import find_tags

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASES: list[dict[str, Any]] = json.loads(
    (ROOT / "tests" / "fixtures" / "tag_cases.json").read_text(encoding="utf-8")
)["cases"]


def lua_string(text: str) -> str:
    """A Lua 5.1 string literal for any text: every byte as a decimal escape."""
    return '"' + "".join(f"\\{b}" for b in text.encode("utf-8")) + '"'


@pytest.mark.parametrize("case", CASES, ids=[repr(c["comment"])[:40] for c in CASES])
def test_python_reads_the_table(case: dict[str, Any]) -> None:
    found = [[t.decision_id, t.token] for t in find_tags(case["comment"])]
    assert found == case["tags"]


def test_the_table_is_consistent_with_itself() -> None:
    """'ok' exactly when Python finds one tag (possibly repeated)."""
    for case in CASES:
        distinct = {tuple(t) for t in case["tags"]}
        assert (case["plugin"] == "ok") == (len(distinct) == 1), case


def test_both_plugins_read_the_table(lua: str, tmp_path: Path) -> None:
    comments = ",\n".join(lua_string(c["comment"]) for c in CASES)
    script = tmp_path / "tags.lua"
    script.write_text(
        f"local ROOT = {lua_string(str(ROOT))}\n"
        'local H = dofile(ROOT .. "/tests/plugins/harness.lua")(ROOT)\n'
        'local J = H.load("plugins/job_submit.lua")\n'
        'local C = H.load("plugins/cli_filter.lua")\n'
        f"local comments = {{\n{comments}\n}}\n"
        "for i = 1, #comments do\n"
        "  local t = J.parse_tag(comments[i])\n"
        '  io.write(i, "\\t", t.status, "\\t", t.id or "", "\\t", t.token or "", "\\t",\n'
        '           C.tag_status(comments[i]), "\\n")\n'
        "end\n",
        encoding="utf-8",
    )
    done = subprocess.run([lua, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    rows = [line.split("\t") for line in done.stdout.splitlines()]
    assert len(rows) == len(CASES)
    for case, (_, status, ident, token, cli_status) in zip(CASES, rows, strict=True):
        where = repr(case["comment"])
        assert (status, cli_status) == (case["plugin"], case["plugin"]), where
        if status == "ok":
            assert [int(ident), token] == case["tags"][0], where
