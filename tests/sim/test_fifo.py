"""fifo-ff and fifo-bf on small hand-checked scenarios (placement/baselines/fifo.py).

The worked numbers: RESNET's co-located rate ν_in = 600 / θ_in and distributed rate
ν_ex = 600 / θ_ex per worker and slot (Δ = 600 s); workloads below are whole multiples
of them, so run lengths are exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from slurm_mlsched.errors import NeverFitsError
from slurm_mlsched.model import ClusterSnapshot, Form, Mode, Reservation, Resources
from slurm_mlsched.placement import PlacementParams, place
from slurm_mlsched.placement.baselines.fifo import block_first_fit
from slurm_mlsched.placement.baselines.timeline import Timeline
from slurm_mlsched.placement.program.verify import check_decision
from slurm_mlsched.sim import SimJob, admit, simulate
from slurm_mlsched.sim.check import capacity_violations
from tests.conftest import RESNET, make_cluster, make_job

NU_IN = RESNET.nu_in(600.0)
NU_EX = RESNET.nu_ex(600.0)
WORKER = Resources(1, 1, 8192)
PS = Resources(0, 1, 4096)


def cluster2() -> ClusterSnapshot:
    """Two nodes of 4 GPUs, 16 CPUs, 64 GiB."""
    return make_cluster(2, gpus=4, cpus=16, mem=65536)


def at(job_id: str, slot: int, workers: int, workload: float) -> SimJob:
    job = make_job(job_id, workers=workers, workload=workload, arrival=slot)
    return SimJob(job, slot * 600.0)


def head_of_line() -> list[SimJob]:
    """A: 4 workers co-located for 10 slots from slot 0 (node1). B: 8 workers, arrives in
    slot 1, needs both nodes: it can only start when A ends (slot 10), for 2 slots. C: one
    worker for 3 slots, arrives in slot 2."""
    return [
        at("A", 0, 4, 4 * NU_IN * 10),
        at("B", 1, 8, 8 * NU_EX * 2),
        at("C", 2, 1, 1 * NU_IN * 3),
    ]


def runs(policy: str) -> dict[str, tuple[int, int, Mode]]:
    result = simulate(head_of_line(), cluster2(), policy, PlacementParams())
    assert not capacity_violations(result)
    return {d.job_id: (d.start_slot, d.end_slot, d.mode) for d in result.decisions}


def test_fifo_ff_big_job_at_the_head_blocks_a_small_later_job() -> None:
    got = runs("fifo-ff")
    assert got["A"] == (0, 9, Mode.COLOCATED)
    assert got["B"] == (10, 11, Mode.DISTRIBUTED)
    # C may not start before B (no overtaking); at slot 10 B holds every GPU
    assert got["C"] == (12, 14, Mode.COLOCATED)


def test_fifo_bf_backfills_the_small_job_without_delaying_the_head() -> None:
    got = runs("fifo-bf")
    assert got["A"] == (0, 9, Mode.COLOCATED)
    assert got["B"] == (10, 11, Mode.DISTRIBUTED)  # not delayed by C
    assert got["C"] == (2, 4, Mode.COLOCATED)  # in the hole on node2 before B


def test_fifo_bf_does_not_backfill_a_job_that_would_run_into_the_head_reservation() -> None:
    jobs = [*head_of_line()[:2], at("C", 2, 1, 1 * NU_IN * 9)]  # 9 slots: [2, 11) > 10
    result = simulate(jobs, cluster2(), "fifo-bf", PlacementParams())
    got = {d.job_id: (d.start_slot, d.end_slot) for d in result.decisions}
    assert got["B"] == (10, 11)
    assert got["C"] == (12, 20)


def test_layout_of_the_head_of_line_scenario() -> None:
    result = simulate(head_of_line(), cluster2(), "fifo-ff", PlacementParams())
    plans = {d.job_id: d.slots[0] for d in result.decisions}
    assert plans["A"].workers == (("node1", 4),) and plans["A"].ps == (("node1", 1),)
    # 8 workers fill node1 then node2; ps_needed(8) = 2 PSs follow the last worker
    assert plans["B"].workers == (("node1", 4), ("node2", 4))
    assert plans["B"].ps == (("node2", 2),)
    assert plans["C"].workers == (("node1", 1),) and plans["C"].ps == (("node1", 1),)


def test_fifo_ff_starts_never_decrease_in_arrival_order() -> None:
    rng = np.random.default_rng(4)
    jobs = [
        at(f"j{i:02d}", int(rng.integers(0, 12)), int(rng.choice([1, 2, 4, 8])), 2000.0)
        for i in range(30)
    ]
    result = simulate(jobs, cluster2(), "fifo-ff", PlacementParams())
    starts = [o.decision.start_slot for o in result.outcomes if o.decision]
    assert starts == sorted(starts)
    assert not capacity_violations(result)


def test_fifo_is_non_elastic_whatever_the_form_and_notes_it() -> None:
    job = make_job("j", workers=2, workload=1000.0)
    d = place(job, cluster2(), "fifo-bf", PlacementParams(form=Form.ELASTIC))
    assert d.form is Form.NON_ELASTIC and len(d.slots) == 1
    assert any("non-elastic" in n for n in d.notes)
    assert check_decision(d, job, cluster2()) == []
    assert d.solver == "first-fit" and d.timings_ms


def test_fifo_rejects_a_job_whose_workers_never_fit_at_once_but_yu_rr_runs_it() -> None:
    job = SimJob(make_job("wide", workers=12, workload=5000.0), 0.0)  # 12 GPUs > 8
    jobs, unplaceable = admit([job], cluster2())
    assert jobs and not unplaceable  # some placement exists (fewer workers)
    fifo = simulate(jobs, cluster2(), "fifo-ff", PlacementParams())
    assert [o.error.split(":")[0] for o in fifo.rejected] == ["never-fits"]
    with pytest.raises(NeverFitsError):
        place(job.request, cluster2(), "fifo-ff")
    yu = simulate(jobs, cluster2(), "yu-rr", PlacementParams())
    assert not yu.rejected and len(yu.decisions) == 1


def test_fcfs_floor_counts_the_snapshot_reservations() -> None:
    snap = cluster2().with_reservations((Reservation("node2", 5, 6, Resources(0, 1, 1), "x"),))
    job = make_job("j", workers=1, workload=NU_IN)
    assert place(job, snap, "fifo-ff").start_slot == 5  # not before a reservation's start
    assert place(job, snap, "fifo-bf").start_slot == 0


# --- the layout ------------------------------------------------------------------------------


def test_block_first_fit_fills_machines_in_order_workers_then_ps() -> None:
    room = np.array([[2, 16, 65536], [4, 16, 65536], [4, 16, 65536]], dtype=float)
    alpha, beta = np.array([1.0, 1.0, 8192.0]), np.array([0.0, 1.0, 4096.0])
    got = block_first_fit(room, alpha, 5, beta, 2)
    assert got is not None
    workers, ps = got
    assert workers.tolist() == [2, 3, 0] and ps.tolist() == [0, 2, 0]


def test_block_first_fit_passes_a_machine_that_cannot_take_the_next_task() -> None:
    # node 0 has CPU room for a PS but no GPU: the next task is a worker, so it takes nothing
    room = np.array([[0, 16, 65536], [4, 16, 65536]], dtype=float)
    alpha, beta = np.array([1.0, 1.0, 8192.0]), np.array([0.0, 1.0, 4096.0])
    got = block_first_fit(room, alpha, 1, beta, 1)
    assert got is not None
    assert got[0].tolist() == [0, 1] and got[1].tolist() == [0, 1]


def test_block_first_fit_none_when_a_task_finds_no_room() -> None:
    room = np.array([[1, 1, 8192]], dtype=float)
    alpha, beta = np.array([1.0, 1.0, 8192.0]), np.array([0.0, 1.0, 4096.0])
    assert block_first_fit(room, alpha, 1, beta, 1) is None
    assert block_first_fit(room, alpha, 2, beta, 0) is None


# --- the timeline ----------------------------------------------------------------------------


def brute_room(snap: ClusterSnapshot, start: int, stop: int) -> np.ndarray:
    names = [m.name for m in snap.machines]
    cap = np.array([m.capacity.as_tuple() for m in snap.machines])
    used = np.zeros((stop - start, len(names), 3))
    for r in snap.reservations:
        for t in range(max(r.start_slot, start), min(r.end_slot, stop)):
            used[t - start, names.index(r.machine)] += r.usage.as_tuple()
    out: np.ndarray = np.maximum(cap - used.max(axis=0), 0.0)
    return out


def test_timeline_room_and_total_room_match_brute_force() -> None:
    rng = np.random.default_rng(7)
    for _ in range(30):
        snap = make_cluster(3, gpus=8, cpus=32, mem=131072)
        res = []
        for k in range(int(rng.integers(0, 12))):
            s = int(rng.integers(0, 15))
            e = s + int(rng.integers(1, 6))
            use = Resources(float(rng.integers(0, 3)), float(rng.integers(0, 5)), 1024.0)
            res.append(Reservation(f"node{int(rng.integers(1, 4))}", s, e, use, f"r{k}"))
        snap = snap.with_reservations(tuple(res))
        t0 = int(rng.integers(0, 5))
        tl = Timeline.of(snap, t0)
        for _ in range(5):
            s = t0 + int(rng.integers(0, 12))
            length = int(rng.integers(1, 8))
            expect = brute_room(snap, s, s + length)
            assert np.allclose(tl.room(s, s + length), expect)
            total = tl.total_room(np.array([s]), length)[0]
            cap = np.array([m.capacity.as_tuple() for m in snap.machines]).sum(axis=0)
            used = np.zeros((length, 3))
            for r in snap.reservations:
                for t in range(max(r.start_slot, s), min(r.end_slot, s + length)):
                    used[t - s] += r.usage.as_tuple()
            assert np.allclose(total, cap - used.max(axis=0))
