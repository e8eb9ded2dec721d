"""Every row of the trust-model table in docs/admin-guide.md names tests that exist."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _table_rows() -> list[str]:
    text = (ROOT / "docs" / "admin-guide.md").read_text(encoding="utf-8")
    section = text.split("### Who sees what: the trust model", 1)[1].split("\n## ", 1)[0]
    return [ln for ln in section.splitlines() if ln.startswith("| ") and "---" not in ln][1:]


def _functions(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}


def test_every_row_names_an_existing_test() -> None:
    rows = _table_rows()
    assert len(rows) >= 10
    for row in rows:
        named = re.findall(r"(tests/[\w/]+\.py)::(\w+)", row)
        assert named, f"no test named in: {row}"
        for file, name in named:
            assert name in _functions(ROOT / file), f"{file}::{name} (row: {row[:60]}…)"
