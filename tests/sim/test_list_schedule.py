"""What late binding's size control rests on (placement/yu_rr/list_schedule.py, yu_rr's fast
path): the start-now end bound is a bound, the screen never spares a job whose decision
would start now, and the fastest-shape fast path is what no decision beats."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import ClusterSnapshot, JobRequest, Reservation, Resources
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.program.residual import residual_from
from slurm_mlsched.placement.yu_rr.list_schedule import (
    _requested_later_ends_before,
    arrival_of,
    earliest_colocated_end,
    earliest_requested,
    fastest_run_slots,
    later_start_ends_sooner,
    rate_bound,
    start_now_end_bound,
)
from slurm_mlsched.placement.yu_rr.per_arrival import place_yu_rr
from tests.conftest import RESNET, make_cluster, make_job

DELTA = 600.0
NOW = 5


@st.composite
def situations(draw: st.DrawFn) -> tuple[ClusterSnapshot, JobRequest]:
    cluster = make_cluster(draw(st.integers(1, 4)), 4, 16)
    held = []
    for k in range(draw(st.integers(0, 8))):
        node = f"node{draw(st.integers(1, len(cluster.machines)))}"
        start = draw(st.integers(0, NOW + 6))
        gpus = draw(st.integers(1, 4))
        held.append(Reservation(node, start, start + draw(st.integers(1, 12)),
                                Resources(gpus, gpus, 8192 * gpus), f"r{k}"))  # fmt: skip
    snap = replace(cluster, reservations=tuple(held), now_slot=NOW)
    snap = _fitting(snap)
    w = draw(st.integers(1, 12))
    job = make_job("j", workers=w, workload=RESNET.nu_in(DELTA) * w * draw(st.floats(0.5, 8)))
    return snap, replace(job, arrival_slot=NOW)


def _fitting(snap: ClusterSnapshot) -> ClusterSnapshot:
    """Drop reservations that would overfill a machine in some slot."""
    keep: list[Reservation] = []
    for r in snap.reservations:
        trial = replace(snap, reservations=(*keep, r))
        res = residual_from(trial, 0)
        if (res.seg_res >= -1e-9).all() and _no_overlap_over(trial, r):
            keep.append(r)
    return replace(snap, reservations=tuple(keep))


def _no_overlap_over(snap: ClusterSnapshot, r: Reservation) -> bool:
    used = sum(x.usage.gpu for x in snap.reservations if x.machine == r.machine and
               x.start_slot < r.end_slot and r.start_slot < x.end_slot)  # fmt: skip
    return used <= 4


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(situations())
def test_the_start_now_bound_is_the_smallest_feasible_run(case: tuple) -> None:
    snap, job = case
    res = residual_from(snap, NOW)
    arr = arrival_of(job, DELTA, res, PlacementParams(), NOW)
    got = start_now_end_bound(arr)
    brute = None
    for d in range(max(1, arr.d_min), 2000):  # the definition, one d at a time
        rate = rate_bound(arr, res.window_min(NOW, NOW + d))
        if rate <= 0:
            break
        if d * rate >= job.workload - 1e-9 * job.workload:
            brute = NOW + d - 1
            break
    assert got == brute
    if got is not None:  # and every decision that starts now ends no sooner
        d = place_yu_rr(job, snap, PlacementParams(seed=1))
        if d.start_slot == NOW:
            assert d.end_slot >= got


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(situations())
def test_the_screen_spares_only_jobs_that_would_wait(case: tuple) -> None:
    snap, job = case
    res = residual_from(snap, NOW)
    arr = arrival_of(job, DELTA, res, PlacementParams(), NOW)
    if later_start_ends_sooner(arr):
        for seed in (0, 1, 2):
            assert place_yu_rr(job, snap, PlacementParams(seed=seed)).start_slot > NOW


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(situations(), st.integers(0, 6))
def test_the_screen_is_its_definition(case: tuple, later: int) -> None:
    """The screen's scan of later starts stops early (no run of the requested width
    started from there ends before the bound it is given); for every bound it answers as
    the definition does, and the screen as a whole as its docstring says: some later
    start, co-located or at the requested width, ends before any start now could."""
    snap, job = case
    res = residual_from(snap, NOW)
    arr = arrival_of(job, DELTA, res, PlacementParams(), NOW + later)
    end, _, sh = earliest_requested(arr, res)
    quick = earliest_requested(arr, res, room_left=False)  # the same answer, room not taken
    assert quick[0] == end and quick[1] is res and repr(quick[2]) == repr(sh)
    for before in range(arr.a, end + 3):
        want = sh is not None and sh.start > arr.a and end < before
        assert _requested_later_ends_before(arr, before) == want, before
    now_end = start_now_end_bound(arr)
    if now_end is None:
        want = True
    else:
        colo = earliest_colocated_end(arr, arr.a)
        want = (colo is not None and colo < now_end) or (
            sh is not None and sh.start > arr.a and end < now_end
        )
    assert later_start_ends_sooner(arr) == want


def test_the_fastest_shape_is_taken_when_it_fits_now() -> None:
    # 12 ResNet-50 workers on 4-GPU nodes: 12 distributed (12 · ν_ex ≈ 5 ν_in) beat the 3
    # that fit co-located beside a PS; on the idle cluster that shape fits at once
    cluster = make_cluster(4, 4, 16)
    job = make_job("wide", workers=12, workload=RESNET.nu_in(DELTA) * 12 * 6)
    fast = place_yu_rr(job, cluster, PlacementParams())
    cap = np.array([m.capacity.as_tuple() for m in cluster.machines])
    assert fast.solver == "fast-path"
    assert fast.end_slot - fast.start_slot + 1 == fastest_run_slots(job, cap, DELTA)
    assert fast.start_slot == 0 and fast.slots[0].total_workers == 12
    slow = place_yu_rr(job, cluster, PlacementParams(fast_path=False))
    assert slow.solver == "highs-lp" and slow.end_slot >= fast.end_slot
    want = math.ceil(job.workload / (12 * RESNET.nu_ex(DELTA)) - 1e-9)
    assert fast.end_slot == want - 1
