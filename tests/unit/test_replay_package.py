"""services/replay/ has no import circle (issue 16 item 6): each module's imports of its
siblings, read from the source, form a graph without cycles, TYPE_CHECKING imports too."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "slurm_mlsched" / "services" / "replay"


def _siblings(path: Path) -> set[str]:
    names = {p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module in names:
            found.add(node.module)
    return found


def test_no_module_of_the_replay_package_imports_one_that_imports_it_back() -> None:
    graph = {p.stem: _siblings(p) for p in PACKAGE.glob("*.py") if p.stem != "__init__"}
    assert set(graph) == {"types", "run", "report", "cells", "array", "merge"}

    def reaches(start: str, goal: str, seen: frozenset[str] = frozenset()) -> bool:
        return any(n == goal or (n not in seen and reaches(n, goal, seen | {n}))
                   for n in graph[start])  # fmt: skip

    cycles = [m for m in graph if reaches(m, m)]
    assert cycles == [], graph
    assert graph["types"] == set()  # the shared types import no sibling
