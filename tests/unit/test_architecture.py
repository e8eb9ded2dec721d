"""The pure core imports no adapter and does no I/O (STYLE.md habit 1, docs/architecture.md).

The core is ``slurm_mlsched/model/**``, ``slurm_mlsched/placement/**``,
``slurm_mlsched/sim/**`` (the replay engine) and ``slurm_mlsched/errors.py``. Its source
is read with :mod:`ast` (never imported) and every file must keep these rules:

1. no import of an adapter or use-case package of ours: ``slurm_mlsched.cli``,
   ``.services``, ``.files``, ``.storage``, ``.slurm``, ``.remote``, ``.sbatch``, ``.traces``,
   ``.config`` (absolute or relative, ``from .. import cli`` included);
2. no import of a module whose business is I/O: files, processes, sockets, databases,
   terminals, config files (:data:`IO_MODULES`);
3. ``time`` only for durations: ``time.perf_counter`` / ``time.perf_counter_ns`` (yu-rr's
   step timings); any other ``time.*`` (``time.time``, ``time.sleep``, …) is flagged;
4. no clock reading: calls of ``datetime.now`` / ``utcnow`` / ``today`` and
   ``date.today`` are flagged, however ``datetime`` was imported (``datetime`` itself is
   allowed: the snapshot's epoch is data);
5. no ``print``, ``open``, ``input`` and no dynamic import (``__import__``,
   ``importlib.import_module``), which would hide an import from rules 1–2.

The solver libraries (highspy, PuLP) are allowed: the solver runs in-process and is part
of the core by design. ``importlib.metadata`` (for the solver version stored with a
decision) is allowed too.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = "slurm_mlsched"
SRC = Path(__file__).resolve().parents[2] / PACKAGE

#: Packages of ours that the core must never import (adapters and use cases).
ADAPTER_PACKAGES = tuple(
    f"{PACKAGE}.{name}"
    for name in (
        "cli",
        "services",
        "files",
        "storage",
        "slurm",
        "remote",
        "sbatch",
        "traces",
        "config",
    )
)

#: Top-level modules whose business is I/O (stdlib, then third-party).
IO_MODULES = frozenset(
    {
        # stdlib: files, processes, sockets, terminals, databases
        "os",
        "sys",
        "pathlib",
        "shutil",
        "glob",
        "fileinput",
        "tempfile",
        "subprocess",
        "multiprocessing",
        "signal",
        "socket",
        "ssl",
        "select",
        "selectors",
        "asyncio",
        "http",
        "urllib",
        "ftplib",
        "smtplib",
        "webbrowser",
        "sqlite3",
        "dbm",
        "shelve",
        "mmap",
        "ctypes",
        # third-party: databases, SSH, HTTP, CLI/terminal, config files, Slurm bindings
        "sqlalchemy",
        "alembic",
        "paramiko",
        "fabric",
        "requests",
        "httpx",
        "urllib3",
        "aiohttp",
        "typer",
        "click",
        "rich",
        "yaml",
        "pyslurm",
    }
)

#: The only attributes of ``time`` the core may use: monotonic durations, never wall time.
TIME_ALLOWED = frozenset({"perf_counter", "perf_counter_ns"})

#: Calls that read the wall clock, by fully qualified name.
CLOCK_CALLS = frozenset(
    {
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
    }
)

#: Builtins that do I/O, and calls that import dynamically.
IO_BUILTINS = frozenset({"print", "open", "input"})
DYNAMIC_IMPORTS = frozenset({"__import__", "importlib.import_module"})


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.what}"


def module_name(path: Path, root: Path = SRC.parent) -> str:
    """``slurm_mlsched/placement/yu_rr/joint.py`` -> ``slurm_mlsched.placement.yu_rr.joint``."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    """The absolute module a ``from … import`` names (relative levels resolved)."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not is_package:
        base = base[:-1]  # a module's relative imports start from its package
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _forbidden_module(name: str) -> str | None:
    """Why importing ``name`` is not allowed in the core, or None."""
    for pkg in ADAPTER_PACKAGES:
        if name == pkg or name.startswith(pkg + "."):
            return f"adapter/use-case package {pkg}"
    top = name.split(".")[0]
    if top in IO_MODULES:
        return f"I/O module {top}"
    return None


class _Walker(ast.NodeVisitor):
    def __init__(self, path: str, module: str, is_package: bool) -> None:
        self.path, self.module, self.is_package = path, module, is_package
        self.aliases: dict[str, str] = {}  # local name -> fully qualified name
        self.found: list[Violation] = []

    def flag(self, node: ast.AST, what: str) -> None:
        self.found.append(Violation(self.path, getattr(node, "lineno", 0), what))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            why = _forbidden_module(alias.name)
            if why:
                self.flag(node, f"imports {alias.name} ({why})")
            local = alias.asname or alias.name.split(".")[0]
            self.aliases[local] = alias.name if alias.asname else alias.name.split(".")[0]
        self.generic_visit(node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        source = _resolve_from(self.module, self.is_package, node)
        why = _forbidden_module(source)
        if why:
            self.flag(node, f"imports from {source} ({why})")
        for alias in node.names:
            full = f"{source}.{alias.name}"
            if not why:  # ``from .. import cli`` names the package in the alias
                sub = _forbidden_module(full) if source.startswith(PACKAGE) else None
                if sub:
                    self.flag(node, f"imports {full} ({sub})")
            if source == "time" and alias.name not in TIME_ALLOWED:
                self.flag(node, f"imports time.{alias.name} (only {sorted(TIME_ALLOWED)})")
            self.aliases[alias.asname or alias.name] = full
        self.generic_visit(node)

    def _qualified(self, node: ast.expr) -> str | None:
        """``dt.now`` -> ``datetime.datetime.now`` when ``dt`` aliases ``datetime.datetime``."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        head = self.aliases.get(node.id, node.id)
        return ".".join([head, *reversed(parts)])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        name = self._qualified(node) or ""
        root = node.value.id if isinstance(node.value, ast.Name) else None
        module, _, attr = name.partition(".")
        if root in self.aliases and module == "time" and attr not in TIME_ALLOWED:
            self.flag(node, f"uses {name} (time only for {sorted(TIME_ALLOWED)})")
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        name = self._qualified(node.func)
        if name in CLOCK_CALLS:
            self.flag(node, f"calls {name} (reads the wall clock)")
        if name in IO_BUILTINS and name not in self.aliases:
            self.flag(node, f"calls {name}() (I/O)")
        if name in DYNAMIC_IMPORTS:
            self.flag(node, f"calls {name} (dynamic import)")
        self.generic_visit(node)


def check_source(source: str, path: str, module: str, is_package: bool = False) -> list[Violation]:
    """Every rule broken by one file's source (pure: the source is parsed, never run)."""
    walker = _Walker(path, module, is_package)
    walker.visit(ast.parse(source, filename=path))
    return walker.found


def core_files() -> list[Path]:
    files = [p for pkg in ("model", "placement", "sim") for p in (SRC / pkg).rglob("*.py")]
    return sorted([*files, SRC / "errors.py"])


# --- the rule, applied to the real core -------------------------------------------------------


def test_core_file_list_is_what_we_think() -> None:
    names = {module_name(p) for p in core_files()}
    for expected in (
        "slurm_mlsched.errors",
        "slurm_mlsched.model",
        "slurm_mlsched.model.cluster",
        "slurm_mlsched.placement",
        "slurm_mlsched.placement.yu_rr.per_arrival",
        "slurm_mlsched.placement.program.integer_program",
        "slurm_mlsched.placement.program.highs_lp",
        "slurm_mlsched.placement.baselines.fifo",
        "slurm_mlsched.sim.engine",
        "slurm_mlsched.sim.metrics",
    ):
        assert expected in names, expected


def test_core_imports_no_adapter_and_does_no_io() -> None:
    problems: list[Violation] = []
    for path in core_files():
        rel = str(path.relative_to(SRC.parent))
        problems += check_source(
            path.read_text(encoding="utf-8"), rel, module_name(path), path.name == "__init__.py"
        )
    assert not problems, "the pure core breaks the architecture rules:\n" + "\n".join(
        str(p) for p in problems
    )


# --- the walker itself, on synthetic sources ------------------------------------------------

MODULE = "slurm_mlsched.placement.fake"  # a module inside the core


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import subprocess", "imports subprocess (I/O module subprocess)"),
        ("import os.path", "imports os.path (I/O module os)"),
        ("from pathlib import Path", "imports from pathlib (I/O module pathlib)"),
        ("import sqlalchemy.orm as orm", "imports sqlalchemy.orm (I/O module sqlalchemy)"),
        ("from ..cli import app", "imports from slurm_mlsched.cli (adapter/use-case package"),
        ("from .. import services", "imports slurm_mlsched.services (adapter/use-case"),
        (
            "from slurm_mlsched.files.cluster_file import load_cluster",
            "imports from slurm_mlsched.files.cluster_file (adapter/use-case package",
        ),
        ("import slurm_mlsched.storage", "imports slurm_mlsched.storage (adapter"),
        ("from ..config import load_config", "imports from slurm_mlsched.config (adapter"),
        ("from ..sbatch.render import render", "imports from slurm_mlsched.sbatch.render"),
        ("import time\nx = time.time()", "uses time.time (time only for"),
        ("import time as t\nt.sleep(1)", "uses time.sleep (time only for"),
        ("from time import monotonic", "imports time.monotonic (only"),
        ("from datetime import datetime\nx = datetime.now()", "calls datetime.datetime.now"),
        ("import datetime\nx = datetime.datetime.utcnow()", "calls datetime.datetime.utcnow"),
        ("from datetime import date as d\nx = d.today()", "calls datetime.date.today"),
        ("print('hello')", "calls print() (I/O)"),
        ("open('f').read()", "calls open() (I/O)"),
        ("import importlib\nm = importlib.import_module('os')", "calls importlib.import_module"),
    ],
)
def test_walker_flags(source: str, expected: str) -> None:
    found = check_source(source, "slurm_mlsched/placement/fake.py", MODULE)
    assert found, f"not flagged: {source!r}"
    messages = [str(v) for v in found]
    assert any(expected in m for m in messages), messages
    assert all(m.startswith("slurm_mlsched/placement/fake.py:") for m in messages)


@pytest.mark.parametrize(
    "source",
    [
        "import numpy as np\nfrom scipy import sparse\nimport highspy\nimport pulp",
        "from ..model import ClusterSnapshot\nfrom ..errors import InputError\nfrom . import x",
        "import time\nt0 = time.perf_counter()",
        "from time import perf_counter\nt0 = perf_counter()",
        "from datetime import UTC, datetime, timedelta\nepoch = datetime(1970, 1, 1, tzinfo=UTC)",
        "from importlib import metadata\nv = metadata.version('highspy')",
        "def f(print):\n    return print",
        "time = 3\nx = time.real",  # a local named time, not the module
    ],
)
def test_walker_accepts(source: str) -> None:
    assert check_source(source, "slurm_mlsched/placement/fake.py", MODULE) == []


def test_walker_resolves_relative_imports_of_a_package_init() -> None:
    # in slurm_mlsched/placement/__init__.py, ``from .. import cli`` is slurm_mlsched.cli
    found = check_source("from .. import cli", "x/__init__.py", "slurm_mlsched.placement", True)
    assert [v.what for v in found] == [
        "imports slurm_mlsched.cli (adapter/use-case package slurm_mlsched.cli)"
    ]
    ok = check_source("from . import yu_rr", "x/__init__.py", "slurm_mlsched.placement", True)
    assert ok == []


def test_violation_message_names_file_line_and_import() -> None:
    found = check_source("x = 1\nimport socket\n", "slurm_mlsched/model/job.py", "m.model.job")
    assert [str(v) for v in found] == [
        "slurm_mlsched/model/job.py:2: imports socket (I/O module socket)"
    ]
