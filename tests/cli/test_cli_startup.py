"""The CLI starts light (issue 16 item 1): importing it loads typer/click/rich and the
project's light modules only; every command imports its services, the store, the solver
and the renderers when it runs. Checked in a fresh interpreter, so nothing this test
process already imported hides a heavy import."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "sqlalchemy",
    "numpy",
    "scipy",
    "highspy",
    "pulp",
    "jinja2",
    "matplotlib",
    "paramiko",
    "alembic",
    "yaml",
)


def _loaded(statement: str) -> list[str]:
    code = (
        "import json, sys\n"
        f"{statement}\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return list(json.loads(out.stdout.strip().splitlines()[-1]))  # the command's output first


def test_importing_the_cli_loads_nothing_heavy() -> None:
    assert _loaded("import slurm_mlsched.cli.app") == []


def test_version_and_help_load_nothing_heavy() -> None:
    for argv in (["--version"], ["--help"], ["replay", "--help"], ["history", "--help"]):
        statement = (
            "from slurm_mlsched.cli.app import app\n"
            "try:\n"
            f"    app({argv!r}, standalone_mode=False)\n"
            "except SystemExit:\n"
            "    pass"
        )
        assert _loaded(statement) == [], argv


def test_the_heavy_modules_are_still_there_when_a_command_needs_them() -> None:
    # the check above would pass if the names were wrong: policies uses the registry
    statement = (
        "from slurm_mlsched.cli.app import app\n"
        "try:\n"
        "    app(['policies', '--json'], standalone_mode=False)\n"
        "except SystemExit:\n"
        "    pass"
    )
    assert "numpy" in _loaded(statement)
