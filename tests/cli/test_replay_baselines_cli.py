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


def test_a_job_no_even_spread_holds_is_replayed_by_every_policy(tmp_path: Path) -> None:
    # two CPU-only workers and a fixed count of two 4-CPU PSs on three 4-CPU nodes: no
    # even spread of the tasks fits; optimus and tiresias used to stall here, and the
    # replay ended in error[internal] (tests/sim/test_realloc.py has the layout)
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(
        "jobs:\n"
        "  - {id: j, submit: 0, workers: 2, model: resnet-50, workload: 107.54, ps: 2,\n"
        "     gpus_per_worker: 0, cpus_per_worker: 1, mem_per_worker: 1024,\n"
        "     cpus_per_ps: 4, mem_per_ps: 1024}\n"
    )
    cluster = tmp_path / "tiny.yaml"
    cluster.write_text(
        "slot_seconds: 60\ngroups:\n  - {prefix: m, count: 3, gpus: 1, cpus: 4, mem_gb: 16}\n"
    )
    args: list[str | Path] = ["replay", jobs, "--cluster", cluster, "--json"]
    for policy in ("optimus", "tiresias", "drf", "yu-rr"):
        args += ["-p", policy]
    result = invoke(*args)
    assert result.exit_code == 0, result.stderr
    printed = json.loads(result.stdout)
    assert set(printed["policies"]) == {"optimus", "tiresias", "drf", "yu-rr"}
    assert printed["unplaceable"] == 0
