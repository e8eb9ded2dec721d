"""drf (placement/baselines/drf.py) on small hand-checked scenarios."""

from __future__ import annotations

import numpy as np
import pytest

from slurm_mlsched.model import Mode, Resources
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.baselines.drf import allocate_counts
from slurm_mlsched.placement.baselines.reallocation import RunningJob
from slurm_mlsched.sim import SimJob, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_cluster, make_job

NO_PS = Resources(0, 0, 0)


def running(job_id: str, workers: int, worker: Resources, ps: Resources = NO_PS) -> RunningJob:
    job = make_job(job_id, workers=workers, worker=worker, ps=ps)
    return RunningJob(job, 1, 1000.0, None)


def test_the_classic_drf_example() -> None:
    # Ghodsi et al.: 9 CPUs, 18 GB; A's tasks <1 CPU, 4 GB> (memory-dominant, 2/9 each),
    # B's <3 CPUs, 1 GB> (CPU-dominant, 1/3 each): A gets 3 tasks, B 2, both at 2/3
    jobs = (
        running("A", 10, Resources(0, 1, 4096)),
        running("B", 10, Resources(0, 3, 1024)),
    )
    assert allocate_counts(jobs, np.array([[0.0, 9.0, 18432.0]])) == [(3, 1), (2, 1)]


def test_everyone_gets_all_workers_when_they_fit() -> None:
    jobs = (running("A", 2, Resources(1, 1, 1024)), running("B", 3, Resources(1, 1, 1024)))
    assert allocate_counts(jobs, np.array([[8.0, 16.0, 65536.0]])) == [(2, 1), (3, 1)]


def test_ps_counts_follow_the_rule() -> None:
    ps = Resources(0, 1, 1024)
    jobs = (running("A", 8, Resources(1, 1, 1024), ps),)
    assert allocate_counts(jobs, np.array([[4.0, 64.0, 65536.0]] * 2)) == [(8, 2)]


def _a_then_b() -> tuple[float, list[SimJob]]:
    """A (4 workers) alone, then B (4 workers, 2 slots at 2 workers) arriving in slot 2."""
    nu = RESNET.nu_in(600.0)
    v_a = nu * (4 * 2 + 2 * 2 + 4 * 3)
    return v_a, [
        SimJob(make_job("A", workers=4, workload=v_a), 0.0),
        SimJob(make_job("B", workers=4, workload=nu * 2 * 2, arrival=2), 1200.0),
    ]


def test_a_running_job_shrinks_for_a_newcomer_and_grows_back() -> None:
    # one 4-GPU machine; A (4 workers) alone, then B (4 workers) arrives in slot 2: equal
    # dominant shares give 2 + 2; B ends after 2 slots and A gets its 4 workers back
    v_a, jobs = _a_then_b()
    free = PlacementParams(restart_s=0.0)  # re-allocation free: the plain DRF arithmetic
    result = simulate(jobs, make_cluster(1, 4, 16), "drf", free)
    a, b = result.decisions
    assert [(p.slot, p.length, p.total_workers) for p in a.slots] == [
        (0, 2, 4),
        (2, 2, 2),
        (4, 3, 4),
    ]
    assert (b.start_slot, b.end_slot) == (2, 3)
    assert all(p.mode is Mode.COLOCATED for p in (*a.slots, *b.slots))
    assert a.work_covered == pytest.approx(v_a)
    assert dict(a.stats)["restarts"] == 0
    assert capacity_violations(result) == [] and decision_problems(result) == []


def test_every_resize_costs_the_restart_time() -> None:
    # the same two jobs with the default restart cost (30 s of no progress per change):
    # A is resized twice (4 -> 2 at B's arrival, 2 -> 4 at B's end), B never; A's last run
    # must also redo 2 x 30 s of lost work, so it needs a 4th slot there
    _, jobs = _a_then_b()
    result = simulate(jobs, make_cluster(1, 4, 16), "drf", PlacementParams())
    a, b = result.decisions
    assert PlacementParams().restart_s == 30.0
    assert [(p.slot, p.length, p.total_workers) for p in a.slots] == [
        (0, 2, 4),
        (2, 2, 2),
        (4, 4, 4),
    ]
    assert dict(a.stats)["restarts"] == 2 and dict(b.stats)["restarts"] == 0
    assert (b.start_slot, b.end_slot) == (2, 3)


def test_first_fit_placement_packs_in_node_order() -> None:
    jobs = [SimJob(make_job(f"j{i}", workers=3, workload=5000.0), 0.0) for i in range(2)]
    result = simulate(jobs, make_cluster(2, 4, 16), "drf", PlacementParams())
    first = result.decisions[0].slots[0]
    assert first.workers == (("node1", 3),) and first.mode is Mode.COLOCATED
    second = result.decisions[1].slots[0]  # node1 has 1 GPU left: it spans both nodes
    assert second.mode is Mode.DISTRIBUTED and second.workers == (("node1", 1), ("node2", 2))
