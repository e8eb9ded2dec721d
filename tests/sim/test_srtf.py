"""``srtf``: clairvoyant shortest remaining time first, re-packed on machines at every event,
each change charged a restart."""

from __future__ import annotations

import numpy as np

from slurm_mlsched.model import Mode
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.baselines.reallocation import Allocation, RunningJob
from slurm_mlsched.placement.baselines.srtf import best_shape, reallocate_srtf, tightest_spread
from slurm_mlsched.placement.baselines.timeline import Timeline
from slurm_mlsched.sim import sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_cluster, make_job

DELTA = 600.0
NU = RESNET.nu_in(DELTA)


def test_the_shortest_job_runs_first_whatever_its_arrival() -> None:
    # A (3 slots) and B (1 slot) both need the whole node and arrive in the same slot:
    # B first, then A
    jobs = sim_jobs(
        [(make_job("A", workers=4, workload=NU * 4 * 3), 0.0),
         (make_job("B", workers=4, workload=NU * 4 * 1), 0.0)],
        DELTA,
    )  # fmt: skip
    result = simulate(jobs, make_cluster(1, 4, 16), "srtf", PlacementParams())
    a, b = result.decisions
    assert (b.start_slot, b.end_slot) == (0, 0) and (a.start_slot, a.end_slot) == (1, 3)
    assert capacity_violations(result) == [] and decision_problems(result) == []


def test_a_shorter_arrival_preempts_and_the_preempted_job_pays_its_restart() -> None:
    # A (6 slots) runs alone; B (2 slots) arrives at slot 2 with less left than A: A is
    # paused for B, resumes after it and pays the restart (300 s = half a slot)
    params = PlacementParams(restart_s=300.0)
    jobs = sim_jobs(
        [(make_job("A", workers=4, workload=NU * 4 * 6), 0.0),
         (make_job("B", workers=4, workload=NU * 4 * 2), 2 * DELTA)],
        DELTA,
    )  # fmt: skip
    result = simulate(jobs, make_cluster(1, 4, 16), "srtf", params)
    a, b = result.decisions
    assert (b.start_slot, b.end_slot) == (2, 3)
    assert [(p.slot, p.length) for p in a.slots] == [(0, 2), (4, 5)]  # 4 left + 0.5 lost
    assert dict(a.stats)["restarts"] == 1 and dict(b.stats)["restarts"] == 0
    assert capacity_violations(result) == [] and decision_problems(result) == []


def test_a_longer_arrival_waits_and_does_not_preempt() -> None:
    jobs = sim_jobs(
        [(make_job("A", workers=4, workload=NU * 4 * 2), 0.0),
         (make_job("B", workers=4, workload=NU * 4 * 5), DELTA)],
        DELTA,
    )  # fmt: skip
    result = simulate(jobs, make_cluster(1, 4, 16), "srtf", PlacementParams())
    a, b = result.decisions
    assert (a.start_slot, a.end_slot) == (0, 1) and b.start_slot == 2
    assert dict(a.stats)["restarts"] == 0


def test_best_shape_is_co_located_on_the_tightest_machine() -> None:
    # machine 1 has 2 GPUs free, machine 0 and 2 have 4: a 2-worker job goes to machine 1,
    # a 4-worker job to machine 0 (the lower index among the tight ones)
    cluster = make_cluster(3, 4, 16)
    room = np.array(Timeline.of(cluster, 0).capacity, dtype=np.float64)
    room[1, 0] = 2.0
    two = best_shape(make_job("two", workers=2), room, DELTA)
    four = best_shape(make_job("four", workers=4), room, DELTA)
    assert two == Allocation(Mode.COLOCATED, ((1, 2),), ((1, 1),))
    assert four == Allocation(Mode.COLOCATED, ((0, 4),), ((0, 1),))
    assert (room[1] == [2.0, 16.0, 65536.0]).all()  # the room is not changed


def test_best_shape_spreads_only_when_that_is_faster() -> None:
    # 8 workers, nodes of 4 GPUs: co-located 4 at ν_in against 8 spread at ν_ex
    cluster = make_cluster(2, 4, 16)
    room = np.array(Timeline.of(cluster, 0).capacity, dtype=np.float64)
    job = make_job("wide", workers=8)
    shape = best_shape(job, room, DELTA)
    assert shape is not None
    nu_ex = RESNET.nu_ex(DELTA)
    if 8 * nu_ex > 4 * NU:
        assert shape.mode is Mode.DISTRIBUTED and shape.total_workers == 8
    else:
        assert shape == Allocation(Mode.COLOCATED, ((0, 4),), ((0, 1),))


def _running(job_id: str, workers: int, left_slots: float, alloc: Allocation | None) -> RunningJob:
    job = make_job(job_id, workers=workers, workload=NU * workers * 10)
    return RunningJob(job, 0, NU * workers * left_slots, alloc)


def test_a_running_job_keeps_its_shape_unless_a_move_pays_its_restart() -> None:
    # a 4-worker job running on 2 GPUs of node 0 while node 1 is now empty: with 0.1 slot
    # left a move (half a slot of restart) cannot pay; with 10 slots it does
    cluster = make_cluster(2, 4, 16)
    narrow = Allocation(Mode.COLOCATED, ((0, 2),), ((0, 1),))
    params = PlacementParams(restart_s=300.0)
    other = _running("other", 2, 50.0, Allocation(Mode.COLOCATED, ((0, 2),), ((0, 1),)))
    soon = reallocate_srtf((_running("j", 4, 0.1, narrow), other), cluster, 3, params)
    assert soon[0] == narrow
    later = reallocate_srtf((_running("j", 4, 10.0, narrow), other), cluster, 3, params)
    assert later[0] == Allocation(Mode.COLOCATED, ((1, 4),), ((1, 1),))
    assert later[1] == other.allocation  # the other job was not in the way: kept


def test_a_job_evicts_only_what_its_faster_shape_needs() -> None:
    # two long 2-worker jobs each on their own node (0 and 1), a short 4-worker arrival:
    # it takes a node whole, the one whose job has the most left (node 1), and evicts that
    # job alone; the evicted job then takes the 2 GPUs left on node 0
    cluster = make_cluster(2, 4, 16)
    long0 = _running("long0", 2, 30.0, Allocation(Mode.COLOCATED, ((0, 2),), ((0, 1),)))
    long1 = _running("long1", 2, 40.0, Allocation(Mode.COLOCATED, ((1, 2),), ((1, 1),)))
    short = _running("short", 4, 1.0, None)
    out = reallocate_srtf((long0, long1, short), cluster, 5, PlacementParams())
    assert out[2] == Allocation(Mode.COLOCATED, ((1, 4),), ((1, 1),))
    assert out[0] == long0.allocation
    assert out[1] == Allocation(Mode.COLOCATED, ((0, 2),), ((0, 1),))


def test_a_spread_layout_fills_holes_first_and_keeps_whole_machines_whole() -> None:
    # GPUs free: 4, 1, 2, 4; three 1-GPU workers take the 1- and 2-GPU holes, and the PS
    # (no GPU, one CPU) the machine with the least CPU left
    room = np.array(
        [[4.0, 16.0, 65536.0], [1.0, 16.0, 65536.0], [2.0, 3.0, 65536.0], [4.0, 16.0, 65536.0]]
    )
    alpha, beta = np.array([1.0, 1.0, 8192.0]), np.array([0.0, 1.0, 4096.0])
    layout = tightest_spread(room, alpha, 3, beta, 1)
    assert layout is not None
    workers, ps = layout
    assert workers.tolist() == [0, 1, 2, 0] and ps.tolist() == [0, 0, 1, 0]
    assert tightest_spread(room, alpha, 12, beta, 1) is None  # 11 GPUs
    assert tightest_spread(room, np.array([0.0, 20.0, 1.0]), 1, beta, 0) is None
