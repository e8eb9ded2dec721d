"""``slurm_mlsched.api``: every stable name resolves, the type checker's view equals the
runtime table, importing it is light, and docs/python-api.md's example runs."""

from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from slurm_mlsched import api

ROOT = Path(__file__).resolve().parents[2]
API_INIT = ROOT / "slurm_mlsched" / "api" / "__init__.py"
DOC = ROOT / "docs" / "python-api.md"


def _type_checking_imports() -> dict[str, tuple[str, str]]:
    """``name -> (module under slurm_mlsched, attribute)`` from the ``if TYPE_CHECKING:``
    block of api/__init__.py."""
    tree = ast.parse(API_INIT.read_text())
    block = next(
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    out: dict[str, tuple[str, str]] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom) and node.module
        module = ("api." if node.level == 1 else "") + node.module
        for alias in node.names:
            out[alias.asname or alias.name] = (module, alias.name)
    return out


def test_every_stable_name_resolves_to_what_the_table_says() -> None:
    import importlib

    for name, (module, attribute) in api.EXPORTS.items():
        expected = getattr(importlib.import_module(f"slurm_mlsched.{module}"), attribute)
        assert getattr(api, name) is expected, name
    assert sorted(api.__all__) == sorted(api.EXPORTS)


def test_the_type_checkers_names_are_the_runtime_table() -> None:
    assert _type_checking_imports() == api.EXPORTS


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'plan_everything'"):
        api.plan_everything  # noqa: B018


def test_importing_the_api_loads_no_use_case() -> None:
    code = (
        "import sys; import slurm_mlsched.api; "
        "print(sorted(m for m in sys.modules if m.startswith(('slurm_mlsched.services', "
        "'sqlalchemy', 'paramiko', 'highspy', 'pulp'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"


def test_the_documented_example_runs(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    example = next(b for b in blocks if "api.plan(" in b and "api.replay(" in b)
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    script = tmp_path / "example.py"
    script.write_text(example)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "avg JCT (h):" in out.stdout and "predicted run time (s):" in out.stdout
