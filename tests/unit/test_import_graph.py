"""The package's import graph has no circle and no upward import (docs/architecture.md).

The graph is read from the source with :mod:`ast` (nothing is imported): every
``import`` and ``from … import`` of ours, at module level, inside functions and under
``if TYPE_CHECKING:`` alike, from each module to the module it names (``from pkg import
mod`` points at ``pkg.mod`` when that is a module). Three rules:

1. **No circle**: no module reaches itself (a strongly connected component of more than
   one module fails, listing its members).
2. **No upward import**: the packages stand on floors (:data:`FLOORS`, lowest first); a
   module imports only from its own package or from a lower floor. Inside ``placement``
   the same holds for its parts (:data:`PLACEMENT_FLOORS`).
3. **The CLI reaches the use cases only through** :mod:`slurm_mlsched.api`: no module of
   ``cli`` imports ``slurm_mlsched.services`` (the public API is what the CLI stands on).

A new package or a new ``placement`` part must be given its floor here: the test fails
for a package it does not know.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

PACKAGE = "slurm_mlsched"
SRC = Path(__file__).resolve().parents[2] / PACKAGE

#: The floors of the package's top-level parts, lowest first. A part imports only parts on
#: a lower floor (and itself). ``slurm_mlsched`` is the package's ``__init__`` (the version).
FLOORS: tuple[tuple[str, ...], ...] = (
    ("slurm_mlsched",),
    ("errors",),
    ("model",),
    ("ranges",),
    ("placement",),
    ("sim",),
    ("sbatch", "slurm"),
    ("storage",),
    ("files",),
    ("traces",),
    ("remote",),
    ("config",),
    ("plugins",),
    ("services",),
    ("api",),
    ("cli",),
    ("__main__",),
)

#: The floors of ``placement``'s parts, lowest first: the shared model of a placement run,
#: the program, the paper's algorithm and its forms, the baselines, the one table of
#: policies, the registry that reads it, and ``place()``.
PLACEMENT_FLOORS: tuple[tuple[str, ...], ...] = (
    ("params",),
    ("utility",),
    ("program",),
    ("yu_rr",),
    ("baselines",),
    ("policy_table",),
    ("registry",),
    ("placement",),
)


def module_name(path: Path, root: Path) -> str:
    """``root/slurm_mlsched/placement/yu_rr/joint.py`` → ``slurm_mlsched.placement.yu_rr.joint``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Every module of the package under ``package_dir`` → the modules of ours it imports."""
    root = package_dir.parent
    files = {module_name(p, root): p for p in sorted(package_dir.rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in files.items():
        is_init = path.name == "__init__.py"
        base = name.split(".") if is_init else name.split(".")[:-1]
        out: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                out.update(a.name for a in node.names if a.name in files)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    head = base[: len(base) - node.level + 1]
                    target = ".".join([*head, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                if target.split(".")[0] != package_dir.name:
                    continue
                for alias in node.names:
                    sub = f"{target}.{alias.name}"
                    out.add(sub if sub in files else target)
        out.discard(name)
        graph[name] = {t for t in out if t in files}
    return graph


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, Iterable[str]]] = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(iter(children), None)  # type: ignore[call-overload]
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _floor_of(part: str, floors: tuple[tuple[str, ...], ...]) -> int:
    for level, names in enumerate(floors):
        if part in names:
            return level
    raise AssertionError(
        f"{part!r} has no floor: give it one in tests/unit/test_import_graph.py "
        "(and in docs/architecture.md's table of layers)"
    )


def _part(module: str, depth: int) -> str:
    """The part a module belongs to at ``depth`` (1: top level, 2: inside placement); a
    package's own ``__init__`` is its package's name."""
    parts = module.split(".")
    return parts[depth] if len(parts) > depth else parts[-1]


def upward_imports(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Every import from a part to a part on a higher (or the same, other) floor."""
    bad = []
    for source, targets in sorted(graph.items()):
        for target in sorted(targets):
            a, b = _part(source, 1), _part(target, 1)
            if a != b:
                if _floor_of(b, FLOORS) >= _floor_of(a, FLOORS):
                    bad.append(f"{source} → {target} ({a} may not import {b})")
                continue
            if a == "placement":
                pa, pb = _part(source, 2), _part(target, 2)
                if pa != pb and _floor_of(pb, PLACEMENT_FLOORS) >= _floor_of(pa, PLACEMENT_FLOORS):
                    bad.append(f"{source} → {target} (placement.{pa} may not import {pb})")
    return bad


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(SRC)


def test_the_graph_is_read(graph: dict[str, set[str]]) -> None:
    """The walk sees the package (a walk that reads nothing would pass every rule)."""
    assert len(graph) > 150
    assert "slurm_mlsched.placement.policy_table" in graph["slurm_mlsched.placement.registry"]
    assert "slurm_mlsched.placement.yu_rr.joint" in graph["slurm_mlsched.placement.policy_table"]


def test_no_circle(graph: dict[str, set[str]]) -> None:
    found = circles(graph)
    assert not found, "import circles:\n" + "\n".join(" ⇄ ".join(c) for c in found)


def test_no_upward_import(graph: dict[str, set[str]]) -> None:
    bad = upward_imports(graph)
    assert not bad, "upward imports:\n" + "\n".join(bad)


def test_the_cli_reaches_services_only_through_the_api(graph: dict[str, set[str]]) -> None:
    bad = [
        f"{source} → {target}"
        for source, targets in sorted(graph.items())
        if source.startswith(f"{PACKAGE}.cli")
        for target in sorted(targets)
        if target.startswith(f"{PACKAGE}.services")
    ]
    assert not bad, "the CLI imports services directly (use slurm_mlsched.api):\n" + "\n".join(bad)


def test_placement_has_at_most_eight_entries() -> None:
    entries = sorted(p.name for p in (SRC / "placement").iterdir() if p.name != "__pycache__")
    assert len(entries) <= 8, entries


# --- the rules can fail ----------------------------------------------------------------


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = tmp_path / PACKAGE / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path / PACKAGE


def test_a_circle_through_a_function_level_import_is_found(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        {
            "__init__.py": "",
            "services/__init__.py": "",
            "services/submit.py": "def f():\n    from .replan import g\n",
            "services/replan.py": "from .submit import f\n",
        },
    )
    assert circles(import_graph(pkg)) == [
        ["slurm_mlsched.services.replan", "slurm_mlsched.services.submit"]
    ]


def test_an_upward_import_is_found(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        {
            "__init__.py": "",
            "model/__init__.py": "from ..services import db\n",
            "services/__init__.py": "",
            "services/db.py": "from ..model import x\n",
            "placement/__init__.py": "",
            "placement/program/__init__.py": "from ..baselines import drf\n",
            "placement/baselines/__init__.py": "",
            "placement/baselines/drf.py": "",
        },
    )
    bad = upward_imports(import_graph(pkg))
    assert bad == [
        "slurm_mlsched.model → slurm_mlsched.services.db (model may not import services)",
        "slurm_mlsched.placement.program → slurm_mlsched.placement.baselines.drf "
        "(placement.program may not import baselines)",
    ]


def test_a_package_without_a_floor_fails(tmp_path: Path) -> None:
    pkg = _package(
        tmp_path,
        {"__init__.py": "", "gadgets/__init__.py": "from ..model import x\n", "model.py": ""},
    )
    with pytest.raises(AssertionError, match="'gadgets' has no floor"):
        upward_imports(import_graph(pkg))
