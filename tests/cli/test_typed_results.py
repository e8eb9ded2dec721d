"""No untyped dict crosses from the services to the CLI (issue 16, item 3).

The services hand the CLI frozen, typed results, each with one ``to_json()``; the CLI's
functions take those types. Checked on the source: no annotation in ``cli/`` names
``dict[str, Any]`` or ``Mapping[str, Any]``, the CLI flattens no result into a dict, and
every ``to_json`` in the services says it returns JSON-ready data."""

from __future__ import annotations

import ast
from pathlib import Path

import slurm_mlsched

PACKAGE = Path(slurm_mlsched.__file__).parent
UNTYPED = ("dict[str, Any]", "Mapping[str, Any]", "list[dict[str, Any]]")


def _annotations(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            for a in args:
                if a.annotation is not None:
                    found.append((node.lineno, ast.unparse(a.annotation)))
            if node.returns is not None:
                found.append((node.lineno, ast.unparse(node.returns)))
        elif isinstance(node, ast.AnnAssign):
            found.append((node.lineno, ast.unparse(node.annotation)))
    return found


def test_the_cli_takes_no_untyped_dicts() -> None:
    bad = [
        f"cli/{path.name}:{line}: {text}"
        for path in sorted((PACKAGE / "cli").glob("*.py"))
        if path.name != "context.py"  # Typer command options, not a service result
        for line, text in _annotations(ast.parse(path.read_text()))
        if any(u in text for u in UNTYPED)
    ]
    assert bad == []


def test_the_cli_turns_no_result_into_a_dict() -> None:
    """The CLI prints ``result.to_json()`` for ``--json`` and reads attributes otherwise: it
    never flattens a result (``as_dict()``, ``details()``, ``asdict()``) to read keys."""
    bad = []
    for path in sorted((PACKAGE / "cli").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else None
            name = name or (node.func.id if isinstance(node.func, ast.Name) else None)
            if name in ("as_dict", "details", "asdict"):
                bad.append(f"cli/{path.name}:{node.lineno}: {name}()")
    assert bad == []


def test_every_result_prints_through_one_to_json() -> None:
    """A ``to_json`` in the services returns JSON-ready data typed as such."""
    bad = []
    for path in sorted((PACKAGE / "services").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name == "to_json":
                returns = "" if node.returns is None else ast.unparse(node.returns)
                if returns not in ("dict[str, object]", "list[dict[str, object]]"):
                    bad.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: -> {returns}")
    assert bad == []
