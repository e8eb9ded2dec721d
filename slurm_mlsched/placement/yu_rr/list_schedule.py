"""List scheduling at the requested width (docs/formulation.md §14.9): the estimate that
late binding compares futures with.

:func:`earliest_requested` puts one job at its earliest start (not before its arrival)
with its requested width — all N workers and one PS co-located on the first machine that
holds them for the whole co-located run, else N distributed workers and the PSs they need
laid out first fit — on a residual, and returns its end and the room left.
:func:`list_schedule` does that for several jobs in a given order (each sees the ones
before it). Used by the joint program's trial score (the jobs a trial leaves waiting) and
by the look-ahead of a narrow start (:mod:`.lookahead`). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from ...model import JobRequest
from ..params import PlacementParams
from ..program.job_lp import FloatArray, IntArray, JobShape
from ..program.packing import EPS, first_fit, fit_counts
from ..program.residual import Residual
from ..program.widths import max_rate, widths
from .arrival import Arrival
from .nonelastic import Shape, end_slot, normalize


def usage(arr: Arrival, sh: Shape) -> FloatArray:
    """What ``sh`` holds on every machine: (H, 3)."""
    out: FloatArray = sh.w[:, None] * arr.shape.alpha + sh.s[:, None] * arr.shape.beta
    return out


def earliest_requested(
    arr: Arrival, res: Residual, room_left: bool = True
) -> tuple[int, Residual, Shape | None]:
    """The job at its earliest start ≥ ``arr.a`` with its requested width on ``res``: its
    end, the room left and the shape (None when the width never fits at once: then the
    most workers one machine holds, on the empty cluster, gives the end). The job's tasks
    fit on ``res`` as the job sees it (:meth:`.Residual.for_job`); the room left is
    ``res`` minus them (``room_left`` False: ``res`` itself, for a caller that reads only
    the end and the shape)."""
    for sigma in _candidate_starts(arr, res):
        got = requested_at(arr, res, sigma, room_left)
        if got is not None:
            return got
    shape, view = arr.shape, res.for_job(arr.job)
    sigma = max(res.free_after, arr.a)
    fit = int(min(fit_counts(view.capacity - shape.beta, shape.alpha).max(), shape.n_max))
    rate = max(fit, 1) * shape.nu_in
    return sigma + math.ceil(shape.workload / rate - 1e-9) - 1, res, None


def _candidate_starts(arr: Arrival, res: Residual) -> Iterator[int]:
    """The starts :func:`earliest_requested` tries, in order: ``arr.a`` and every slot
    after it where the room grows, less those where :func:`_may_start` says the requested
    width cannot fit (requested_at's own tests would fail there: the call is spared)."""
    view = res.for_job(arr.job)
    possible = _may_start(arr, view)
    for sigma in (arr.a, *(t for t in res.increase_slots() if t > arr.a)):
        if possible[view.segment_of(sigma)]:
            yield sigma


def fewest_requested_slots(shape: JobShape) -> int:
    """No run of the job at its requested width (as :func:`requested_at` and
    :func:`earliest_requested` place it: N co-located, or the distributed width at the
    network rate, or that width co-located once normalized) takes fewer slots:
    ⌈V / (max(N, N_ex) · max(ν_in, ν_ex))⌉, 0 for no work."""
    rate = max(shape.n_max, shape.n_dist_max) * max(shape.nu_in, shape.nu_ex)
    return math.ceil(shape.workload / rate - 1e-9) if rate > 0 else 0


def _may_start(arr: Arrival, view: Residual) -> npt.NDArray[np.bool_]:
    """Per segment of ``view``: whether a start there may pass :func:`requested_at`'s
    tests, over the run and not only its first slot (some machine holds all N workers and
    a PS in every segment the co-located run covers from the segment's start, or the
    cluster's total room holds the N distributed workers in every segment their run
    covers). Necessary conditions only: a start failing them cannot fit, so the scan
    skips it without a call; one with them is still tried whole."""
    shape = arr.shape
    seg = view.seg_res  # (H, 3, S)
    starts = view.seg_starts
    need_colo = shape.alpha * shape.n_max + shape.beta
    # a machine's room never exceeds its capacity: only these can ever hold them
    big = np.flatnonzero((view.capacity >= need_colo - 1e-9).all(axis=1))
    if len(big):
        ok_colo = np.asarray((seg[big] >= need_colo[None, :, None] - 1e-9).all(axis=1), dtype=bool)
        out = _all_over_runs(ok_colo, starts, arr.d_min).any(axis=0)
    else:
        out = np.zeros(seg.shape[2], dtype=bool)
    w_ex = shape.n_dist_max
    if w_ex >= shape.n_dist_min and w_ex:
        d_ex = math.ceil(shape.workload / (w_ex * shape.nu_ex) - 1e-9)
        if d_ex:
            mask = shape.alpha > 0
            if mask.any():  # workers that fit machine by machine, summed (PSs aside)
                q = np.floor(np.maximum(seg[:, mask, :], 0.0) / shape.alpha[mask, None] + EPS)
                total_ok = np.asarray(q.min(axis=1).sum(axis=0) >= w_ex, dtype=bool)
            else:
                total_ok = np.ones(seg.shape[2], dtype=bool)
            out = out | _all_over_runs(total_ok[None, :], starts, d_ex)[0]
    return np.asarray(out)


def _all_over_runs(
    ok: npt.NDArray[np.bool_], starts: IntArray, length: int
) -> npt.NDArray[np.bool_]:
    """``ok`` (R, S) per segment → whether it holds in every segment a run of ``length``
    slots from each segment's first slot covers (R, S)."""
    last = np.searchsorted(starts, starts + max(length, 1) - 1, side="right") - 1
    bad = np.cumsum(~ok, axis=1)
    before = np.concatenate([np.zeros((ok.shape[0], 1), dtype=bad.dtype), bad[:, :-1]], axis=1)
    out: npt.NDArray[np.bool_] = (bad[:, last] - before) == 0
    return out


def requested_at(
    arr: Arrival, res: Residual, sigma: int, room_left: bool = True
) -> tuple[int, Residual, Shape] | None:
    """The job started at ``sigma`` with its requested width on ``res`` (all N workers and
    one PS co-located on the first machine that holds them for the whole co-located run,
    else N distributed workers and their PSs first fit), its end and the room left; None
    when it does not fit then. The job's tasks fit on ``res`` as the job sees it
    (:meth:`.Residual.for_job`: no GPU room on nodes of a type it may not use); the room
    left is ``res`` minus them (``room_left`` False: ``res`` itself, not computed)."""
    shape, job = arr.shape, arr.job
    view = res.for_job(job)
    h_count = res.n_machines
    need_colo = shape.alpha * shape.n_max + shape.beta
    w_ex = shape.n_dist_max
    # The room over a window is at most the room in its first slot: machines (and totals)
    # that fail at ``sigma`` fail over the window, so the window minimum is taken only over
    # the machines that pass there (same answer, far less work on a full, long residual).
    first = view.at(sigma)
    rows = np.flatnonzero((first >= need_colo - 1e-9).all(axis=1))
    ok = rows
    if len(rows):
        mins = view.window_min(sigma, sigma + arr.d_min, rows)
        ok = rows[(mins >= need_colo - 1e-9).all(axis=1)]
    if len(ok):
        h = int(ok[0])
        w = np.zeros(h_count, dtype=np.int64)
        s = np.zeros(h_count, dtype=np.int64)
        w[h], s[h] = shape.n_max, 1
        sh = Shape(sigma, h, w, s)
    elif w_ex >= shape.n_dist_min and w_ex:
        d_ex = math.ceil(shape.workload / (w_ex * shape.nu_ex) - 1e-9)
        if not d_ex:
            return None
        if (first.sum(axis=0) < shape.alpha * w_ex - 1e-9).any():
            return None
        room = view.window_min(sigma, sigma + d_ex).copy()
        if (room.sum(axis=0) < shape.alpha * w_ex - 1e-9).any():
            return None
        order = np.arange(h_count, dtype=np.int64)
        n_ps = job.ps_needed(w_ex)
        s = first_fit(room, shape.beta, n_ps, order)
        w = first_fit(room, shape.alpha, w_ex, order)
        if int(w.sum()) != w_ex or int(s.sum()) != n_ps:
            return None
        sh = Shape(sigma, -1, w, s)
        normalize(sh)
    else:
        return None
    end = end_slot(arr, sh)
    return end, res.minus(usage(arr, sh), sigma, end + 1) if room_left else res, sh


def fastest_run_slots(job: JobRequest, capacity: FloatArray, slot_seconds: float) -> int:
    """The fewest slots ``job`` can take in one constant shape on machines of ``capacity``
    (H, 3): all its workers co-located beside one PS on one machine (at most w_c = the most
    one machine holds, at most N) at the internal rate, or distributed (at most
    w_d = min(N, the workers all machines hold)) at the network rate:
    ⌈V / max(w_c·ν_in, w_d·ν_ex)⌉, at least 1 (``shortest_slots`` assumes N co-located,
    which a wide job on small machines never gets)."""
    got = fastest_on(job, capacity, slot_seconds)
    return job.shortest_slots(slot_seconds) if got is None else got


def fastest_on(job: JobRequest, room: FloatArray, slot_seconds: float) -> int | None:
    """The fewest slots of ``job`` in one constant shape on ``room`` (H, 3) — the rule of
    :func:`fastest_run_slots` — or None when no worker fits (beside one PS on one machine,
    or distributed)."""
    rate = max_rate(job, widths(job, room), slot_seconds)
    if rate <= 0:
        return None
    return max(1, math.ceil(job.workload / rate - 1e-9))


@dataclass(frozen=True)
class Listed:
    """One job of a list schedule: its end slot, its term end − arrival + 1, its start
    (None when its width never fits at once) and whether it runs co-located."""

    job_id: str
    end: int
    term: int
    start: int | None = None
    colocated: bool = False


def arrival_of(
    job: JobRequest, slot_seconds: float, res: Residual, params: PlacementParams, a: int
) -> Arrival:
    """An :class:`Arrival` of ``job`` decided from slot ``a`` (no co-location candidates:
    list scheduling needs none)."""
    shape = JobShape.of(job, slot_seconds)
    return Arrival(job, shape, res, a, job.shortest_slots(slot_seconds), (), (), params)


def listed(arrs: Iterable[Arrival], res: Residual) -> Iterator[tuple[Listed, Residual]]:
    """``arrs`` in the given order, each at :func:`earliest_requested` on what the ones
    before it left, one at a time with the room left after it (a caller may stop early);
    the terms are counted from each job's own ``a``."""
    for arr in arrs:
        end, res, shape = earliest_requested(replace(arr, res=res), res)
        start = None if shape is None else shape.start
        colocated = shape is not None and shape.colo >= 0
        yield Listed(arr.job.job_id, end, end - arr.a + 1, start, colocated), res


def list_schedule(arrs: Sequence[Arrival], res: Residual) -> tuple[tuple[Listed, ...], Residual]:
    """:func:`listed` to its end: every job's term and the room left."""
    out: list[Listed] = []
    left = res
    for one, after in listed(arrs, res):
        out.append(one)
        left = after
    return tuple(out), left


def rate_bound(arr: Arrival, room: FloatArray) -> float:
    """An upper bound on the job's training rate (mini-batches per slot) in any constant
    shape that fits ``room`` (H, 3): co-located on any machine beside one PS, or
    distributed over all of them."""
    shape = arr.shape
    colo = min(int(fit_counts(room - shape.beta, shape.alpha).max()), shape.n_max)
    dist = min(int(fit_counts(room, shape.alpha).sum()), shape.n_dist_max)
    rate_ex = shape.nu_ex * dist if dist >= shape.n_dist_min else 0.0
    return max(shape.nu_in * colo, rate_ex)


def start_now_end_bound(arr: Arrival) -> int | None:
    """A lower bound on the end of any constant-shape run that starts at ``arr.a`` (None:
    nothing of the job fits then): the smallest d ≥ d_min with d · (the rate bound over
    the room of [a, a + d)) ≥ V. The room of [a, a + d) is the running minimum of the
    residual's segments, so every segment is checked at once."""
    res, a, shape = arr.res, arr.a, arr.shape
    i0 = res.segment_of(a)
    # The room of [a, seg end) only shrinks with the segment: a machine with no room for a
    # worker in the first one holds none in any, so only the others are followed.
    first = fit_counts(res.seg_res[:, :, i0], shape.alpha)
    rows = np.flatnonzero(first >= 1)
    if len(rows) == 0:
        return None  # no worker fits at a: no run starts then
    room = np.minimum.accumulate(res.seg_res[rows, :, i0:], axis=2)  # (H', 3, S): [a, seg end)
    starts = res.seg_starts[i0:].astype(np.int64) - a  # offsets; the first is ≤ 0
    highs = np.r_[starts[1:], np.iinfo(np.int64).max // 2]  # d in (start, high] → segment k
    colo = np.minimum(_fits(room - shape.beta[None, :, None], shape.alpha).max(axis=0), shape.n_max)
    dist = np.minimum(_fits(room, shape.alpha).sum(axis=0), shape.n_dist_max)
    rate = np.maximum(
        shape.nu_in * colo, np.where(dist >= shape.n_dist_min, shape.nu_ex * dist, 0.0)
    )
    with np.errstate(divide="ignore"):
        need = np.where(rate > 0, np.ceil(shape.workload / rate - 1e-9), np.inf)
    lows = np.maximum(starts + 1, max(1, arr.d_min))
    d = np.maximum(lows, need)
    ok = np.flatnonzero((rate > 0) & (d <= highs) & (lows <= highs))
    if len(ok) == 0:
        return None
    return a + int(d[ok[0]]) - 1


def _fits(room: FloatArray, demand: FloatArray) -> IntArray:
    """:func:`.packing.fit_counts` over (H, 3, S) rooms → (H, S)."""
    mask = demand > 0
    if not mask.any():
        return np.full((room.shape[0], room.shape[2]), 10**9, dtype=np.int64)
    q = np.floor(np.maximum(room[:, mask, :], 0.0) / demand[mask][None, :, None] + EPS)
    out: IntArray = np.minimum(q.min(axis=1), 10**9).astype(np.int64)
    return out


def earliest_colocated_end(arr: Arrival, after: int) -> int | None:
    """The end of the job's earliest start after slot ``after`` with all N workers and one
    PS co-located on one machine for the whole co-located run (its fastest shape), or None
    when no machine ever holds them."""
    shape, res = arr.shape, arr.res
    need = shape.alpha * shape.n_max + shape.beta
    # a machine's room never exceeds its capacity: only these can ever hold them
    big = np.flatnonzero((res.capacity >= need - 1e-9).all(axis=1))
    if len(big) == 0:
        return None
    for sigma in (t for t in res.increase_slots() if t > after):
        if (res.window_min(sigma, sigma + arr.d_min, big) >= need - 1e-9).all(axis=1).any():
            return sigma + arr.d_min - 1
    return max(res.free_after, after + 1) + arr.d_min - 1


def later_start_ends_sooner(arr: Arrival) -> bool:
    """Whether some later start — at the requested width (:func:`earliest_requested`) or
    all N workers co-located (:func:`earliest_colocated_end`) — ends before any start at
    ``arr.a`` could: then a decision that minimizes the job's end never starts it now (a
    screen that spares the decision)."""
    now_end = start_now_end_bound(arr)
    if now_end is None:
        return True
    colo = earliest_colocated_end(arr, arr.a)
    if colo is not None and colo < now_end:
        return True
    return _requested_later_ends_before(arr, now_end)


def _requested_later_ends_before(arr: Arrival, before: int) -> bool:
    """Whether the job's earliest start at its requested width (:func:`earliest_requested`)
    lies after ``arr.a`` and ends before slot ``before``: the same scan, stopped at the
    first start σ from which no run of that width can end before it (σ +
    :func:`fewest_requested_slots` − 1 ≥ ``before``)."""
    shortest = fewest_requested_slots(arr.shape)
    for sigma in _candidate_starts(arr, arr.res):
        if sigma + shortest - 1 >= before:
            return False  # every start from here ends at or after ``before``
        got = requested_at(arr, arr.res, sigma, room_left=False)
        if got is not None:
            return sigma > arr.a and got[0] < before
    return False
