"""Regather before the re-plan on the real cluster (the site's ``preempt_regather``;
docs/formulation.md §16, "Regather before the re-plan" and "Live").

On the lab's four 4-GPU nodes, through the real ``mlsub``: F1–F4 (3 one-GPU workers each,
planned for 50 min) hold 3 GPUs of each node, so A (4 one-GPU workers whose spread run is
twice as slow as co-located; it consents to checkpoint-restart) starts spread, one
worker a node: waiting for a node would take longer. W (4 workers, more work than A)
finds no GPU free and waits. F1 ends early (its program runs 20 s of the 50 min it was
planned for). ``mlsub replan`` with the site's ``preempt``, ``preempt_resize`` and
``preempt_regather`` decides A before the queue, since its work left is below W's: its
checkpoint signal, a requeue held, and the re-plan that follows starts A again on all
four GPUs of node1, its PS beside them (without the regather the queue's head, W, would
take node1 first). A resumes from its checkpoint and completes; accounting shows its
requeued run spread and its completed one on node1.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LabCluster
from tests.integration.mlsub_cli import Mlsub, site_preempting
from tests.integration.test_preempt_live import (
    accounting,
    completes,
    resumed_from_checkpoint,
    squeue,
)
from tests.integration.test_preempt_move_live import ONE_GPU, scripts, worker_nodes
from tests.integration.test_queue_live import idle, ran_on

pytestmark = pytest.mark.integration

#: A's speed: a step of 0.1 s, 50 MB of model over 1,000 MB/s inside a node and 250 MB/s
#: between nodes: 0.15 s a mini-batch co-located, 0.3 s spread; so four workers spread
#: beat one co-located, and four co-located beat four spread.
NETWORK = ("--model-size", "50", "--bw-in", "1000", "--bw-ex", "250")


def test_a_spread_job_ahead_of_the_queue_restarts_on_the_node_that_frees(
    cluster: LabCluster, tmp_path: Path
) -> None:
    mlsub = Mlsub(tmp_path, slot_seconds=5, cluster_name="lab-regather")
    gathering = site_preempting(mlsub, resize=True, regather=True)
    idle(cluster)
    consents, plain = scripts(tmp_path)

    def submit(
        script: Path, name: str, workers: int, planned: int, runs: int, *more: str
    ) -> dict[str, Any]:
        out: dict[str, Any] = mlsub.json(
            str(script), "--name", name, "--output", str(tmp_path / f"{name}.out"),
            "--workers", str(workers), *ONE_GPU, "--batches-per-epoch", str(planned), *more,
            "--", "--steps", str(runs), "--step-time", "0.1",
        )  # fmt: skip
        if out.get("slurm_job_id"):
            cluster.jobs.append(int(out["slurm_job_id"]))
        return out

    # planned 3,000 s each (30,000 steps of 0.1 s); F1's program stops after 20 s
    fs = [submit(plain, f"f{k}", 3, 30000, 200 if k == 1 else 30000) for k in range(1, 5)]
    said = json.dumps(fs, indent=1)
    assert [worker_nodes(f) for f in fs] == [{f"node{k}": 3} for k in range(1, 5)], said
    # A: 900 mini-batches, 34 s on 4 workers co-located, 68 s spread: it starts now,
    # spread (its program runs 90 s wherever it runs)
    a = submit(consents, "a", 4, 900, 900, *NETWORK)
    said = json.dumps(a, indent=1)
    assert a["state"] == "submitted" and not a["waits"], said
    assert worker_nodes(a) == {f"node{k}": 1 for k in range(1, 5)}, said
    cluster.wait_running(int(a["slurm_job_id"]))
    w = submit(plain, "w", 4, 20000, 20000)
    assert w["state"] == "queued" and w["waits"], json.dumps(w, indent=1)
    cluster.wait_finished(int(fs[0]["slurm_job_id"]), timeout=120)
    a_job = str(a["slurm_job_id"])
    assert set(squeue(cluster, a_job, "%T").split()) == {"RUNNING"}  # each component

    report = gathering.json("replan")
    shown_a = mlsub.json("show", str(a["decision_id"]))
    said = json.dumps({"replan": report, "a": shown_a}, indent=1)
    (gathered,) = report["preempted"]
    assert gathered["decision_id"] == a["decision_id"] and gathered["action"] == "requeued", said
    assert gathered["regather"] is True and gathered["move"] is False, said
    assert gathered["for_decisions"] == [] and gathered["signal"] == "USR1", said
    pausing = [t for t in shown_a["transitions"] if t["state"] == "preempting"]
    assert len(pausing) == 1 and pausing[0]["detail"].startswith(
        "replan: resized to start again co-located on one node"
    ), said
    # the re-plan after the requeue started A on node1, workers and PS
    assert a["decision_id"] in {s["decision_id"] for s in report["started"]}, said
    assert worker_nodes(shown_a) == {"node1": 4}, said
    assert {p["node"] for p in shown_a["placement"]} == {"node1"}, said
    new_a = str(shown_a["slurm_job_id"])
    assert new_a != a_job, said  # a new layout: submitted again, the held one cancelled
    cluster.jobs.append(int(new_a))
    shown_w = mlsub.json("show", str(w["decision_id"]))
    if shown_w.get("slurm_job_id"):
        cluster.jobs.append(int(shown_w["slurm_job_id"]))
    if shown_w["state"] != "queued":  # W may start on what A left, never on node1
        assert "node1" not in {p["node"] for p in shown_w["placement"]}, shown_w
    completes(cluster, mlsub, a["decision_id"], new_a, timeout=240)
    assert ran_on(cluster, new_a) == {"node1"}
    resumed_from_checkpoint((tmp_path / "a.out").read_text(), 900)
    runs = accounting(cluster, a_job)
    # a spread run is a heterogeneous job: one requeued component a node
    requeued = {nodes for state, _, _, nodes in runs if state == "REQUEUED"}
    assert requeued == {f"node{k}" for k in range(1, 5)}, runs
