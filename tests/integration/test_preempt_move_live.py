"""Moves to a smaller node on the real cluster (the site's ``preempt_defrag``;
docs/formulation.md §16, "Moves to a smaller node" and "Live").

The module restarts the lab with ``SLURM_LAB_GPU_COUNTS="4 4 1 1"`` (node1 and node2 with
4 GPUs, node3 and node4 with 1) and puts the default back afterwards. Through the real
``mlsub``: D and C (one GPU each) fill the 1-GPU nodes, B the whole of node1, F three of
node2's GPUs; A (one GPU, consents to checkpoint-restart) takes node2's last. E (four
one-GPU workers beside a PS, whose spread run is four times slower than co-located) finds
no GPU free and waits. When C and F have ended, ``mlsub replan`` with the site's
``preempt`` and ``preempt_defrag`` moves A: its checkpoint signal, a requeue held, and the
re-plan that follows starts A again at once on node4 (the 1-GPU node C left) and E co-located on
node2. A resumes from its checkpoint and completes; accounting shows its requeued run on
node2 and its completed one on node4.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LabCluster, lab_restarted
from tests.integration.mlsub_cli import Mlsub, site_preempting
from tests.integration.test_preempt_live import (
    EXAMPLE,
    accounting,
    completes,
    resumed_from_checkpoint,
    squeue,
)
from tests.integration.test_queue_live import idle, ran_on

pytestmark = pytest.mark.integration

COUNTS = {"node1": 4, "node2": 4, "node3": 1, "node4": 1}
ONE_GPU = ("--gpus-per-worker", "1", "--cpus-per-worker", "1", "--mem-per-worker", "1G")
#: E's speed: a step of 0.1 s, 50 MB of model over 1,000 MB/s inside a node and 100 MB/s
#: between nodes: 0.15 s a mini-batch co-located, 0.6 s spread.
SLOW_NETWORK = ("--model-size", "50", "--bw-in", "1000", "--bw-ex", "100")


@pytest.fixture(scope="module")
def mixed_lab(lab_ready: None) -> Iterator[None]:
    """The lab with the GPU counts of ``COUNTS`` for this module; unless it had them
    already, the default (4 GPUs a node) is put back afterwards."""
    wanted = {n: (c, None) for n, c in COUNTS.items()}
    counts = " ".join(str(COUNTS[n]) for n in sorted(COUNTS))
    with lab_restarted(wanted, "nodes of 4 and 1 GPUs", SLURM_LAB_GPU_COUNTS=counts):
        yield


def scripts(workdir: Path) -> tuple[Path, Path]:
    """The example as it is (it consents: ``#SBATCH --signal=USR1@10``; its log appended
    to when Slurm runs it again) and without the signal line (it does not consent)."""
    text = EXAMPLE.read_text()
    assert "#SBATCH --signal=USR1@10\n" in text
    consents = workdir / "consents.py"
    consents.write_text(
        text.replace(
            "#SBATCH --signal=USR1@10\n", "#SBATCH --signal=USR1@10\n#SBATCH --open-mode=append\n"
        )
    )
    plain = workdir / "plain.py"
    plain.write_text(text.replace("#SBATCH --signal=USR1@10\n", ""))
    return consents, plain


def worker_nodes(shown: dict[str, Any]) -> dict[str, int]:
    return {p["node"]: p["count"] for p in shown["placement"] if p["role"] == "worker"}


def test_a_one_gpu_job_moves_to_a_one_gpu_node_so_a_wide_job_starts_co_located(
    mixed_lab: None, cluster: LabCluster, tmp_path: Path
) -> None:
    mlsub = Mlsub(tmp_path, slot_seconds=5, cluster_name="lab-move")
    moving = site_preempting(mlsub, defrag=True)
    idle(cluster)
    consents, plain = scripts(tmp_path)

    def submit(script: Path, name: str, workers: int, steps: int, *more: str) -> dict[str, Any]:
        out: dict[str, Any] = mlsub.json(
            str(script), "--name", name, "--output", str(tmp_path / f"{name}.out"),
            "--workers", str(workers), *ONE_GPU, "--batches-per-epoch", str(steps), *more,
            "--", "--steps", str(steps), "--step-time", "0.1",
        )  # fmt: skip
        if out.get("slurm_job_id"):
            cluster.jobs.append(int(out["slurm_job_id"]))
        return out

    d = submit(plain, "d", 1, 3000)  # 300 s: holds node3 throughout
    c = submit(plain, "c", 1, 200)  # 20 s on node4
    b = submit(plain, "b", 4, 3000)  # 300 s on all of node1
    f = submit(plain, "f", 3, 200)  # 20 s on 3 of node2's GPUs
    a = submit(consents, "a", 1, 700)  # 70 s on node2's last GPU
    said = json.dumps([d, c, b, f, a], indent=1)
    assert [worker_nodes(x) for x in (d, c, b, f, a)] == [
        {"node3": 1}, {"node4": 1}, {"node1": 4}, {"node2": 3}, {"node2": 1},
    ], said  # fmt: skip
    assert all(x["state"] == "submitted" and not x["waits"] for x in (d, c, b, f, a)), said
    cluster.wait_running(int(a["slurm_job_id"]))
    # E: 4 workers, 40 s co-located (160 s spread); no GPU is free now
    e = submit(plain, "e", 4, 400, *SLOW_NETWORK)
    assert e["state"] == "queued" and e["waits"], json.dumps(e, indent=1)  # never preempts
    for ends in (c, f):
        cluster.wait_finished(int(ends["slurm_job_id"]), timeout=120)
    a_job = str(a["slurm_job_id"])
    assert squeue(cluster, a_job, "%T") == "RUNNING"

    report = moving.json("replan")
    shown_a = mlsub.json("show", str(a["decision_id"]))
    shown_e = mlsub.json("show", str(e["decision_id"]))
    said = json.dumps({"replan": report, "a": shown_a, "e": shown_e}, indent=1)
    (moved,) = report["preempted"]
    assert moved["decision_id"] == a["decision_id"] and moved["action"] == "requeued", said
    assert moved["move"] is True and moved["for_decisions"] == [e["decision_id"]], said
    assert moved["signal"] == "USR1" and moved["gain_s"] > 0, said
    pausing = [t for t in shown_a["transitions"] if t["state"] == "preempting"]
    assert len(pausing) == 1 and pausing[0]["detail"].startswith(
        "replan: moved to a smaller node"
    ), said
    # the re-plan after the requeue started both: A on node4, E co-located on node2
    assert {s["decision_id"] for s in report["started"]} == {
        a["decision_id"], e["decision_id"],
    }, said  # fmt: skip
    assert worker_nodes(shown_a) == {"node4": 1}, said
    assert worker_nodes(shown_e) == {"node2": 4}, said
    assert {p["node"] for p in shown_e["placement"]} == {"node2"}, said  # its PS too
    new_a, e_job = str(shown_a["slurm_job_id"]), str(shown_e["slurm_job_id"])
    assert new_a != a_job, said  # a new layout: submitted again, the held one cancelled
    cluster.jobs.extend([int(new_a), int(e_job)])
    assert ran_on(cluster, e_job) == {"node2"}
    completes(cluster, mlsub, a["decision_id"], new_a, timeout=240)
    assert ran_on(cluster, new_a) == {"node4"}
    resumed_from_checkpoint((tmp_path / "a.out").read_text(), 700)
    runs = accounting(cluster, a_job)
    assert runs[0][0] == "REQUEUED" and runs[0][3] == "node2", runs
