"""Decisions to store: real ``place()`` outputs on small clusters (pure data)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from slurm_mlsched.model import ClusterSnapshot
from slurm_mlsched.placement import PlacementParams, place
from slurm_mlsched.storage import NewDecision
from tests.conftest import make_cluster, make_job

EPOCH = datetime(2026, 3, 1, 10, 0, tzinfo=UTC)
NOW = EPOCH + timedelta(minutes=7, seconds=30)
PACKAGES = (("python", "3.11"), ("slurm-mlsched", "0.1.0"))


def snapshot(nodes: int = 2) -> ClusterSnapshot:
    return replace(make_cluster(nodes), epoch=EPOCH, slot_seconds=600.0)


def new_decision(
    job_id: str = "j1",
    *,
    snap: ClusterSnapshot | None = None,
    user: str = "alice",
    workers: int = 4,
    workload: float = 4000.0,
    seed: int = 0,
    created_at: datetime = NOW,
) -> NewDecision:
    snap = snap if snap is not None else snapshot()
    job = make_job(job_id, workers=workers, workload=workload, arrival=snap.now_slot)
    params = PlacementParams(seed=seed)
    decision = place(job, snap, "yu-rr", params)
    return NewDecision(
        request=job,
        snapshot=snap,
        params=params,
        decision=decision,
        user=user,
        host="login1",
        created_at=created_at,
        packages=PACKAGES,
    )
