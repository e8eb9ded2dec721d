"""What the decision-store CLI tests share (tests/cli/test_store_cli.py and
tests/cli/test_golden_decisions.py): a real SQLite store in the test's directory at a fixed
clock (:func:`store_env`, the ``env`` fixture of tests/cli/conftest.py), the commands
through Typer's CliRunner, the example cluster and a busy copy of it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from slurm_mlsched.cli.app import app

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = ROOT / "examples" / "cluster.yaml"
SCRIPT = ROOT / "examples" / "train_resnet.py"
NOW = "2026-03-01T10:07:30Z"

runner = CliRunner()


def store_env(tmp_path: Path) -> dict[str, str]:
    """The environment of one test's commands: its own SQLite store, config directory and
    fixed clock; no admins, no user switch."""
    return {
        "MLSUB_FIXED_NOW": NOW,
        "MLSUB_DEBUG": "",
        "MLSUB_DB_URL": f"sqlite:///{tmp_path / 'decisions.db'}",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "MLSUB_AS_USER": "",
        "MLSUB_ADMINS": "",
    }


def run(env: dict[str, str], *args: str | Path, **extra: str) -> Any:
    return runner.invoke(app, [str(a) for a in args], env={**env, **extra})


def ok_json(env: dict[str, str], *args: str | Path, **extra: str) -> Any:
    result = run(env, *args, "--json", **extra)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def busy_cluster(tmp_path: Path) -> Path:
    """The example cluster with two GPUs of every node held for the next 3 slots: the
    example job's fastest shape (4 workers co-located) does not fit now, so its decision
    goes through LP + rounding + repair rather than the exact fast path."""
    path = tmp_path / "busy.yaml"
    rows = "".join(
        f"  - {{node: node{i}, start: 0, end: 3, gpus: 2, cpus: 2, mem_gb: 8, job_id: 'b{i}'}}\n"
        for i in range(1, 5)
    )
    path.write_text(CLUSTER.read_text() + "reservations:\n" + rows)
    return path
