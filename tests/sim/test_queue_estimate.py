"""The live queue's estimated starts and plan ÷ bound ratio (sim/queue_estimate.py).

Hand-checked small cases (an empty cluster; a full cluster behind one long job; a plan
that waits for nothing; the pooled bound's arithmetic; unknown estimates), then
properties over random queues re-planned by the real queue policies: the ratio is ≥ 1,
no estimate starts before now, and the estimates fit together with what is fixed.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import (
    ClusterSnapshot,
    Decision,
    JobRequest,
    Machine,
    Reservation,
    Resources,
)
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.program.residual import residual_from
from slurm_mlsched.placement.registry import get_queue
from slurm_mlsched.placement.yu_rr.late_binding import PendingJob
from slurm_mlsched.placement.yu_rr.list_schedule import (
    arrival_of,
    earliest_requested,
    requested_at,
)
from slurm_mlsched.sim.bounds import srpt_total
from slurm_mlsched.sim.queue_estimate import (
    QueuedJob,
    _beside_by_segment,
    _colocated_from,
    alone_from_now,
    capped_from_now,
    estimate_queue,
    place_waiting,
    pooled_from_now,
    queue_bound,
)
from tests.conftest import RESNET, make_cluster, make_job

DELTA = 600.0
NU = RESNET.nu_in(DELTA)
EPOCH = datetime(2026, 12, 3, 10, 0, tzinfo=UTC)
NOW = EPOCH + timedelta(seconds=125)  # inside slot 0


def _cluster(n: int, gpus: float, reservations: tuple[Reservation, ...] = ()) -> ClusterSnapshot:
    return replace(
        make_cluster(n, gpus, 16), reservations=reservations, slot_seconds=DELTA, epoch=EPOCH
    )


def _long_job(nodes: int, gpus: float, end: int) -> tuple[Reservation, ...]:
    """One running job that holds every GPU (and 2 CPUs) of every node until ``end``."""
    return tuple(
        Reservation(f"node{i + 1}", 0, end, Resources(gpus, 2, 8192), "long") for i in range(nodes)
    )


def test_an_empty_cluster_is_at_the_bound() -> None:
    # two 4-GPU nodes, nothing running; two 4-worker jobs each fit one node at once
    jobs = [make_job(f"j{i}", workers=4, workload=NU * 4 * 3) for i in range(2)]
    est = estimate_queue([QueuedJob(j) for j in jobs], _cluster(2, 4), NOW)
    assert [(j.start_slot, j.end_slot) for j in est.jobs] == [(0, 2), (0, 2)]
    assert all(j.start == NOW for j in est.jobs)  # never before now
    assert (est.plan_slots, est.bound_slots, est.ratio) == (6.0, 6.0, 1.0)
    assert est.busy == 1.0 and est.busy_resource == "gpu"  # 8 GPUs held for 3 slots
    assert all(j.end == EPOCH + timedelta(seconds=3 * DELTA) for j in est.jobs)


def test_no_waiting_job_is_ratio_one() -> None:
    est = estimate_queue([], _cluster(1, 4, _long_job(1, 4, 9)), NOW)
    assert est.ratio == 1.0 and est.jobs == () and est.estimated == 0
    assert est.horizon == NOW


def test_a_full_cluster_waits_for_the_long_job_and_is_at_the_bound() -> None:
    # every GPU is held until slot 50 by one running job: three 2-GPU jobs all start at
    # its end, the bound sees the same wait, so the plan is at the bound and the cluster
    # busy: a full cluster, not a bad plan
    cluster = _cluster(2, 4, _long_job(2, 4, 50))
    jobs = [make_job(f"j{i}", workers=2, workload=NU * 2 * 4) for i in range(3)]
    est = estimate_queue([QueuedJob(j) for j in jobs], cluster, NOW)
    assert [j.start_slot for j in est.jobs] == [50, 50, 50]
    assert all(j.start == EPOCH + timedelta(seconds=50 * DELTA) for j in est.jobs)
    assert [j.alone_slots for j in est.jobs] == [54, 54, 54]  # 50 slots of wait + 4 of run
    assert est.ratio == 1.0 and est.bound_kind == "alone from now"
    # GPU-slots over slots 0..53: 8 × 50 by the long job + 6 × 4 by the three
    assert est.horizon_slot == 53
    assert abs(est.busy - (8 * 50 + 6 * 4) / (8 * 54)) < 1e-12
    assert est.full and est.to_json()["full"] is True


def test_a_plan_that_waits_for_nothing_is_far_from_the_bound() -> None:
    # the re-plan reserved a start at slot 20 on an idle cluster: the bound says 3 slots
    job = make_job("late", workers=4, workload=NU * 4 * 3)
    now_est = estimate_queue([QueuedJob(job)], _cluster(1, 4), NOW)
    plan = _shifted_plan(job, _cluster(1, 4), 20)
    est = estimate_queue([QueuedJob(job, plan)], _cluster(1, 4), NOW)
    assert (est.jobs[0].start_slot, est.jobs[0].source) == (20, "plan")
    assert now_est.ratio == 1.0
    assert est.ratio == (20 + 3) / 3  # 7.67 × the bound, with the cluster mostly idle
    assert est.busy < 0.2 and not est.full


def _shifted_plan(job: JobRequest, cluster: ClusterSnapshot, start: int) -> Decision:
    """The queue policy's decision for ``job`` on ``cluster``, moved to ``start``."""
    queue = get_queue("yu-rr", PlacementParams())
    assert queue is not None
    step = queue((PendingJob(job, 1),), cluster, PlacementParams(), ())
    (d,) = step.started
    return d.shifted(start - d.start_slot)


def test_jobs_behind_the_planned_head_are_list_scheduled() -> None:
    # one 4-GPU node held until slot 5; the head (4 GPUs, 2 slots) is planned at 5; the
    # next job (4 GPUs, 3 slots) goes after it, at 7
    cluster = _cluster(1, 4, _long_job(1, 4, 5))
    head = make_job("head", workers=4, workload=NU * 4 * 2)
    queue = get_queue("yu-rr", PlacementParams())
    assert queue is not None
    step = queue((PendingJob(head, 1),), cluster, PlacementParams(), ())
    (plan,) = step.planned
    second = make_job("second", workers=4, workload=NU * 4 * 3)
    est = estimate_queue([QueuedJob(head, plan), QueuedJob(second)], cluster, NOW)
    assert [(j.source, j.start_slot, j.end_slot) for j in est.jobs] == [
        ("plan", 5, 6),
        ("list", 7, 9),
    ]
    # plan 7 + 10 = 17; the bound: alone 7 and 8 (15), pooled GPUs: 0 GPUs for 5 slots,
    # then sizes 2 and 3 → 7 + 10 = 17: the plan is at the bound
    assert est.bound_kind == "alone and pooled gpu from now"
    assert (est.plan_slots, est.bound_slots, est.ratio) == (17.0, 17.0, 1.0)


def test_the_pooled_bound_by_hand() -> None:
    # one 4-GPU node, 2 GPUs held until slot 4: half the GPUs in [0, 4), all after. Two
    # jobs of 2 whole-cluster slots each: the first is done at A⁻¹(2) = 4, the second at
    # A⁻¹(4) = 4 + 2 = 6: Σ = 10
    fixed = residual_from(_cluster(1, 4, (Reservation("node1", 0, 4, Resources(2, 1, 0), "r"),)), 0)
    jobs = [make_job(f"j{i}", workers=4, workload=NU * 4 * 2) for i in range(2)]
    assert abs(pooled_from_now(jobs, fixed, 0, DELTA) - 10.0) < 1e-9


def test_the_pooled_bound_on_an_idle_cluster_is_srpt() -> None:
    fixed = residual_from(_cluster(2, 4), 0)
    jobs = [
        make_job(f"j{i}", workers=w, workload=NU * w * k)
        for i, (w, k) in enumerate([(1, 3.0), (4, 1.5), (2, 7.0), (3, 0.5)])
    ]
    sizes = [j.workload * 1 / (NU * 8) for j in jobs]
    assert abs(pooled_from_now(jobs, fixed, 0, DELTA) - srpt_total([0.0] * 4, sizes)) < 1e-9


def test_the_alone_and_pooled_bounds_combine_and_a_narrower_start_is_estimated() -> None:
    # one idle 4-GPU node: a 1-worker job of 2 slots and a 4-worker job of 2 slots. Alone
    # each takes 2 (Σ 4); pooled, 0.5 and 2 node-slots finish at 0.5 and 2.5 (Σ 3); the
    # k-th to finish is at least both: max(1, 2) + max(3, 2) = 5. And 5 is reached: the
    # wide job starts now with the 3 GPUs left, co-located, in 3 slots (8/3 worker-slots
    # each), rather than at its requested width after the small one (ends in slot 3)
    cluster = _cluster(1, 4)
    small = make_job("small", workers=1, workload=NU * 1 * 2)
    wide = make_job("wide", workers=4, workload=NU * 4 * 2)
    fixed = residual_from(cluster, 0)
    assert queue_bound([small, wide], [2, 2], fixed, DELTA) == (
        5.0,
        "alone and pooled gpu from now",
    )
    est = estimate_queue([QueuedJob(small), QueuedJob(wide)], cluster, NOW)
    assert [(j.start_slot, j.end_slot) for j in est.jobs] == [(0, 1), (0, 2)]
    assert (est.plan_slots, est.bound_slots, est.ratio) == (5.0, 5.0, 1.0)


@pytest.mark.parametrize("delta", [DELTA, 60.0, 3600.0])
def test_a_long_narrow_queue_is_bounded_with_rate_caps(delta: float) -> None:
    # one 4-GPU node, 2 GPUs held until slot 20, twelve 1-GPU jobs of 10 slots waiting:
    # any schedule runs at most 2 of them before slot 20 and 4 after, one GPU each. The
    # pooled bound lets one job use the whole free pool; the pooled LP with rate caps
    # (sim/capped_bound.py) does not, and is the higher one: between the two and the plan.
    # At every slot length (the rates per slot are the cluster's Δ's)
    busy = (Reservation("node1", 0, 20, Resources(2, 1, 0), "r"),)
    cluster = replace(_cluster(1, 4, busy), slot_seconds=delta)
    fixed = residual_from(cluster, 0)
    nu = RESNET.nu_in(delta)
    jobs = [make_job(f"j{i}", workers=1, workload=nu * 10) for i in range(12)]
    alone = [alone_from_now(j, fixed, delta) for j in jobs]
    old, _ = queue_bound(jobs, alone, fixed, delta)
    capped = capped_from_now(jobs, alone, cluster, fixed)
    est = estimate_queue([QueuedJob(j) for j in jobs], cluster, NOW)
    # the plan: 2 in 0..9, 2 in 10..19, then 4 in 20..29 and 4 in 30..39: 2·10 + 2·20 +
    # 4·30 + 4·40 = 340
    assert est.plan_slots == 340.0
    assert old < capped <= est.plan_slots + 1e-9
    assert capped >= 0.9 * 340.0
    assert (est.bound_slots, est.bound_kind) == (capped, "rate caps on the room from now")


def test_the_alone_bound_waits_for_room() -> None:
    # a 4-worker job on one 4-GPU node where 3 GPUs are held until slot 10: with 1 GPU now
    # it needs 4 × 2 = 8 slots (ends at 8), with 4 GPUs at 10 it needs 2 (ends at 12): 8
    fixed = residual_from(
        _cluster(1, 4, (Reservation("node1", 0, 10, Resources(3, 1, 0), "r"),)), 0
    )
    job = make_job("j", workers=4, workload=NU * 4 * 2)
    assert alone_from_now(job, fixed, DELTA) == 8
    # held until 3 instead: waiting is better, 3 + 2 = 5
    fixed = residual_from(_cluster(1, 4, (Reservation("node1", 0, 3, Resources(3, 1, 0), "r"),)), 0)
    assert alone_from_now(job, fixed, DELTA) == 5


def test_unknown_estimates_say_why() -> None:
    # the only node is held by a job without a time limit (placeholder end): the job
    # behind it has no estimate; an unplaceable job keeps the re-plan's reason
    cluster = _cluster(1, 4, _long_job(1, 4, 52560))
    behind = make_job("behind", workers=2, workload=NU * 2 * 2)
    bad = make_job("bad", workers=2, workload=NU * 2 * 2)
    est = estimate_queue(
        [QueuedJob(behind), QueuedJob(bad, unplaceable="cannot be placed: never fits")],
        cluster,
        NOW,
        unknown_ends={"long"},
    )
    assert [(j.source, j.start) for j in est.jobs] == [("unknown", None), ("unknown", None)]
    assert "no time limit" in est.jobs[0].reason
    assert est.jobs[1].reason == "cannot be placed: never fits"
    assert est.ratio is None and est.estimated == 0
    doc = est.to_json()
    assert doc["ratio"] is None and doc["waiting"] == 2 and doc["estimated"] == 0
    assert est.jobs[0].to_json()["start"] is None


def test_a_job_that_never_fits_has_no_estimate() -> None:
    job = make_job("huge", workers=2, worker=Resources(8, 1, 8192))  # 8 GPUs a worker
    est = estimate_queue([QueuedJob(job)], _cluster(2, 4), NOW)
    assert est.jobs[0].source == "unknown" and "fits" in est.jobs[0].reason
    assert est.ratio is None


def test_a_narrower_start_stays_on_the_gpu_types_the_job_allows() -> None:
    # node1 (a100) is idle, node2 (v100) is busy until slot 20: a job that may use only
    # v100 GPUs waits for node2 (it was once estimated on node1's a100s)
    cluster = replace(
        _cluster(2, 4, _long_job(2, 4, 20)[1:]),
        machines=(
            Machine("node1", Resources(4, 16, 65536), "a100"),
            Machine("node2", Resources(4, 16, 65536), "v100"),
        ),
    )
    job = replace(make_job("v", workers=8, workload=NU * 4 * 2), gpu_types=frozenset({"v100"}))
    placed = place_waiting([QueuedJob(job)], cluster, PlacementParams())
    ((start, _, use),) = placed["v"].runs
    assert start == 20 and use[0].sum() == 0 and use[1][0] == 4  # node2, 4 workers


@st.composite
def rooms(draw: st.DrawFn) -> tuple[ClusterSnapshot, JobRequest]:
    nodes = draw(st.integers(1, 4))
    gpus = draw(st.sampled_from([2, 4, 8]))
    held = []
    for h in range(nodes):
        for k in range(draw(st.integers(0, 3))):
            start = draw(st.integers(0, 12))
            g = draw(st.integers(0, gpus))
            cpus = draw(st.integers(0, 8))
            held.append(
                Reservation(
                    f"node{h + 1}", start, start + draw(st.integers(1, 15)),
                    Resources(g, cpus, 1024), f"r{h}{k}",
                )
            )  # fmt: skip
    w = draw(st.integers(1, 2 * gpus))
    job = make_job("j", workers=w, workload=NU * w * draw(st.floats(0.2, 8.0)))
    return _cluster(nodes, gpus, tuple(held)), job


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rooms())
def test_the_narrower_start_is_the_most_workers_any_machine_holds(
    case: tuple[ClusterSnapshot, JobRequest],
) -> None:
    """_colocated_from against brute force: every machine, every k, the room's minimum over
    the k-worker run (``Residual.window_min``) holding k workers and one PS."""
    cluster, job = case
    res = residual_from(cluster, 0)
    arr = arrival_of(job, DELTA, res, PlacementParams(), 0)
    beside = _beside_by_segment(res, arr)
    alpha, beta = np.array(job.worker.as_tuple()), np.array(job.ps.as_tuple())
    for sigma in (0, *res.increase_slots()):
        best = 0
        for h in range(res.n_machines):
            for k in range(1, job.max_workers + 1):
                d = int(np.ceil(job.workload / (k * arr.shape.nu_in) - 1e-9))
                room = res.window_min(sigma, sigma + d)[h]
                if (room >= k * alpha + beta - 1e-9).all():
                    best = max(best, k)
        sh = _colocated_from(arr, res, beside, sigma, float("inf"))
        assert (sh.workers if sh is not None else 0) == best
        if sh is not None:  # and it holds where it was put
            d = int(np.ceil(job.workload / (best * arr.shape.nu_in) - 1e-9))
            room = res.window_min(sigma, sigma + d)[sh.colo]
            assert (room >= best * alpha + beta - 1e-9).all()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rooms(), st.integers(0, 6))
def test_the_earliest_requested_start_skips_only_starts_that_cannot_fit(
    case: tuple[ClusterSnapshot, JobRequest], arrival: int
) -> None:
    """earliest_requested's scan (which skips the starts its per-segment test over the run
    rules out, list_schedule._may_start) finds what trying every start finds."""
    cluster, job = case
    res = residual_from(cluster, 0)
    arr = arrival_of(replace(job, arrival_slot=arrival), DELTA, res, PlacementParams(), 0)
    end, _, shape = earliest_requested(arr, res)
    for sigma in (arr.a, *(t for t in res.increase_slots() if t > arr.a)):
        got = requested_at(arr, res, sigma)
        if got is not None:
            assert shape is not None and (shape.start, end) == (sigma, got[0])
            assert (shape.w == got[2].w).all() and (shape.s == got[2].s).all()
            return
    assert shape is None


# --- properties over random queues re-planned by the real policies --------------------------


@st.composite
def queues(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[JobRequest], str]:
    nodes = draw(st.integers(1, 3))
    # nodes of one size, or of several (the bound's GPU pools by node size, Lemma 2″)
    sizes = draw(st.sampled_from([[2], [4], [1, 4], [2, 4, 1]]))
    gpus = [float(sizes[h % len(sizes)]) for h in range(nodes)]
    running = []
    for h in range(nodes):
        for k in range(draw(st.integers(0, 2))):
            g = draw(st.integers(0, int(gpus[h]) // 2))
            end = draw(st.integers(1, 30))
            running.append(Reservation(f"node{h + 1}", 0, end, Resources(g, 1, 4096), f"r{h}{k}"))
    machines = tuple(Machine(f"node{h + 1}", Resources(gpus[h], 16, 65536)) for h in range(nodes))
    cluster = replace(_cluster(nodes, 1), machines=machines, reservations=tuple(running))
    jobs = []
    for i in range(draw(st.integers(1, 6))):
        w = draw(st.integers(1, 6))
        jobs.append(make_job(f"q{i}", workers=w, workload=NU * w * draw(st.floats(0.3, 6.0))))
    return cluster, jobs, draw(st.sampled_from(["yu-rr", "qssf"]))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(queues())
def test_the_plan_is_never_below_the_bound(
    case: tuple[ClusterSnapshot, list[JobRequest], str],
) -> None:
    cluster, jobs, policy = case
    params = PlacementParams()
    queue = get_queue(policy, params)
    assert queue is not None
    step = queue(tuple(PendingJob(j, 7) for j in jobs), cluster, params, ())
    plans = {d.job_id: d for d in (*step.started, *step.planned)}
    rejected = {k: e.message for k, e in step.rejected}
    waiting = [QueuedJob(j, plans.get(j.job_id), rejected.get(j.job_id, "")) for j in jobs]
    est = estimate_queue(waiting, cluster, NOW, params=params)
    assert est.ratio is None or est.ratio >= 1.0 - 1e-9, est
    assert est.bound_slots <= est.plan_slots + 1e-9
    assert 0.0 <= est.busy <= 1.0
    for j, q in zip(est.jobs, waiting, strict=True):
        if not j.known:
            continue
        assert j.start is not None and j.start >= NOW
        assert j.end_slot is not None and j.start_slot is not None
        assert j.alone_slots is not None and j.end_slot + 1 >= j.alone_slots
        if q.plan is not None:
            assert (j.start_slot, j.end_slot) == (q.plan.start_slot, q.plan.end_slot)
    _estimates_fit(waiting, cluster)


def _estimates_fit(waiting: list[QueuedJob], cluster: ClusterSnapshot) -> None:
    """Every estimated run (plans and list-scheduled ones) fits beside what is fixed, on
    every machine in every resource and slot."""
    placed = place_waiting(waiting, cluster, PlacementParams())
    stop = max(
        [1] + [p.end + 1 for p in placed.values()] + [r.end_slot for r in cluster.reservations]
    )
    cap = np.array([m.capacity.as_tuple() for m in cluster.machines])
    held = np.zeros((stop, *cap.shape))
    index = cluster.machine_index()
    for r in cluster.reservations:
        held[r.start_slot : r.end_slot, index[r.machine]] += r.usage.as_tuple()
    for p in placed.values():
        for start, end, use in p.runs:
            held[start:end] += use
    assert (held <= cap[None] + 1e-7).all()
