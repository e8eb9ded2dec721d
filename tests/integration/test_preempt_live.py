"""Checkpoint-restart preemption on the real cluster (issue 28 item 3; docs/formulation.md
§16, "Live").

A long job that consents (examples/checkpoint_train.py: ``#SBATCH --signal=USR1@10``)
fills node1; two short jobs that may only use node1 wait held behind it. ``mlsub replan``
with the site's ``preempt`` on runs the replay's rule, which pauses the long job for the
first short one: Slurm delivers SIGUSR1 (the program writes its checkpoint), the job is
requeued held (squeue: pending, held, ``Restarts=1``), and the short job starts on the
node its decision names. Later re-plans start the second short job and then the long one
again, which resumes from its checkpoint and completes; accounting shows its requeued run
and its completed one, and the store's history each transition.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LabCluster, poll
from tests.integration.mlsub_cli import Mlsub, site_preempting
from tests.integration.test_queue_live import decision_nodes, idle, ran_on

pytestmark = pytest.mark.integration

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "checkpoint_train.py"
#: Every job here wants all four GPUs of a node and may only use node1.
WHOLE_NODE1 = ("--gpus-per-worker", "4", "--cpus-per-worker", "4", "--mem-per-worker", "4G")
LONG_STEPS = 1200  # 0.1 s each: 120 s of training, predicted so (Δ = 10 s: 12 slots)
SHORT_STEPS = 150  # 15 s


def script(workdir: Path) -> Path:
    """The example with two more #SBATCH lines: node1 only, and the log appended to when
    Slurm runs the requeued job again (so one file holds both runs)."""
    text = EXAMPLE.read_text().replace(
        "#SBATCH --signal=USR1@10\n",
        "#SBATCH --signal=USR1@10\n#SBATCH --nodelist=node1\n#SBATCH --open-mode=append\n",
    )
    assert "#SBATCH --nodelist=node1" in text
    path = workdir / "checkpoint_train.py"
    path.write_text(text)
    return path


def submit(mlsub: Mlsub, path: Path, name: str, steps: int) -> dict[str, Any]:
    out: dict[str, Any] = mlsub.json(
        str(path), "--name", name, "--output", str(mlsub.workdir / f"{name}.out"),
        *WHOLE_NODE1, "--batches-per-epoch", str(steps),
        "--", "--steps", str(steps), "--step-time", "0.1",
    )  # fmt: skip
    return out


def squeue(cluster: LabCluster, job: str, fmt: str) -> str:
    return cluster.slurm.run(["squeue", "-h", "-j", job, "-o", fmt]).strip()


def seconds_running(cluster: LabCluster, job: str) -> float:
    started = squeue(cluster, job, "%T|%S")
    state, _, start = started.partition("|")
    if state != "RUNNING":
        return 0.0
    return (datetime.now() - datetime.fromisoformat(start)).total_seconds()


def accounting(cluster: LabCluster, job: str) -> list[tuple[str, str, str, str]]:
    """(state, start, end, nodes) of every run of ``job`` (``-D``: requeued runs too)."""
    out = cluster.slurm.run(
        ["sacct", "-D", "-X", "-n", "-P", "-j", job, "-o", "State,Start,End,NodeList"]
    )
    return [tuple(line.split("|")) for line in out.splitlines() if line]  # type: ignore[misc]


def completes(
    cluster: LabCluster, mlsub: Mlsub, decision_id: int, job: str, timeout: float
) -> None:
    """The decision's restarted Slurm job ``job`` ends, and after a reconcile the decision
    reads completed."""
    cluster.wait_finished(int(job), timeout=timeout)
    mlsub.run("reconcile")
    final = mlsub.json("show", str(decision_id))
    assert final["state"] == "completed", final


def resumed_from_checkpoint(log: str, steps: int) -> None:
    """The example's log (both runs, ``--open-mode=append``): it wrote a checkpoint when
    signalled, resumed from one no earlier than that, and finished all ``steps``."""
    marks = [int(m) for m in re.findall(r"^checkpointed at step (\d+)/", log, re.M)]
    resumed = re.findall(r"^resumed from checkpoint \S+ at step (\d+)/", log, re.M)
    assert marks and resumed and int(resumed[0]) >= marks[0], log
    assert f"done: {steps} steps" in log, log


def states(shown: dict[str, Any]) -> list[str]:
    return [t["state"] for t in shown["transitions"]]


def test_a_long_job_is_checkpointed_requeued_held_and_resumed_for_short_ones(
    cluster: LabCluster, tmp_path: Path
) -> None:
    mlsub = Mlsub(tmp_path, slot_seconds=10, cluster_name="lab-preempt")
    preempting = site_preempting(mlsub, restart_s=None)
    idle(cluster)
    path = script(tmp_path)
    long = submit(mlsub, path, "long", LONG_STEPS)
    long_job = str(long["slurm_job_id"])
    cluster.jobs.append(int(long_job))
    assert long["state"] == "submitted" and not long["waits"], long
    assert {t["node"] for t in long["tasks"]} == {"node1"}
    # it must have run for more than a slot before a re-plan may pause it (§16)
    poll("the long job to run 15 s", lambda: seconds_running(cluster, long_job) > 15, 120)
    shorts = [submit(mlsub, path, f"short{k}", SHORT_STEPS) for k in (1, 2)]
    for s in shorts:
        cluster.jobs.append(int(s["slurm_job_id"]))
        assert s["state"] == "queued" and s["waits"], s  # a submission never preempts
    assert squeue(cluster, long_job, "%T") == "RUNNING"
    short_ids = {s["decision_id"] for s in shorts}

    # mlsub queue on the preempting site says what the next re-plan will do, and does none of it
    view = preempting.json("queue", "--all")
    shown = json.dumps(view, indent=1)
    assert view["preempting"] is True, shown
    (would,) = view["would_pause"]
    assert (would["decision_id"], would["kind"]) == (long["decision_id"], "pause"), shown
    assert would["for_decisions"] and set(would["for_decisions"]) <= short_ids, shown
    assert would["slurm_job_id"] == long_job and would["estimated_restart"] is not None, shown
    (first,) = view["would_start"]
    assert first["decision_id"] in would["for_decisions"], shown
    assert f"once it has paused decision {long['decision_id']}" in first["reason"], shown
    explained = preempting.json("explain", str(long["decision_id"]))
    assert explained["would_pause"]["for_decisions"] == would["for_decisions"], explained
    assert explained["why"][0].startswith("running: the next re-plan would pause it"), explained
    assert squeue(cluster, long_job, "%T") == "RUNNING"  # the view paused nothing
    assert mlsub.json("show", str(long["decision_id"]))["state"] in ("submitted", "running")

    report = preempting.json("replan")
    seen = squeue(cluster, long_job, "%T|%r")
    said = f"{json.dumps(report, indent=1)}\nsqueue: {seen}\n" + json.dumps(
        mlsub.json("show", str(long["decision_id"]))["transitions"], indent=1
    )
    (paused,) = report["preempted"]
    assert paused["decision_id"] == long["decision_id"] and paused["action"] == "requeued", said
    assert paused["signal"] == "USR1" and paused["waited_s"] == pytest.approx(10, abs=1.5)
    assert set(paused["for_decisions"]) <= short_ids and paused["for_decisions"]
    assert paused["net"] is True  # the default gain: the rollout's, net of the restart
    assert paused["gain_s"] > 0 and 0 < paused["work_done"] < LONG_STEPS
    started = [s for s in report["started"] if s["decision_id"] in short_ids]
    assert len(started) == 1, said
    assert started[0]["decision_id"] == first["decision_id"], said  # as the view said
    # Slurm: the long job was requeued and is held (a re-plan starts it again)
    assert squeue(cluster, long_job, "%T") == "PENDING"
    shown = cluster.slurm.run(["scontrol", "show", "job", long_job])
    assert "Restarts=1" in shown and "Priority=0" in shown, shown
    # and it had written its checkpoint on the signal before it was requeued
    log = tmp_path / "long.out"
    marks = [int(m) for m in re.findall(r"^checkpointed at step (\d+)/", log.read_text(), re.M)]
    assert marks and 0 < marks[0] < LONG_STEPS, log.read_text()
    after = mlsub.json("show", str(long["decision_id"]))
    assert after["state"] == "queued", after
    assert states(after)[-3:] == ["running", "preempting", "queued"], states(after)

    # the re-plans to come (the epilog or the safety net; here by hand, preemption still
    # on) start the second short job, then the long one again
    def long_runs_again() -> dict[str, Any] | None:
        preempting.run("replan")
        s = mlsub.json("show", str(long["decision_id"]))
        job = s["slurm_job_id"]
        if s["state"] in ("submitted", "running") and squeue(cluster, job, "%T") == "RUNNING":
            return s
        return None

    again = poll("the long job to run again", long_runs_again, timeout=300, every=3)
    job = str(again["slurm_job_id"])
    if job != long_job:
        cluster.jobs.append(int(job))  # re-submitted on a new layout (the held one cancelled)
    cluster.wait_finished(int(job), timeout=300)
    mlsub.run("reconcile")

    final = mlsub.json("show", str(long["decision_id"]))
    assert final["state"] == "completed", final
    path_states = states(final)
    k = path_states.index("preempting")
    assert path_states[k - 1 : k + 4] == [
        "running", "preempting", "queued", "starting", "submitted",
    ], path_states  # fmt: skip
    assert path_states.count("preempting") == 1 and path_states[-1] == "completed"
    text = log.read_text()
    resumed = re.findall(r"^resumed from checkpoint \S+ at step (\d+)/", text, re.M)
    assert resumed and int(resumed[0]) >= marks[0], text
    assert f"done: {LONG_STEPS} steps" in text, text
    # accounting: the requeued run, then the completed one, both on node1
    runs = accounting(cluster, long_job)
    assert runs[0][0] == "REQUEUED" and runs[0][3] == "node1", runs
    requeued_at = datetime.fromisoformat(runs[0][2])
    if job == long_job:
        assert runs[-1][0] == "COMPLETED" and runs[-1][3] == "node1", runs
    # both short jobs ran on the nodes their decisions name, after the long one left
    for s in shorts:
        ended = poll(
            f"decision {s['decision_id']} to complete",
            lambda s=s: (
                (x := mlsub.json("show", str(s["decision_id"])))["state"] == "completed" and x
            ),
            120,
        )
        assert ran_on(cluster, ended["slurm_job_id"]) == decision_nodes(ended) == {"node1"}
        ((_, start, _, _),) = [r for r in accounting(cluster, ended["slurm_job_id"])]
        assert datetime.fromisoformat(start) >= requeued_at, (start, requeued_at)


def test_with_resize_a_job_starts_narrow_and_is_restarted_wider_when_the_room_frees(
    cluster: LabCluster, tmp_path: Path
) -> None:
    """The site's ``preempt_resize`` on the real cluster (docs/formulation.md §16, "Live"):
    B holds 2 of node1's 4 GPUs for about 40 s; N (4 one-GPU workers, node1 only,
    consents) waits for all 4. ``mlsub replan`` starts N now on the 2 GPUs left (the
    replay's rule: narrow now and grown at B's end ends sooner than waiting); when B has
    ended, a re-plan — nothing waits then — pauses N (a resize: checkpoint signal,
    requeue held) and submits it again on all 4 GPUs of node1; it resumes from its
    checkpoint and completes. Δ = 5 s and the site's restart cost 5 s (one slot)."""
    mlsub = Mlsub(tmp_path, slot_seconds=5, cluster_name="lab-resize")
    resizing = site_preempting(mlsub, resize=True)
    idle(cluster)
    path = script(tmp_path)
    one_gpu = ("--gpus-per-worker", "1", "--cpus-per-worker", "1", "--mem-per-worker", "1G")

    def submit_workers(name: str, workers: int, steps: int, batches: int) -> dict[str, Any]:
        out: dict[str, Any] = mlsub.json(
            str(path), "--name", name, "--output", str(tmp_path / f"{name}.out"),
            "--workers", str(workers), *one_gpu, "--batches-per-epoch", str(batches),
            "--", "--steps", str(steps), "--step-time", "0.1",
        )  # fmt: skip
        cluster.jobs.append(int(out["slurm_job_id"]))
        return out

    # B: 2 workers, 40 s (predicted 800 batches: 8 slots); N: predicted 12 slots at 4
    # workers (24 at 2: it waits for B's end), each of its ranks trains 80 s (so its
    # narrow run is still running well after B's end, when the re-plan grows it)
    b = submit_workers("b", 2, 400, 800)
    assert b["state"] == "submitted" and not b["waits"], b
    n = submit_workers("n", 4, 800, 2400)
    assert n["state"] == "queued" and n["waits"], n  # a submission never resizes
    first = resizing.json("replan")
    shown = mlsub.json("show", str(n["decision_id"]))
    said = f"{json.dumps(first, indent=1)}\n{json.dumps(shown, indent=1)}"
    assert [s["decision_id"] for s in first["started"]] == [n["decision_id"]], said
    assert first["preempted"] == [], said
    workers = [p for p in shown["placement"] if p["role"] == "worker"]
    assert [(p["node"], p["count"]) for p in workers] == [("node1", 2)], said
    narrow_job = str(shown["slurm_job_id"])
    cluster.jobs.append(int(narrow_job))
    poll("N to run narrow", lambda: squeue(cluster, narrow_job, "%T") == "RUNNING", 60)
    cluster.wait_finished(int(b["slurm_job_id"]), timeout=120)

    def grown() -> dict[str, Any] | None:
        report = resizing.json("replan")
        return report if report["preempted"] else None

    report = poll("a re-plan to resize N", grown, timeout=60, every=3)
    said = json.dumps(report, indent=1)
    (paused,) = report["preempted"]
    assert paused["decision_id"] == n["decision_id"] and paused["action"] == "requeued", said
    assert paused["for_decisions"] == [] and paused["gain_s"] > paused["cost_s"], said
    assert paused["net"] is False, said  # a grow: its own end sooner, against the cost
    assert [s["decision_id"] for s in report["started"]] == [n["decision_id"]], said
    after = mlsub.json("show", str(n["decision_id"]))
    said += "\n" + json.dumps(after, indent=1)
    moved = [t for t in after["transitions"] if t["state"] == "preempting"]
    assert len(moved) == 1 and moved[0]["detail"].startswith("replan: resized"), said
    workers = [p for p in after["placement"] if p["role"] == "worker"]
    assert [(p["node"], p["count"]) for p in workers] == [("node1", 4)], said
    wide_job = str(after["slurm_job_id"])
    assert wide_job != narrow_job, said  # a new layout: submitted again, the held one cancelled
    cluster.jobs.append(int(wide_job))
    completes(cluster, mlsub, n["decision_id"], wide_job, timeout=180)
    assert ran_on(cluster, wide_job) == {"node1"}
    log = (tmp_path / "n.out").read_text()
    assert re.search(r"^resumed from checkpoint \S+ at step \d+/", log, re.M), log
    assert accounting(cluster, narrow_job)[0][0] == "REQUEUED", accounting(cluster, narrow_job)
