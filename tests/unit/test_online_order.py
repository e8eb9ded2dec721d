"""The one online loop's order (sim/engine.py, MODEL.md §4b): completions before arrivals in
a slot, arrivals by submit time then job id; under late binding the jobs that wait are
then decided in queue order (smallest service first), so simultaneous arrivals go
shortest first."""

from __future__ import annotations

from slurm_mlsched.placement import Binding, PlacementParams
from slurm_mlsched.sim import sim_jobs, simulate
from slurm_mlsched.sim.engine import event_order
from tests.conftest import RESNET, make_cluster, make_job

NU_IN = RESNET.nu_in(600.0)


def test_arrivals_are_handled_by_slot_then_submit_time_then_id() -> None:
    jobs = sim_jobs(
        [
            (make_job("c-late", workers=1, workload=NU_IN), 601.0),
            (make_job("b", workers=4, workload=4 * NU_IN), 10.0),
            (make_job("a", workers=4, workload=4 * NU_IN), 10.0),
            (make_job("z-first", workers=4, workload=4 * NU_IN), 5.0),
        ],
        600.0,
    )
    assert [jobs[i].job_id for i in event_order(jobs)] == ["z-first", "a", "b", "c-late"]


def test_late_binding_decides_simultaneous_arrivals_shortest_first() -> None:
    # one 4-GPU machine, two simultaneous 4-worker jobs of 6 and 1 slots; the long one's
    # id comes first, so early binding (arrival order) books it first
    snap = make_cluster(1)
    entries = [
        (make_job("a-long", workers=4, workload=4 * NU_IN * 6), 0.0),
        (make_job("b-short", workers=4, workload=4 * NU_IN * 1), 0.0),
    ]
    jobs = sim_jobs(entries, 600.0)
    late = simulate(jobs, snap, "yu-rr", PlacementParams(binding=Binding.LATE))
    early = simulate(jobs, snap, "yu-rr", PlacementParams(binding=Binding.EARLY))
    assert sum(d.completion_slots for d in late.decisions) == 1 + 7
    assert sum(d.completion_slots for d in early.decisions) == 6 + 7
