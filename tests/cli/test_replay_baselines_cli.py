"""``mlsub replay --policy oasis|optimus|drf`` and ``mlsub policies`` list them (CliRunner)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from tests.conftest import replay_jobs_file

runner = CliRunner()
ENV = {"MLSUB_FIXED_NOW": "2026-03-01T10:00:00Z", "MLSUB_DEBUG": ""}


def invoke(*args: str | Path) -> Any:
    return runner.invoke(app, [str(a) for a in args], env=ENV)


def test_replay_runs_the_baselines(tmp_path: Path) -> None:
    path = replay_jobs_file(tmp_path)
    args = ["replay", path, "--nodes", "2x4", "--json", "--lp-max-jobs", "0"]
    for policy in ("oasis", "optimus", "drf"):
        args += ["-p", policy]
    result = invoke(*args)
    assert result.exit_code == 0, result.stderr
    printed = json.loads(result.stdout)
    assert set(printed["policies"]) == {"oasis", "optimus", "drf"}


def test_policies_lists_the_baselines() -> None:
    result = invoke("policies", "--json")
    assert result.exit_code == 0
    names = {p["name"]: p["summary"] for p in json.loads(result.stdout)}
    for name in ("oasis", "oasis-x0.5", "oasis-x2", "optimus", "drf"):
        assert names[name], name


def test_plan_refuses_a_reallocating_policy(tmp_path: Path) -> None:
    cluster = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"
    job = ["--model", "resnet-50", "--workers", "2", "--batches-per-epoch", "500"]
    result = invoke("plan", "--cluster", cluster, *job, "--policy", "optimus")
    assert result.exit_code == 3
    assert "replay only" in result.stderr
