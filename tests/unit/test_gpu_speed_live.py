"""GPU speed by type on the live path (docs/formulation.md §17.1), with the unit tests'
fakes for Slurm: the site's table reaches the live snapshot, a new job is planned and
stored at its type's speed, and a calibration fit divides the speed out."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from slurm_mlsched.files.job_options import JobOptions, merge_options
from slurm_mlsched.services.calibrate import calibrate
from slurm_mlsched.services.live_queue import LiveWiring
from slurm_mlsched.services.submit import submit_job
from slurm_mlsched.slurm.parse import NodeRecord
from slurm_mlsched.storage import DecisionState, SqlDecisionStore, open_store
from tests.unit.test_submit_service import JOB, NOW, FakeSource, FakeSubmitter, wiring

TABLE = (("a100", 2.0), ("t4", 0.5))
NODES = tuple(
    NodeRecord(name, "IDLE", frozenset(), 8, 65536.0, 4, address="127.0.0.1",
               partitions=("debug",), gpu_type=kind)
    for name, kind in (("fast1", "a100"), ("slow1", "t4"))
)  # fmt: skip


@pytest.fixture
def store(tmp_path: Path) -> SqlDecisionStore:
    return open_store(f"sqlite:///{tmp_path / 'd.db'}", grace_s=0.0)


def typed_wiring(store: SqlDecisionStore, table: tuple[tuple[str, float], ...]) -> LiveWiring:
    return replace(wiring(store, FakeSource(nodes=NODES), FakeSubmitter()), gpu_speed=table)


def job(kind: str | None) -> JobOptions:
    base: dict[str, object] = {
        "workers": 2, "gpus_per_worker": 1, "cpus_per_worker": 1, "mem_per_worker": "1G",
        "cpus_per_ps": 1, "mem_per_ps": "1G", "model": "resnet-50", "epochs": 1,
        "batches_per_epoch": 2000,
    }  # fmt: skip
    if kind is not None:
        base["gpu_type"] = kind
    return merge_options([], base)


def test_a_submitted_job_is_planned_and_stored_at_its_types_speed(
    store: SqlDecisionStore,
) -> None:
    plain = submit_job(typed_wiring(store, ()), job("a100"), JOB)
    fast = submit_job(typed_wiring(store, TABLE), job("a100"), JOB)
    assert plain.plan.request.gpu_speed == 1.0 and fast.plan.request.gpu_speed == 2.0
    assert fast.plan.predicted_runtime_s == pytest.approx(plain.plan.predicted_runtime_s / 2)
    assert fast.record is not None
    rec = store.get(fast.record.decision_id)
    assert rec.request == fast.plan.request  # the factor is stored with the decision
    assert {m.name: m.gpu_speed for m in rec.snapshot.machines} == {"fast1": 2.0, "slow1": 0.5}
    either = submit_job(typed_wiring(store, TABLE), job(None), JOB)
    assert either.plan.request.gpu_speed == 0.5  # no type named: the slowest node's


def test_calibration_divides_the_gpu_speed_out(store: SqlDecisionStore) -> None:
    """Runs on A100s that take exactly the time their plans predicted at ×2 fit the profile
    itself (factor 1): the speed is the type's, not the model's."""
    for k in range(5):
        out = submit_job(typed_wiring(store, TABLE), job("a100"), JOB)
        assert out.record is not None
        start = NOW + timedelta(hours=k)
        store.transition(out.record.decision_id, DecisionState.RUNNING, start, "slurm: running")
        end = start + timedelta(seconds=out.plan.predicted_runtime_s)
        store.transition(out.record.decision_id, DecisionState.COMPLETED, end)
    (fit,) = calibrate(store, cluster_name="lab", now=NOW, by="root").fits
    assert fit.samples == 5 and fit.factor == pytest.approx(1.0, rel=1e-6)
