"""The live cluster as a snapshot (pure): capacity, reservations until each job's end,
excluded nodes, and the ``mlsub cluster --json`` shape."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from slurm_mlsched.model import Reservation, Resources
from slurm_mlsched.services.cluster_state import (
    CLUSTER_SCHEMA_VERSION,
    UNKNOWN_END_HORIZON,
    build_cluster_state,
)
from slurm_mlsched.slurm.nodes import NodeState
from slurm_mlsched.slurm.parse import JobRecord, NodeAllocation, NodeRecord

NOW = datetime(2026, 11, 29, 17, 3, 20, tzinfo=UTC)
EPOCH = datetime(2026, 11, 29, 17, 3, tzinfo=UTC)  # NOW floored to the 60 s slot


def node(name: str, state: str = "IDLE", flags: frozenset[str] = frozenset()) -> NodeRecord:
    return NodeRecord(name, state, flags, 8, 65536.0, 4, address="127.0.0.1")


def job(job_id: str, *allocs: NodeAllocation, end: datetime | None) -> JobRecord:
    return JobRecord(job_id, "j", "RUNNING", allocs, end_time=end)


STATE = NodeState(
    nodes=(node("n1", "MIXED"), node("n2", "IDLE", frozenset({"DRAIN"})), node("n3")),
    jobs=(
        job("10", NodeAllocation("n1", 2, 4096.0, 2), end=NOW + timedelta(seconds=560)),
        job("11+0", NodeAllocation("n1", 1, 1024.0, 0), end=None),
        job("12", NodeAllocation("n2", 8, 1024.0, 1), end=NOW + timedelta(minutes=5)),
        job("13", NodeAllocation("n3", 1, 512.0, 0), end=NOW - timedelta(minutes=3)),
    ),
    source="test",
    slurm_version="22.05.8",
)


def test_usable_nodes_become_machines_with_their_configured_capacity() -> None:
    state = build_cluster_state(STATE, now=NOW, slot_seconds=60)
    snap = state.snapshot
    assert [m.name for m in snap.machines] == ["n1", "n3"]
    assert all(m.capacity == Resources(4, 8, 65536) for m in snap.machines)
    assert (snap.epoch, snap.now_slot, snap.slot_seconds) == (EPOCH, 0, 60)
    (excluded,) = state.excluded
    assert (excluded.record.name, excluded.reason) == ("n2", "drained")


def test_running_jobs_hold_their_nodes_until_their_expected_end() -> None:
    snap = build_cluster_state(STATE, now=NOW, slot_seconds=60).snapshot
    res = {r.job_id: r for r in snap.reservations}
    assert set(res) == {"10", "11+0", "13"}  # job 12 is on the drained node
    # job 10 ends at NOW + 560 s = EPOCH + 580 s: it holds slots 0..9, end slot 10
    assert res["10"] == Reservation("n1", 0, 10, Resources(2, 2, 4096), "10")
    horizon = (NOW + UNKNOWN_END_HORIZON - EPOCH).total_seconds() / 60
    assert res["11+0"].end_slot == int(horizon) + 1  # no time limit: Slurm's 365 days
    assert res["13"].end_slot == 1  # past its end but still there: it holds the slot now


def test_free_now_per_node_and_in_total() -> None:
    state = build_cluster_state(STATE, now=NOW, slot_seconds=60)
    views = {v.record.name: v for v in state.nodes}
    assert views["n1"].free_now == Resources(2, 5, 65536 - 5120)
    assert views["n1"].jobs == ("10", "11+0")
    assert views["n2"].used_now == Resources(1, 8, 1024)  # shown, though excluded
    data = state.to_json()
    assert data["capacity"] == {"gpus": 8.0, "cpus": 16.0, "mem_mib": 131072.0}
    assert data["free_now"] == {"gpus": 6.0, "cpus": 12.0, "mem_mib": 131072.0 - 5632}


def test_extra_reservations_only_on_usable_nodes() -> None:
    extra = (
        Reservation("n3", 2, 5, Resources(1, 1, 1), "d7"),
        Reservation("n2", 0, 1, Resources()),
    )
    snap = build_cluster_state(STATE, now=NOW, slot_seconds=60, extra=extra).snapshot
    assert [r.job_id for r in snap.reservations if r.job_id == "d7"] == ["d7"]
    assert all(r.machine != "n2" for r in snap.reservations)


def test_json_shape() -> None:
    data = build_cluster_state(STATE, now=NOW, slot_seconds=60).to_json()
    assert data["schema"] == CLUSTER_SCHEMA_VERSION
    assert data["now"] == NOW.isoformat() and data["epoch"] == EPOCH.isoformat()
    assert data["excluded"] == [{"name": "n2", "reason": "drained"}]
    n1 = data["nodes"][0]
    assert set(n1) == {
        "name", "state", "usable", "reason", "address", "gpu_type", "total", "used_now",
        "free_now", "jobs",
    }  # fmt: skip
    assert n1["state"] == "MIXED" and n1["usable"] and n1["reason"] is None
    assert n1["gpu_type"] is None  # untyped Gres=gpu:4
    job10 = data["jobs"][0]
    assert job10["end"] == (NOW + timedelta(seconds=560)).isoformat()
    assert job10["allocations"] == [{"node": "n1", "gpus": 2, "cpus": 2, "mem_mib": 4096.0}]
    assert data["reservations"][0] == {
        "node": "n1", "job_id": "10", "start_slot": 0, "end_slot": 10,
        "gpus": 2.0, "cpus": 2.0, "mem_mib": 4096.0,
    }  # fmt: skip


def test_a_typed_node_shows_its_gpu_type_and_becomes_a_typed_machine() -> None:
    typed = replace(node("t1"), gpu_type="t4")
    state = build_cluster_state(
        NodeState(nodes=(typed,), jobs=(), source="test"), now=NOW, slot_seconds=60
    )
    assert [m.gpu_type for m in state.snapshot.machines] == ["t4"]
    assert state.to_json()["nodes"][0]["gpu_type"] == "t4"
