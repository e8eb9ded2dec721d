"""From worker/PS counts to machines, for the re-allocating policies (pure numpy).

``optimus`` and ``drf`` first decide how many workers W (and PSs S) each active job gets,
against the cluster's **total** capacity; then this module places them:

1. **keep** (``params.realloc_keep_placement``, default): a job whose counts did not change
   keeps its machines (no migration); its usage is taken out of the room first;
2. the other jobs are placed one by one, in arrival order, on what is left:
   * **co-located** if W workers and one PS fit on one machine (MODEL.md O3: one PS
     suffices there; the job then runs at θ_in);
   * otherwise **distributed** with the counts asked for (PS rule of MODEL.md §2);
   * which machines: the policy's :data:`Spread` (Optimus: the fewest machines, tasks
     spread evenly, :func:`fewest_machines`; DRF: first fit in node order,
     :func:`first_fit`);
   * a job that does not fit (the counts were decided on the total, and machines are
     fragmented) **sheds** workers one at a time (with the PSs the rule then needs) until it
     fits; with none left it waits until the next event.
   * a job that the policy's spread holds at **no** width even on the empty cluster (a
     fixed PS count whose PSs each fill a node, so that no *even* spread of its tasks
     exists; a PS that fits only on a node before the workers', which block first fit
     never tries) is laid out by a **fallback** spread instead (:func:`spread_for`,
     :func:`any_layout`); without it such a job would wait forever and the replay would
     stall. Every job the spread holds at some width on the empty cluster keeps it.

With a fixed PS count S (``--ps S``) a job runs distributed only with S ≤ W ≤ ⌊S·B_ex/b_ex⌋
workers and S PSs; other worker counts can only run co-located.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar, cast

import numpy as np
import numpy.typing as npt

from ...model import JobRequest, Machine, Mode
from ..program.eligibility import BoolArray, allowed, masked
from ..program.packing import EPS, fit_counts
from ..program.ring import best_layout
from .fifo import block_first_fit
from .reallocation import Allocation, Counts, RunningJob

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

_T = TypeVar("_T")

Spread = Callable[[FloatArray, FloatArray, int, FloatArray, int], tuple[IntArray, IntArray] | None]
"""``spread(room, alpha, workers, beta, ps)`` -> per-machine (workers, PSs), or None."""


def ps_for(job: JobRequest, workers: int) -> int:
    """PSs a job with ``workers`` workers holds in the allocation step: the PS rule when
    distributed is possible (``ps_needed``), else one (co-located only)."""
    if workers <= 0:
        return 0
    lo, hi = job.min_distributed_workers(), job.max_distributed_workers()
    if job.ps_count is not None and not lo <= workers <= hi:
        return 1
    return job.ps_needed(workers)


def fewest_machines(
    room: FloatArray, alpha: FloatArray, workers: int, beta: FloatArray, ps: int
) -> tuple[IntArray, IntArray] | None:
    """Optimus's placement: the smallest k such that the k machines with the most room
    (for workers; ties to the lower index) hold the job with its workers and its PSs each
    spread evenly (⌈n/k⌉ or ⌊n/k⌋ per machine; the extra workers on the first machines, the
    extra PSs on the last).

    k ranges over every machine count, not only up to the job's task count: past it (k > W
    + S) the spread is one worker on each of the first W machines and one PS on each of the
    last S of the k, with the machines between empty, so those k are one scan for the
    first run of S machines that hold a PS (:func:`_ps_window`). With every k open, each
    machine's share only shrinks when the job has fewer workers (or PSs), so a job that fits
    still fits with fewer: the shedding's bisection relies on it."""
    h = room.shape[0]
    fits = fit_counts(room, alpha)
    order = np.lexsort((np.arange(h), -fits))
    # the first machine takes ⌈workers/k⌉ workers: no k below ⌈workers/(most that fit)⌉
    # can hold the job (an exact shortcut: the same k is found, sooner)
    most = int(fits.max()) if h else 0
    if workers > 0 and most <= 0:
        return None
    start = max(1, -(-workers // most)) if workers > 0 else 1
    stop = min(h, workers + ps)
    for lo in range(start, stop + 1, _K_BLOCK):  # a block of k values checked at once
        ks = np.arange(lo, min(lo + _K_BLOCK, stop + 1), dtype=np.int64)
        ok = _even_spreads_fit(room[order[: int(ks[-1])]], alpha, workers, beta, ps, ks)
        if ok.any():
            k = int(ks[int(np.argmax(ok))])
            w, s = _even(workers, k, extra_first=True), _even(ps, k, extra_first=False)
            out_w = np.zeros(h, dtype=np.int64)
            out_s = np.zeros(h, dtype=np.int64)
            out_w[order[:k]], out_s[order[:k]] = w, s
            return out_w, out_s
    if stop < h and workers > 0 and ps > 0:
        j = _ps_window(room[order], alpha, workers, beta, ps)
        if j is not None:
            out_w = np.zeros(h, dtype=np.int64)
            out_s = np.zeros(h, dtype=np.int64)
            out_w[order[:workers]], out_s[order[j : j + ps]] = 1, 1
            return out_w, out_s
    return None


def _ps_window(
    room: FloatArray, alpha: FloatArray, workers: int, beta: FloatArray, ps: int
) -> int | None:
    """For the k beyond a job's ``workers`` + ``ps`` tasks (rows of ``room`` in the spread's
    order): where the first ``ps`` consecutive rows that each hold one PS start, after the
    ``workers`` rows that each take one worker and at least one empty row (so k > W + S),
    or None (also when those first rows do not each hold a worker)."""
    if not (room[:workers] >= alpha - EPS).all():
        return None
    holds: IntArray = np.asarray((room[workers + 1 :] >= beta - EPS).all(axis=1), dtype=np.int64)
    if len(holds) < ps:
        return None
    runs = np.convolve(holds, np.ones(ps, dtype=np.int64), mode="valid")
    full = np.flatnonzero(runs == ps)
    return workers + 1 + int(full[0]) if len(full) else None


#: k values of :func:`fewest_machines` checked in one array operation.
_K_BLOCK = 32


def _even(n: int, k: int, *, extra_first: bool) -> IntArray:
    """``n`` tasks over ``k`` machines evenly: ⌊n/k⌋ each, the n mod k extra ones on the
    first machines (``extra_first``) or on the last."""
    out = np.full(k, n // k, dtype=np.int64)
    if n % k:
        if extra_first:
            out[: n % k] += 1
        else:
            out[k - n % k :] += 1
    return out


def _even_spreads_fit(
    room: FloatArray, alpha: FloatArray, workers: int, beta: FloatArray, ps: int, ks: IntArray
) -> npt.NDArray[np.bool_]:
    """For each k of ``ks``: whether the first k rows of ``room`` hold ``workers`` and
    ``ps`` tasks spread as :func:`_even` spreads them (one array operation for all k)."""
    i = np.arange(room.shape[0], dtype=np.int64)[None, :]  # (1, H)
    k = ks[:, None]  # (K, 1)
    w = workers // k + (i < workers % k)
    s = ps // k + (i >= k - ps % k) * (ps % k > 0)
    need = w[:, :, None] * alpha + s[:, :, None] * beta  # (K, H, 3)
    fits = (room[None, :, :] >= need - EPS).all(axis=2) | (i >= k)
    out: npt.NDArray[np.bool_] = np.asarray(fits.all(axis=1), dtype=np.bool_)
    return out


def first_fit(
    room: FloatArray, alpha: FloatArray, workers: int, beta: FloatArray, ps: int
) -> tuple[IntArray, IntArray] | None:
    """First fit in node order, workers then PSs, each machine taking the longest run of
    the remaining tasks that fits (Slurm's block distribution, as ``fifo-*``)."""
    return block_first_fit(room, alpha, workers, beta, ps)


def any_layout(
    room: FloatArray, alpha: FloatArray, workers: int, beta: FloatArray, ps: int
) -> tuple[IntArray, IntArray] | None:
    """The fallback of :func:`spread_for`: the first layout found of block first fit
    (workers, then PSs from the last worker's machine on: :func:`first_fit`), the same with
    the PSs first (a PS that fits only on a machine before the workers'), and Optimus's
    even spread (:func:`fewest_machines`)."""
    got = block_first_fit(room, alpha, workers, beta, ps)
    if got is None and ps > 0:
        flipped = block_first_fit(room, beta, ps, alpha, workers)
        got = None if flipped is None else (flipped[1], flipped[0])
    return got if got is not None else fewest_machines(room, alpha, workers, beta, ps)


def _pairs(counts: IntArray) -> Counts:
    return tuple((int(h), int(counts[h])) for h in np.flatnonzero(counts))


def usage_rows(
    pairs: Sequence[tuple[JobRequest, Allocation]],
) -> tuple[list[int], list[tuple[float, float, float]]]:
    """(machine, usage) rows of every task group of the allocations (for one ``np.add.at``)."""
    rows: list[int] = []
    use: list[tuple[float, float, float]] = []
    for job, alloc in pairs:
        for demand, counts in ((job.worker, alloc.workers), (job.ps, alloc.ps)):
            g, c, m = demand.gpu, demand.cpu, demand.mem
            for h, n in counts:
                rows.append(h)
                use.append((g * n, c * n, m * n))
    return rows, use


def _one_machine(workers: IntArray, ps: IntArray) -> int | None:
    used = np.flatnonzero(workers + ps)
    return int(used[0]) if len(used) == 1 else None


def place_one(
    job: JobRequest,
    workers: int,
    ps: int,
    room: FloatArray,
    spread: Spread,
    shed: bool = True,
    ok: BoolArray | None = None,
) -> Allocation | None:
    """The job's tasks on ``room`` (module docstring, step 2), shedding workers until they
    fit (``shed=False``: all ``workers`` or nothing); ``room`` is reduced by what is
    placed. ``ok``: the machines the job's GPU tasks may use (None: all); the layout sees
    no GPU room on the others (:mod:`..eligibility`).

    Shedding finds the most workers that fit (co-located on one machine, else spread) by
    bisection rather than one worker at a time: both layouts only get easier with fewer
    workers (each machine's share and the PSs needed never grow), so the largest fitting
    count is the one the one-at-a-time scan would stop at, and the layout placed there is
    the same (``tests/unit/test_task_layout.py`` checks it against the scan)."""
    fit = _Fit(job, ps, room, spread, ok)
    for w in (workers, *(_shed_to(fit, workers) if shed else ())):
        done = fit.place(w, workers)
        if done is not None:
            return done
    return None


def widest_spread(
    job: JobRequest,
    workers: int,
    room: FloatArray,
    spread: Spread,
    ok: BoolArray | None = None,
) -> Allocation | None:
    """The most workers (at most ``workers``, within the job's distributed range and PS
    rule) that ``spread`` lays out on ``room``, placed as :func:`place_one` places that
    count (co-located if one machine holds it); ``room`` is reduced by what is placed.
    None where no count fits. Distributed layouts only get easier with fewer workers, so
    the count is found by bisection (:func:`_largest`)."""
    fit = _Fit(job, ps_for(job, workers), room, spread, ok)
    w = _largest(fit.distributed_fits, fit.lo, min(workers, fit.hi))
    return fit.place(w, workers) if w >= 1 else None


def _shed_to(fit: _Fit, workers: int) -> tuple[int, ...]:
    """The most workers below ``workers`` that fit, as a one-element tuple (none: ())."""
    best = max(
        _largest(lambda w: fit.colocated(w) is not None, 1, min(workers - 1, fit.colo_max)),
        _largest(fit.distributed_fits, fit.lo, min(workers - 1, fit.hi)),
    )
    return (best,) if best >= 1 else ()


def _largest(ok: Callable[[int], bool], lo: int, hi: int) -> int:
    """The largest w in [lo, hi] with ``ok(w)`` for a monotone ``ok`` (true up to some w),
    or 0."""
    if hi < lo or not ok(lo):
        return 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


class _Fit:
    """One job's layouts on one room (nothing is placed until :meth:`place`)."""

    def __init__(
        self,
        job: JobRequest,
        ps: int,
        room: FloatArray,
        spread: Spread,
        ok: BoolArray | None = None,
    ) -> None:
        self.job, self.ps, self.room, self.spread, self.ok = job, ps, room, spread, ok
        room = self.view()
        self.alpha = np.asarray(job.worker.as_tuple())
        self.beta = np.asarray(job.ps.as_tuple())
        self.lo, self.hi = job.min_distributed_workers(), job.max_distributed_workers()
        # necessary conditions (exact shortcuts): one machine holds w workers and a PS only
        # if w is at most the most any machine holds beside a PS; any layout needs its
        # total in the room's total
        beside = room - self.beta
        holds_ps = (beside >= -EPS).all(axis=1)
        fits = np.where(holds_ps, fit_counts(beside, self.alpha), 0)
        self.colo_max = int(fits.max()) if len(room) else 0
        self.total = room.sum(axis=0)

    def view(self) -> FloatArray:
        """The room as the job sees it (no GPU room where its GPU types exclude a node)."""
        return masked(self.room, self.ok)

    def n_ps(self, w: int, requested: int) -> int:
        s = self.ps if w == requested else ps_for(self.job, w)
        return max(s, self.job.ps_needed(w))

    def colocated(self, w: int) -> int | None:
        """The machine that holds all ``w`` workers and a PS (the spread's choice), or None."""
        if w > self.colo_max:
            return None
        colo = self.spread(self.view(), self.alpha, w, self.beta, 1)
        return None if colo is None else _one_machine(*colo)

    def distributed(self, w: int, n_ps: int) -> tuple[IntArray, IntArray] | None:
        if not self.lo <= w <= self.hi:
            return None
        if (self.alpha * w + self.beta * n_ps > self.total + EPS).any():
            return None
        return self.spread(self.view(), self.alpha, w, self.beta, n_ps)

    def _colocated_ps(self, h: int) -> tuple[tuple[int, int], ...]:
        """One PS beside co-located workers (none for an allreduce job)."""
        return () if self.job.is_allreduce else ((h, 1),)

    def distributed_fits(self, w: int) -> bool:
        return self.distributed(w, self.n_ps(w, -1)) is not None

    def place(self, w: int, requested: int) -> Allocation | None:
        """``w`` workers co-located if one machine holds them, else spread; reduces the
        room by what is placed."""
        alpha, beta, room = self.alpha, self.beta, self.room
        h = self.colocated(w)
        if h is not None:
            room[h] -= alpha * w + beta
            return Allocation(Mode.COLOCATED, ((h, w),), self._colocated_ps(h))
        dist = self.distributed(w, self.n_ps(w, requested))
        if dist is None:
            return None
        if self.job.is_allreduce:  # the fastest ring the room holds (program/ring.py)
            packed = best_layout(self.job, fit_counts(self.view(), alpha), w)
            if packed is not None:
                dist = (packed, np.zeros_like(packed))
        room -= dist[0][:, None] * alpha + dist[1][:, None] * beta
        if (h := _one_machine(*dist)) is not None:  # landed on one machine: one PS there
            room[h] += beta * (int(dist[1][h]) - 1)
            return Allocation(Mode.COLOCATED, ((h, w),), self._colocated_ps(h))
        return Allocation(Mode.DISTRIBUTED, _pairs(dist[0]), _pairs(dist[1]))


def _unchanged(alloc: Allocation, workers: int, ps: int) -> bool:
    if alloc.total_workers != workers:
        return False
    return alloc.mode is Mode.COLOCATED or alloc.total_ps == ps


def place_counts(
    jobs: Sequence[RunningJob],
    counts: Sequence[tuple[int, int]],
    capacity: FloatArray,
    spread: Spread,
    keep: bool,
    machines: Sequence[Machine] = (),
) -> tuple[Allocation | None, ...]:
    """Allocations for ``jobs`` with the (workers, PSs) of ``counts`` (module docstring),
    each laid out by ``spread`` or, for a job ``spread`` holds at no width on the empty
    cluster, by :func:`any_layout` (:func:`spread_for`); ``machines`` (in capacity order)
    give the nodes' GPU types for the jobs that name some (:mod:`..eligibility`)."""
    room = np.array(capacity, dtype=np.float64)
    out: list[Allocation | None] = [None] * len(jobs)
    todo: list[int] = []
    kept: list[tuple[JobRequest, Allocation]] = []
    for i, (job, (w, s)) in enumerate(zip(jobs, counts, strict=True)):
        if w <= 0:
            continue
        if keep and job.allocation is not None and _unchanged(job.allocation, w, s):
            kept.append((job.request, job.allocation))
            out[i] = job.allocation
        else:
            todo.append(i)
    if kept:
        rows, use = usage_rows(kept)
        np.subtract.at(room, np.asarray(rows), np.asarray(use))
    for i in todo:
        w, s = counts[i]
        request = jobs[i].request
        ok = allowed(request, machines) if machines else None
        own = spread_for(request, capacity, spread, ok=ok)
        out[i] = place_one(request, w, s, room, own, ok=ok)
    return tuple(out)


def spread_for(
    job: JobRequest,
    capacity: FloatArray,
    spread: Spread,
    fallback: Spread = any_layout,
    ok: BoolArray | None = None,
) -> Spread:
    """``spread``, or ``fallback`` when ``spread`` holds ``job`` at no width on the empty
    cluster (``capacity``, as the job's GPU types ``ok`` let it see it): a layout rule the
    job can never meet is replaced, the job is not left waiting for it (module docstring).
    The test is one :func:`place_one` with shedding on the empty cluster, which finds a
    width whenever one exists (shedding finds the most workers that fit); memoized
    (:func:`on_empty`)."""

    def never() -> bool:
        room = np.array(capacity, dtype=np.float64)
        w = job.max_workers
        return place_one(job, w, ps_for(job, w), room, spread, ok=ok) is None

    return fallback if on_empty(("never", spread, fallback), job, capacity, ok, never) else spread


def least_width(
    job: JobRequest,
    capacity: FloatArray,
    spread: Spread,
    fallback: Spread = any_layout,
    ok: BoolArray | None = None,
) -> int:
    """The fewest workers the job can run with on the empty cluster (``capacity``, seen
    through ``ok``) under :func:`spread_for`'s layout: 1 for nearly every job; more for a
    job whose narrow shapes exist only co-located and never fit one machine (a fixed PS
    count S lets it run distributed only from S workers on). An allocation that gives a
    job fewer workers gives it a shape no room can ever hold, which starts nothing and,
    when every job gets one, stalls the replay. 1 when no width fits (the job is then
    never placed, as before). Memoized (:func:`on_empty`)."""
    own = spread_for(job, capacity, spread, fallback, ok)

    def least() -> int:
        for w in range(1, job.max_workers + 1):
            room = np.array(capacity, dtype=np.float64)
            if place_one(job, w, ps_for(job, w), room, own, shed=False, ok=ok) is not None:
                return w
        return 1

    return on_empty(("least", own), job, capacity, ok, least)


def on_empty(
    what: tuple[object, ...],
    job: JobRequest,
    capacity: FloatArray,
    ok: BoolArray | None,
    compute: Callable[[], _T],
) -> _T:
    """``compute()``, memoized per question ``what``, job shape (what a layout reads of
    the job) and the GPU types' mask ``ok``, for one capacity at a time per key (a replay
    asks the same at every event)."""
    key = (
        *what, job.max_workers, job.worker, job.ps, job.ps_count, job.profile.ps_per_worker,
        job.is_allreduce, None if ok is None else ok.tobytes(),
    )  # fmt: skip
    cached = _ON_EMPTY.get(key)
    if cached is None or not (cached[0] is capacity or np.array_equal(cached[0], capacity)):
        cached = (capacity, compute())
        _ON_EMPTY[key] = cached
    return cast(_T, cached[1])


#: :func:`on_empty`'s answers: key → (the capacity they were found on, the answer).
_ON_EMPTY: dict[tuple[object, ...], tuple[FloatArray, object]] = {}
