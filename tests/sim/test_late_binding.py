"""Late binding (MODEL.md §4b): the pending queue re-planned at every event.

* a job that cannot start now holds nothing: a later small job that fits starts at once;
* queue order: smallest service first; the key's overtaking window S_i/γ (property);
* no starvation: a wide job under an adversarial stream of small jobs starts within the
  documented bound with aging, and only after the stream with γ = 0;
* invariants over random replays: capacity, no running job moved, every job started.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import ClusterSnapshot, JobRequest, Machine, Resources
from slurm_mlsched.placement import Binding, PlacementParams
from slurm_mlsched.placement.yu_rr.late_binding import PendingJob, fits, ordered, replan_queue
from slurm_mlsched.placement.yu_rr.per_arrival import place_yu_rr
from slurm_mlsched.placement.yu_rr.queue_order import (
    aging_rate,
    cluster_size,
    largest_capacity,
    overtaking_window_s,
    queue_key,
    service_seconds,
)
from slurm_mlsched.sim import SimJob, admit, sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_cluster, make_job

DELTA = 600.0
NU = RESNET.nu_in(DELTA)


def _by_id(result: object) -> dict[str, object]:
    return {o.job.job_id: o.decision for o in result.outcomes}  # type: ignore[attr-defined]


def test_a_waiting_job_holds_nothing_and_a_small_one_starts_now() -> None:
    # one 4-GPU node: A (2 GPUs, 6 slots) starts at 0; W (4 GPUs) arrives in slot 1 and
    # cannot start before A ends; S (1 GPU, 2 slots) arrives in slot 2 and fits next to A:
    # it starts at once (W holds nothing now), and ends before W's turn, so W still
    # starts the moment A is done
    jobs = sim_jobs(
        [
            (make_job("A", workers=2, workload=NU * 2 * 6), 0.0),
            (make_job("W", workers=4, workload=NU * 4 * 2), 1.0),
            (make_job("S", workers=1, workload=NU * 1 * 2), 900.0),
        ],
        DELTA,
    )
    result = simulate(jobs, make_cluster(1, 4, 16), "qssf", PlacementParams())
    d = _by_id(result)
    a, w, s = d["A"], d["W"], d["S"]
    assert (a.start_slot, a.end_slot) == (0, 5)  # type: ignore[attr-defined]
    assert s.start_slot == 2 and s.end_slot == 3  # type: ignore[attr-defined]
    assert w.start_slot == 6  # type: ignore[attr-defined]  # as soon as A is done
    assert capacity_violations(result) == [] and decision_problems(result) == []


def test_the_smallest_service_goes_first_among_waiting_jobs() -> None:
    # the node is busy until slot 3; three jobs wait; when it frees, the shortest starts
    blocker = make_job("X", workers=4, workload=NU * 4 * 3)
    long_ = make_job("long", workers=4, workload=NU * 4 * 5)
    short = make_job("short", workers=4, workload=NU * 4 * 1)
    mid = make_job("mid", workers=4, workload=NU * 4 * 2)
    jobs = sim_jobs([(blocker, 0.0), (long_, 10.0), (short, 20.0), (mid, 30.0)], DELTA)
    for policy in ("qssf", "yu-rr"):
        result = simulate(jobs, make_cluster(1, 4, 16), policy, PlacementParams(aging=0.0))
        starts = {k: v.start_slot for k, v in _by_id(result).items()}  # type: ignore[attr-defined]
        assert starts["short"] < starts["mid"] < starts["long"], (policy, starts)
        assert starts["short"] == 3, policy


largest = largest_capacity(make_cluster(2).machines)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 8),
    st.floats(100.0, 1e6),
    st.integers(1, 8),
    st.floats(100.0, 1e6),
    st.integers(0, 500),
    st.integers(0, 500),
    st.floats(0.01, 10.0),
)
def test_a_later_job_overtakes_only_within_the_window(
    w_i: int, v_i: float, w_j: int, v_j: float, a_i: int, gap: int, aging: float
) -> None:
    i = make_job("i", workers=w_i, workload=v_i, arrival=a_i)
    j = make_job("j", workers=w_j, workload=v_j, arrival=a_i + gap)
    ahead = queue_key(j, DELTA, largest, aging) < queue_key(i, DELTA, largest, aging)
    if ahead and gap > 0:
        assert gap * DELTA < overtaking_window_s(i, largest, aging)


def test_the_cluster_size_counts_largest_machines_in_the_scarcest_resource() -> None:
    assert cluster_size(make_cluster(6, 8, 64).machines) == 6.0
    # 4 × 8 + 1 × 4 + 16 × 1 GPUs = 52 = 6.5 eight-GPU machines; CPUs would say 8.5
    mixed = (
        *(Machine(f"big{i}", Resources(8, 64, 512)) for i in range(4)),
        Machine("mid", Resources(4, 32, 256)),
        *(Machine(f"one{i}", Resources(1, 16, 128)) for i in range(16)),
    )
    assert cluster_size(mixed) == 6.5
    # a CPU cluster: resources no machine has are left out
    cpus = tuple(Machine(f"c{i}", Resources(0, 24, 64)) for i in range(3))
    assert cluster_size(cpus) == 3.0
    assert cluster_size(()) == 1.0


def test_aging_in_the_cluster_unit_is_the_same_patience_on_any_cluster() -> None:
    """With ``aging_unit = cluster`` a job's overtaking window is 1/γ' times its service's
    time on the whole cluster (S_i/M): the same multiple on 6, 16 and 64 machines. The
    default on 16 machines is the old γ = 0.3 in machines, exactly."""
    job = make_job("i", workers=2, workload=5000.0)
    params = PlacementParams()
    for n in (6, 16, 64):
        machines = make_cluster(n, 8, 64).machines
        big = largest_capacity(machines)
        rate = aging_rate(machines, params.aging, params.aging_unit)
        window = overtaking_window_s(job, big, rate)
        assert math.isclose(window, service_seconds(job, big) / n / params.aging)
    sixteen = make_cluster(16).machines
    assert aging_rate(sixteen, params.aging, params.aging_unit) == 0.3
    assert aging_rate(sixteen, 0.3, "machine") == 0.3
    with pytest.raises(ValueError, match="aging_unit"):
        aging_rate(sixteen, 0.3, "gpu")


def test_on_a_small_cluster_a_short_late_job_goes_ahead_of_an_old_long_one() -> None:
    """What the unit changes (docs/formulation.md §14.2). On 6 × 8 GPUs an 8-GPU job of 300
    slots has S = 300 slots of machine-time. With γ = 0.3 machines nothing arriving more
    than S/γ = 1,000 slots after it overtakes it; in the cluster unit (γ' = 0.01875, M = 6)
    the window is S/(γ'M) ≈ 2,667 slots. A 1-slot job arriving 1,200 slots later is behind
    it under the old rule and ahead of it under the new one."""
    cluster = make_cluster(6, 8, 64)
    old = make_job("old", workers=8, workload=NU * 8 * 300, arrival=0)
    short = make_job("short", workers=1, workload=NU * 1, arrival=1200)
    snapshot = ClusterSnapshot(cluster.machines, slot_seconds=DELTA)
    pending = [PendingJob(old, 0), PendingJob(short, 0)]
    new_order = ordered(pending, snapshot, PlacementParams())
    assert [p.request.job_id for p in new_order] == ["short", "old"]
    machine = PlacementParams(aging=0.3, aging_unit="machine")
    old_order = ordered(pending, snapshot, machine)
    assert [p.request.job_id for p in old_order] == ["old", "short"]


def test_service_is_width_independent_machine_time() -> None:
    # 1 GPU of a 4-GPU node for V·θ_in seconds: a quarter of a machine that long
    narrow = make_job("n", workers=1, workload=1000.0)
    wide = make_job("w", workers=4, workload=1000.0)
    assert service_seconds(narrow, largest) == service_seconds(wide, largest)
    assert service_seconds(narrow, largest) == 0.25 * 1000.0 * RESNET.theta_in


def _stream(wide_slots: int, small_every: int, count: int) -> list[SimJob]:
    # 4-GPU node; small jobs of 2 GPUs, 2 slots each, arriving so that two always overlap
    # and the node never has 4 GPUs free while the stream lasts; W (4 GPUs) arrives at 1
    entries: list[tuple[JobRequest, float]] = [
        (make_job(f"s{k:03d}", workers=2, workload=NU * 2 * 2), k * small_every * DELTA)
        for k in range(count)
    ]
    entries.append((make_job("W", workers=4, workload=NU * 4 * wide_slots), DELTA))
    return sim_jobs(entries, DELTA)


def test_no_starvation_under_a_stream_of_small_jobs() -> None:
    cluster = make_cluster(1, 4, 16)
    jobs = _stream(wide_slots=4, small_every=1, count=120)
    w = next(j for j in jobs if j.job_id == "W")
    largest1 = largest_capacity(cluster.machines)
    for policy in ("qssf", "yu-rr"):
        # pure smallest-service-first: W waits for the whole stream
        greedy = _by_id(simulate(jobs, cluster, policy, PlacementParams(aging=0.0)))
        last_small = max(d.start_slot for k, d in greedy.items() if k != "W")  # type: ignore[attr-defined]
        assert greedy["W"].start_slot >= last_small  # type: ignore[attr-defined]
        # with aging: W starts within S_W/γ of its arrival plus the runs of the jobs ahead
        # of it then (each small job lasts 2 slots; at most 2 run at a time)
        aging = 0.5
        window_slots = overtaking_window_s(w.request, largest1, aging) / DELTA
        fair = simulate(jobs, cluster, policy, PlacementParams(aging=aging))
        start = _by_id(fair)["W"].start_slot  # type: ignore[attr-defined]
        bound = w.request.arrival_slot + window_slots + 2 + 2
        assert start <= bound, (policy, start, bound)
        assert start < last_small  # it did not wait for the stream to end
        assert capacity_violations(fair) == [] and decision_problems(fair) == []


def test_the_head_keeps_its_plan_when_a_re_plan_would_end_later() -> None:
    # a previous plan for the only waiting job that still fits and ends earlier than what
    # the per-job decision would choose now is kept (step 4 of late_binding)
    cluster = make_cluster(2, 4, 16)
    job = make_job("h", workers=8, workload=NU * 8 * 3)
    snap = ClusterSnapshot(cluster.machines, (), DELTA, now_slot=0)
    fresh = place_yu_rr(job, snap, PlacementParams(seed=1))
    assert fits(fresh.reservations(job), snap)
    worse = PendingJob(job, 1, plan=None)
    step = replan_queue((worse,), snap, PlacementParams(), place_yu_rr)
    assert step.started and step.started[0].end_slot == fresh.end_slot
    # hand it an (artificially) better previous plan that fits: it is kept
    better = fresh.__class__(
        **{**fresh.__dict__, "end_slot": fresh.end_slot - 1, "job_id": job.job_id}
    )
    step = replan_queue((PendingJob(job, 1, plan=better),), snap, PlacementParams(), place_yu_rr)
    assert step.kept == ("h",) and step.started[0].end_slot == fresh.end_slot - 1


@st.composite
def replays(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[SimJob]]:
    n = draw(st.integers(1, 3))
    machines = tuple(
        Machine(f"n{i}", Resources(draw(st.sampled_from([2, 4])), 16, 65536)) for i in range(n)
    )
    entries = []
    for i in range(draw(st.integers(1, 12))):
        workers = draw(st.integers(1, 6))
        slots = draw(st.floats(0.3, 5.0))
        job = make_job(f"j{i:02d}", workers=workers, workload=NU * workers * slots)
        entries.append((job, draw(st.sampled_from([0.0, 300.0, 600.0, 1500.0, 4000.0]))))
    return ClusterSnapshot(machines, slot_seconds=DELTA), sim_jobs(entries, DELTA)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replays(), st.integers(0, 2), st.sampled_from([0.0, 1.0]))
def test_late_binding_invariants(
    case: tuple[ClusterSnapshot, list[SimJob]], seed: int, aging: float
) -> None:
    cluster, jobs = case
    admitted, _ = admit(jobs, cluster)
    for policy in ("yu-rr", "qssf"):
        params = PlacementParams(seed=seed, aging=aging, binding=Binding.LATE)
        result = simulate(admitted, cluster, policy, params)
        assert capacity_violations(result) == [], policy
        assert decision_problems(result) == [], policy  # incl. constant counts (not moved)
        for o in result.outcomes:
            if o.decision is None:  # qssf only: the requested width never fits at once
                assert policy == "qssf" and o.error.startswith("never-fits"), o.error
                continue
            assert len(o.decision.slots) == 1  # one allocation from start to end
            assert o.decision.start_slot >= o.job.request.arrival_slot
            assert o.decision.work_covered >= o.job.request.workload * (1 - 1e-9)
        if policy == "yu-rr":
            assert all(o.decision is not None for o in result.outcomes)  # every job started
        assert result.queue_series, policy
