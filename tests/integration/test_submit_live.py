"""``mlsub train.py`` end to end against the real local Slurm cluster: the decision is
stored, the job runs exactly where it says, a second job is placed around the first, a job
on a full cluster waits for its decision's start, sbatch failures are recorded, and
``reconcile`` follows the jobs to their end."""

from __future__ import annotations

import json
import shlex
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import FINISHED, LabCluster, poll
from tests.integration.mlsub_cli import SMALL_TASKS, Mlsub, probe_script
from tests.task_probe import probe_results

pytestmark = pytest.mark.integration


@pytest.fixture
def mlsub(tmp_path: Path) -> Mlsub:
    return Mlsub(tmp_path)


def submit(mlsub: Mlsub, cluster: LabCluster, script: Path, *args: str) -> dict[str, Any]:
    """``mlsub SCRIPT … --json`` (the shorthand for submit); the job is cancelled after
    the test."""
    out: dict[str, Any] = mlsub.json(str(script), "--interpreter", sys.executable, *args)
    assert out["slurm_job_id"], out
    cluster.jobs.append(int(out["slurm_job_id"]))
    return out


def ran_as_decided(out: dict[str, Any], tasks_dir: Path) -> None:
    tasks = probe_results(tasks_dir)
    ran = Counter((t["node"], t["env"]["MLSCHED_ROLE"]) for t in tasks)
    decided = Counter({(p["node"], p["role"]): p["count"] for p in out["placement"]})
    assert ran == decided
    for task in tasks:
        env = task["env"]
        assert env["MLSCHED_DECISION_ID"] == str(out["decision_id"])
        placed = next(
            t for t in out["tasks"]
            if t["role"] == env["MLSCHED_ROLE"] and t["rank"] == int(env["MLSCHED_RANK"])
        )  # fmt: skip
        assert task["node"] == placed["node"]
        assert env["MLSCHED_PS_HOSTS"].count(":") == sum(
            1 for t in out["tasks"] if t["role"] == "ps"
        )


@pytest.mark.parametrize(
    ("shape", "mode"),
    [
        ("--workers 2 --batches-per-epoch 100", "colocated"),
        # a worker needs a whole node's 4 GPUs: two of them are on two nodes
        ("--workers 2 --gpus-per-worker 4 --batches-per-epoch 10000", "distributed"),
    ],
)
def test_submitted_job_runs_where_its_stored_decision_says(
    mlsub: Mlsub, cluster: LabCluster, tmp_path: Path, shape: str, mode: str
) -> None:
    script = probe_script(tmp_path / "probe.py", f"{SMALL_TASKS} {shape}")
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    out = submit(mlsub, cluster, script, "--", str(tasks))
    assert out["mode"] == mode, out["placement"]
    assert len({p["node"] for p in out["placement"]}) == (1 if mode == "colocated" else 2)
    assert out["state"] == "submitted" and out["begin"] is None
    assert out["tag"].startswith(f"mlsched:decision={out['decision_id']}:")
    states = cluster.wait_finished(int(out["slurm_job_id"]))
    assert set(states) == {"COMPLETED"}, tmp_path / f"mlsub-{out['decision_id']}-*.out"
    ran_as_decided(out, tasks)

    shown = mlsub.json("show", str(out["decision_id"]))
    assert shown["slurm_job_id"] == out["slurm_job_id"] and shown["script"] == out["script"]
    assert [t["state"] for t in shown["transitions"]] == ["submitting", "submitted"]
    report = mlsub.json("reconcile")
    (row,) = report["decisions"]
    assert (row["before"], row["after"]) == ("submitted", "completed")
    history = mlsub.json("history")
    assert [(h["decision_id"], h["state"], h["slurm_job_id"]) for h in history] == [
        (out["decision_id"], "completed", out["slurm_job_id"])
    ]
    assert history[0]["placement"] == out["placement"]
    steps = [t["state"] for t in mlsub.json("show", str(out["decision_id"]))["transitions"]]
    assert steps == ["submitting", "submitted", "running", "completed"]


def test_second_job_is_placed_around_the_first_while_it_runs(
    mlsub: Mlsub, cluster: LabCluster, tmp_path: Path
) -> None:
    # 4 workers x 1 GPU fill one node's GPUs; predicted to run ~2.5 minutes
    shape = f"{SMALL_TASKS} --workers 4 --step-time 0.5 --batches-per-epoch 1200"
    script = probe_script(tmp_path / "probe.py", shape)
    first_dir, second_dir = tmp_path / "first", tmp_path / "second"
    first_dir.mkdir()
    second_dir.mkdir()
    first = submit(mlsub, cluster, script, "--", str(first_dir), "120")
    cluster.wait_running(int(first["slurm_job_id"]))
    # mlsub cluster shows the running job once: through its decision's reservation
    view = mlsub.json("cluster")
    held = {r["job_id"] for r in view["reservations"]}
    assert f"mlsub-{first['decision_id']}" in held
    assert not any(j.split("+")[0] == first["slurm_job_id"] for j in held)
    second = submit(mlsub, cluster, script, "--", str(second_dir), "120")
    used_first = {p["node"] for p in first["placement"]}
    used_second = {p["node"] for p in second["placement"]}
    assert first["mode"] == second["mode"] == "colocated"
    assert used_first.isdisjoint(used_second), (first["placement"], second["placement"])
    assert second["begin"] is None  # it runs now, beside the first
    cluster.wait_running(int(second["slurm_job_id"]))
    assert cluster.states(int(first["slurm_job_id"])) == ["RUNNING"]  # both at once
    poll(
        "both jobs' tasks",
        lambda: len(probe_results(first_dir)) == len(probe_results(second_dir)) == 5,
    )
    ran_as_decided(first, first_dir)
    ran_as_decided(second, second_dir)
    # the second decision saw the first one's reservation in its snapshot
    assert mlsub.json("show", str(second["decision_id"]))["cluster_snapshot"]["reservations"] >= 1


#: A plain sbatch job holding a whole node's GPUs; Slurm expects it to end after 1 minute.
FILL = ("-J", "mlsched-it-fill", "-n", "1", "--gres=gpu:4", "--mem=1G", "-t", "1")


def test_job_on_a_full_cluster_waits_held_until_a_replan_starts_it(
    mlsub: Mlsub, cluster: LabCluster, tmp_path: Path
) -> None:
    """Late binding (issue 19): a job that cannot start now waits held in Slurm, holding
    nothing, until a re-plan (here `mlsub replan` run as the periodic safety net would;
    the epilog's trigger: tests/integration/test_queue_live.py) finds room."""
    # plain sbatch jobs (not mlsub's) hold every GPU; Slurm expects them to end after 1 min;
    # they end when the test creates `release` (at most 55 s), not on a timer that a slow
    # machine could outrun before the "no room yet" check
    release = tmp_path / "release-blockers"
    wait = f"for _ in $(seq 55); do [ -e {shlex.quote(str(release))} ] && exit 0; sleep 1; done"
    blockers = [
        cluster.sbatch(*FILL, "-w", node, "-o", "/dev/null", "--wrap", wait)
        for node in ("node1", "node2", "node3", "node4")
    ]
    for job in blockers:
        cluster.wait_running(job)
    script = probe_script(
        tmp_path / "probe.py", f"{SMALL_TASKS} --workers 1 --batches-per-epoch 100"
    )
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    out = submit(mlsub, cluster, script, "--", str(tasks))
    assert out["waits"] and out["state"] == "queued" and out["begin"] is None, out
    assert out["start_slot"] > out["cluster"]["now_slot"]  # the estimate: after the blockers
    held = cluster.slurm.run(["squeue", "-h", "-j", out["slurm_job_id"], "-o", "%T|%r"])
    assert held.strip() == "PENDING|JobHeldUser", held
    assert mlsub.json("replan")["started"] == []  # no room yet: it keeps waiting
    release.touch()  # the blockers end

    def started() -> dict[str, Any] | None:
        report = mlsub.json("replan")
        return next(iter(report["started"]), None)

    start = poll("a re-plan to start the queued job", started, 120, every=2)
    assert start["decision_id"] == out["decision_id"] and start["action"] != "failed"
    finished = [j for j in blockers if all(s in FINISHED for s in cluster.states(j))]
    assert finished, "started before any blocker ended"
    job = int(start["slurm_job_id"])
    cluster.jobs.append(job)
    cluster.wait_finished(job, timeout=180)
    mlsub.json("reconcile")
    shown = mlsub.json("show", str(out["decision_id"]))
    assert shown["state"] == "completed" and shown["slurm_job_id"] == str(job)
    states = [t["state"] for t in shown["transitions"]]
    assert states[:4] == ["submitting", "queued", "starting", "submitted"], states
    ran = Counter((t["node"], t["env"]["MLSCHED_ROLE"]) for t in probe_results(tasks))
    assert ran == Counter({(p["node"], p["role"]): p["count"] for p in shown["placement"]})


def test_sbatch_rejection_is_recorded_as_submit_failed(
    mlsub: Mlsub, cluster: LabCluster, tmp_path: Path
) -> None:
    script = probe_script(
        tmp_path / "probe.py", f"{SMALL_TASKS} --workers 1 --batches-per-epoch 10"
    )
    mlsub.extra_env["SBATCH_RESERVATION"] = "no-such-reservation"  # sbatch refuses it
    proc = mlsub.run(str(script), "--interpreter", sys.executable, check=False)
    assert proc.returncode == 6, proc.stderr
    assert "submit-failed" in proc.stderr and "reservation" in proc.stderr.lower()
    (row,) = mlsub.json("history")
    assert row["state"] == "submit-failed" and row["slurm_job_id"] is None
    shown = mlsub.json("show", str(row["decision_id"]))
    assert "reservation" in shown["transitions"][-1]["detail"].lower()
    assert shown["script"]  # the script it tried to submit is kept


def test_unknown_partition_is_an_input_error_and_records_nothing(
    mlsub: Mlsub, cluster: LabCluster, tmp_path: Path
) -> None:
    script = probe_script(
        tmp_path / "probe.py", f"{SMALL_TASKS} --workers 1 --batches-per-epoch 10"
    )
    proc = mlsub.run(str(script), "--partition", "no-such-partition", check=False)
    assert proc.returncode == 3, proc.stderr
    assert "unknown partition 'no-such-partition'" in proc.stderr and "debug" in proc.stderr
    assert mlsub.json("history") == []


def test_plan_on_the_live_cluster_is_a_dry_run(
    mlsub: Mlsub, cluster: LabCluster, tmp_path: Path
) -> None:
    script = probe_script(
        tmp_path / "probe.py", f"{SMALL_TASKS} --workers 2 --batches-per-epoch 10"
    )
    out = mlsub.json("plan", str(script))
    assert out["decision_id"] is None and out["slurm_job_id"] is None
    assert "#SBATCH --nodelist=" in out["script"]
    assert out["cluster"]["source"].startswith("Slurm")
    assert mlsub.json("history") == []
    assert json.dumps(out)  # plain JSON
