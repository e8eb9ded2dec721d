"""Concurrency against the real cluster and both stores (issue 15): sixteen ``mlsub submit``
processes at once, then six ``mlsub reconcile`` at once.

CI saw one of the sixteen exit 7 ("database is locked" after the 30 s busy timeout) while
the others took their turns at the lock; a wait now goes on while the lock changes hands
(storage/database.py, "Waiting in line"), and a failure says how long each submit took.

Measured before the fix: 31 of 64 submits exited 3 (``decision 11 is running; it cannot
become submitted``), 7 of them with their job queued, because each submit's pre-submit
refresh moved neighbours' decisions ahead of their owners. Now every submit must exit 0
(the cluster has room for all sixteen: 16 GPUs, one per job), every decision must name
its own Slurm job (the tag in that job's comment), the decisions must never book a node
beyond its capacity at any moment, and concurrent reconciles must all exit 0.

The jobs sleep as long as they are predicted to run (90 s), so no reservation ends early
while the submits are still planning, and the capacity check on predicted intervals is
exact. The cluster fixture cancels them afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from slurm_mlsched.storage import open_store
from tests.integration.conftest import LabCluster
from tests.integration.mlsub_cli import Mlsub, probe_script
from tests.reliability_checks import node_capacity, overbookings
from tests.storage.postgres import postgres_server

pytestmark = pytest.mark.integration

SUBMITS = 16
RECONCILES = 6
#: One GPU worker and one PS per job; 0.05 s x 1800 batches = 90 s predicted.
SHAPE = (
    "--workers 1 --gpus-per-worker 1 --cpus-per-worker 1 --mem-per-worker 1G "
    "--cpus-per-ps 1 --mem-per-ps 512M --step-time 0.05 --model-size 1 "
    "--batches-per-epoch 1800"
)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
        return
    with postgres_server() as server:
        yield server.create_database("concurrent")


def test_sixteen_concurrent_submits_all_succeed_and_never_double_book(
    cluster: LabCluster, tmp_path: Path, store_url: str
) -> None:
    mlsub = Mlsub(tmp_path, extra_env={"MLSUB_DB_URL": store_url})
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    script = probe_script(tmp_path / "probe.py", SHAPE)

    took: dict[int, float] = {}

    def submit(k: int) -> subprocess.CompletedProcess[str]:
        (tasks / str(k)).mkdir()  # each job's tasks write their own files
        began = time.monotonic()
        try:
            return mlsub.run(
                str(script), "--interpreter", sys.executable, "--name", f"c{k}", "--json",
                "--", str(tasks / str(k)), "90",
                check=False, timeout=300,
            )  # fmt: skip
        finally:
            took[k] = time.monotonic() - began

    with ThreadPoolExecutor(SUBMITS) as pool:
        done = list(pool.map(submit, range(SUBMITS)))
    outs: list[dict[str, Any]] = []
    for proc in done:
        if proc.returncode == 0:
            out = json.loads(proc.stdout)
            cluster.jobs.append(int(out["slurm_job_id"]))
            outs.append(out)
    failed = [
        (p.returncode, f"{took[k]:.1f} s", p.stderr[-700:])
        for k, p in enumerate(done)
        if p.returncode != 0
    ]
    assert failed == [], failed
    assert all(o["warnings"] == [] for o in outs)

    # every decision names its own job, whose comment carries the decision's exact tag
    history = {h["decision_id"]: h for h in mlsub.json("history")}
    assert len(history) == SUBMITS
    queue = json.loads(cluster.slurm.run(["squeue", "--all", "--json"]))["jobs"]
    comment = {str(j["job_id"]): j.get("comment") or "" for j in queue}
    for out in outs:
        row = history[out["decision_id"]]
        assert row["slurm_job_id"] == out["slurm_job_id"]
        assert row["state"] in ("submitted", "running"), row
        assert out["tag"] in comment[out["slurm_job_id"]].split(), comment

    assert_never_double_booked(mlsub, store_url)

    def reconcile(_: int) -> subprocess.CompletedProcess[str]:
        return mlsub.run("reconcile", "--json", check=False, timeout=120)

    with ThreadPoolExecutor(RECONCILES) as pool:
        reconciled = list(pool.map(reconcile, range(RECONCILES)))
    assert [(p.returncode, p.stderr[-300:]) for p in reconciled if p.returncode] == []
    states = {h["decision_id"]: h["state"] for h in mlsub.json("history")}
    assert set(states.values()) <= {"submitted", "running"}, states


def assert_never_double_booked(mlsub: Mlsub, url: str) -> None:
    """At no moment does the sum of the decisions' predicted usage of a node exceed it
    (every decision's reservations in wall time, read from the store itself)."""
    capacity = node_capacity(mlsub.json("cluster"))
    store = open_store(url, grace_s=0)
    try:
        recs = [store.get(r.decision_id) for r in store.history()]
        assert any(rec.decision.reservations(rec.request) for rec in recs), "no reservations"
    finally:
        store.close()
    assert overbookings(url, capacity) == []
