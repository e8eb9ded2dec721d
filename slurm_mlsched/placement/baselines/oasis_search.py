"""OASiS's schedule search for one job (steps 1–4 of :mod:`.oasis`), vectorized with numpy.

* **Segments**: reservations are intervals, so the prices are constant over runs of slots
  between two reservation boundaries; from the arrival a, segment s starts at slot p_s and
  holds ℓ_s slots (the last, after every reservation has ended, is open-ended).
* **Curves** (:func:`curves`): the per-slot greedy, run for every segment at once. The job
  grows in steps (:class:`Steps`: one worker with the PSs the PS rule then needs, PSs
  first; with a fixed PS count S the first step is S workers + S PSs), each task on the
  machine with the lowest log price ln Σ_r P_r·d̂_r where it fits. Step j of segment s has
  the log marginal cost c[s, j]; a slot of s holds at most ``levels[s]`` steps.
* **Split** (:func:`split`) for a completion slot t̂: the work needs ⌈V/ν⌉ worker-slots;
  the (segment, step) entries are taken in increasing order of their marginal cost per
  worker, c[s, j] − ln Δw_j, **ironed** (made non-decreasing over j within a segment, so a
  step is never taken before the ones below it: the PS steps make the curves non-convex),
  each entry giving Δw_j worker-slots in each slot of s inside [a, t̂], until the work is
  covered; the last entry may cover only the first u slots of its segment. For convex
  curves this is the dynamic program's optimum over slots.
* **Earliest end** (:func:`earliest_end`): the first t̂ by which every slot at its most
  steps covers the work.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...model import JobRequest
from ..program.eligibility import GPU
from ..program.packing import EPS
from .oasis_prices import log_prices, log_task_cost
from .reserved import Reserved

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

OPEN = 1 << 40  # slots of the open-ended last segment (the empty cluster after every end)
#: segments × machines × tasks beyond which the greedy runs on shortlists (below, the
#: shortlist costs more numpy calls than it saves)
SHORTLIST_FROM = 10_000


@dataclass(frozen=True)
class Steps:
    """How the job grows: per step j, Δw_j workers and Δs_j PSs; ``tasks`` lists every
    task of every step in the greedy's order (True = a PS), ``first_task[j]`` where step j
    begins in it (``first_task[J]`` = all)."""

    workers: IntArray
    ps: IntArray
    tasks: tuple[bool, ...]
    first_task: IntArray

    @staticmethod
    def of(job: JobRequest) -> Steps:
        most, least = job.max_distributed_workers(), job.min_distributed_workers()
        if most < least:
            w: list[int] = []
            p: list[int] = []
        elif job.ps_count is not None:
            w = [least] + [1] * (most - least)
            p = [job.ps_count] + [0] * (most - least)
        else:
            w = [1] * most
            p = [job.ps_needed(k) - job.ps_needed(k - 1) for k in range(1, most + 1)]
        tasks: list[bool] = []
        first = [0]
        for dw, dp in zip(w, p, strict=True):
            tasks += [True] * dp + [False] * dw
            first.append(len(tasks))
        return Steps(
            np.array(w, dtype=np.int64),
            np.array(p, dtype=np.int64),
            tuple(tasks),
            np.array(first, dtype=np.int64),
        )

    def __len__(self) -> int:
        return len(self.workers)

    def workers_at(self, level: IntArray) -> IntArray:
        """Workers after ``level`` steps (elementwise)."""
        cum = np.concatenate([[0], np.cumsum(self.workers)])
        out: IntArray = cum[level]
        return out


@dataclass(frozen=True)
class Context:
    """What the search needs of the job and the cluster."""

    job: JobRequest
    a: int
    nu: float  # ν_ex: mini-batches per worker and slot (OASiS runs distributed)
    need: int  # worker-slots: ⌈V / ν⌉
    ln_u: float
    ln_l: float
    capacity: FloatArray  # (H, 3)
    alpha: FloatArray  # a worker's demand (3,)
    beta: FloatArray  # a PS's demand (3,)
    alpha_hat: FloatArray  # the same in machine units
    beta_hat: FloatArray
    steps: Steps
    max_segments: int = 64
    ok: BoolArray | None = None  # the machines the job's GPU tasks may use (None: all)

    def room(self, used: FloatArray) -> FloatArray:
        """capacity − used (…, H, 3), with no GPU room where the job's GPU types exclude a
        machine (:mod:`...eligibility`)."""
        out: FloatArray = self.capacity - used
        if self.ok is not None and not bool(self.ok.all()):
            out[..., ~self.ok, GPU] = np.minimum(out[..., ~self.ok, GPU], 0.0)
        return out

    def unit(self, is_ps: bool) -> FloatArray:
        return self.beta_hat if is_ps else self.alpha_hat

    def demand(self, is_ps: bool) -> FloatArray:
        return self.beta if is_ps else self.alpha


@dataclass(frozen=True)
class Curves:
    """Per segment: ``cost`` (S, J) log marginal cost of each step (−inf past ``levels``),
    ``levels`` (S,) the most steps a slot holds, ``picks`` (S, T) each task's machine;
    ``first_cost[is_ps]`` (S, H): a first worker's / PS's log cost on each machine."""

    cost: FloatArray
    levels: IntArray
    picks: IntArray
    first_cost: dict[bool, FloatArray]


def _shortlist(ctx: Context, room: FloatArray, cost: dict[bool, FloatArray]) -> IntArray:
    """Per segment, the only machines the greedy can pick: for each task type, the T
    cheapest among those where one such task fits now (ties to the lower index), T = the
    job's tasks at its largest shape. A pick changes one machine, so the k-th pick of a type
    is a changed machine or one of the k cheapest unchanged ones. (S, K) machine indices in
    ascending order, −1 for a repeat."""
    limit = len(ctx.steps.tasks)
    lists = []
    for is_ps in (False, True):
        if is_ps not in ctx.steps.tasks:
            continue
        fits = (room >= ctx.demand(is_ps) - EPS).all(axis=2)
        ranked = np.argsort(np.where(fits, cost[is_ps], np.inf), axis=1, kind="stable")
        lists.append(ranked[:, :limit])
    out: IntArray = np.sort(np.concatenate(lists, axis=1), axis=1)
    out[:, 1:][out[:, 1:] == out[:, :-1]] = -1
    return out


def curves(ctx: Context, used: FloatArray) -> Curves:
    """The per-slot greedy on every segment at once (module docstring), on each segment's
    shortlist of machines (:func:`_shortlist`) for large problems (same picks)."""
    n_seg, n_mach = used.shape[:2]
    steps = ctx.steps
    room = ctx.room(used)
    price = log_prices(used, ctx.capacity, ctx.ln_u, ctx.ln_l)
    first = {k: log_task_cost(price, ctx.unit(k)) for k in (False, True)}
    if 2 * len(steps.tasks) < n_mach and n_seg * n_mach * len(steps.tasks) > SHORTLIST_FROM:
        machine = _shortlist(ctx, room, first)
        rows = np.arange(n_seg)[:, None]
        safe = np.maximum(machine, 0)
        dummy = machine < 0
        room = room[rows, safe]
        room[dummy] = -np.inf
        used = used[rows, safe]
        capacity = ctx.capacity[safe]
        cost = {k: np.where(dummy, np.inf, v[rows, safe]) for k, v in first.items()}
    else:
        machine = np.broadcast_to(np.arange(n_mach), (n_seg, n_mach))
        used = used.copy()
        capacity = np.broadcast_to(ctx.capacity, used.shape)
        cost = {k: v.copy() for k, v in first.items()}
    out_cost = np.full((n_seg, len(steps)), -np.inf)
    levels = np.zeros(n_seg, dtype=np.int64)
    picks = np.full((n_seg, len(steps.tasks)), -1, dtype=np.int64)
    alive = np.arange(n_seg)
    for j in range(len(steps)):
        acc = np.full(len(alive), -np.inf)
        for t in range(int(steps.first_task[j]), int(steps.first_task[j + 1])):
            is_ps = steps.tasks[t]
            demand = ctx.demand(is_ps)
            ok: BoolArray = np.asarray((room[alive] >= demand - EPS).all(axis=2))
            h = np.argmin(np.where(ok, cost[is_ps][alive], np.inf), axis=1)
            fits: BoolArray = ok[np.arange(len(alive)), h]
            alive, h, acc = alive[fits], h[fits], acc[fits]
            if not len(alive):
                return Curves(out_cost, levels, picks, first)
            acc = np.logaddexp(acc, cost[is_ps][alive, h])
            picks[alive, t] = machine[alive, h]
            room[alive, h] -= demand
            later = set(steps.tasks[t + 1 :])  # the task types whose prices still matter
            if later:
                used[alive, h] += demand
                row = log_prices(used[alive, h], capacity[alive, h], ctx.ln_u, ctx.ln_l)
                for k in later:
                    cost[k][alive, h] = log_task_cost(row, ctx.unit(k))
        out_cost[alive, j] = acc
        levels[alive] = j + 1
    return Curves(out_cost, levels, picks, first)


def segments(
    rsv: Reserved, a: int, stop: int | None, most: int
) -> tuple[IntArray, IntArray, FloatArray]:
    """Segment starts, lengths and the reserved usage (S, H, 3) over [a, stop) (stop None:
    every boundary, the last segment open-ended); ``a`` is the arrival slot ``rsv.t0``.
    Beyond ``most`` segments, consecutive ones are merged into ``most`` blocks of about as
    many segments each, holding the **most** reserved over their segments (so a placement
    that fits a block fits each of its slots; the open-ended empty tail stays its own
    segment)."""
    starts, lengths, used, _ = segment_blocks(rsv, a, stop, most)
    return starts, lengths, used


def segment_blocks(
    rsv: Reserved, a: int, stop: int | None, most: int
) -> tuple[IntArray, IntArray, FloatArray, bool]:
    """:func:`segments`, and whether they were merged into blocks.

    A segment begins at a and at each slot before ``stop`` where the usage changes; its
    usage is the level at a plus the changes up to its start (:class:`Reserved`). Merged
    blocks are computed from the changes alone (:func:`_block_peaks`), never as the dense
    (segments × machines × 3) array a whole-horizon window would need."""
    u = rsv.usage
    if a != u.t0:
        raise ValueError(f"segments from slot {a}, but the usage is kept from slot {u.t0}")
    k = len(u.times) if stop is None else int(np.searchsorted(u.times, stop, side="left"))
    times = u.times[:k]
    first = np.ones(k, dtype=np.bool_)
    first[1:] = times[1:] != times[:-1]
    seg = np.cumsum(first, dtype=np.int64)  # the segment each change starts (1, 2, …)
    points = np.concatenate([np.array([a], dtype=np.int64), times[first]])
    n = len(points)
    last = OPEN if stop is None else stop - int(points[-1])
    lengths = np.append(np.diff(points), last).astype(np.int64)
    body = n - 1 if stop is None else n  # the segments that may be merged
    if body > most:
        cuts = np.unique(np.linspace(0, body, most + 1).astype(np.int64)[:-1])
        if body < n:
            cuts = np.append(cuts, body)
        peaks = _block_peaks(rsv, seg, cuts)
        return points[cuts], np.add.reduceat(lengths, cuts), peaks, True
    used = np.zeros((n, rsv.n_machines, 3))
    used[0] = u.now
    if k:  # each change in its segment, then a running sum down the segments
        np.add.at(used, (seg, u.machine[:k]), u.delta[:k])
        if n <= 32:
            for s in range(1, n):  # faster than cumsum along axis 0 for a few rows
                used[s] += used[s - 1]
        else:
            np.cumsum(used, axis=0, out=used)
    if not rsv.integral:  # sums of whole numbers are exact; others carry rounding noise
        used = np.maximum(np.round(used, 9), 0.0)
    return points, lengths, used, False


def _block_peaks(rsv: Reserved, seg: IntArray, cuts: IntArray) -> FloatArray:
    """Per block of segments [cuts[b], cuts[b + 1]), machine and resource, the most
    reserved in any of its segments, from the first ``len(seg)`` changes: the level at the
    block's first segment (the level at a plus every change up to it), or the level a
    machine reaches after its own changes inside the block (after the last of those at one
    slot: changes at one slot take effect together)."""
    u = rsv.usage
    k = len(seg)
    mach, delta, times = u.machine[:k], u.delta[:k], u.times[:k]
    # the level at each block's first segment
    start = np.zeros((len(cuts) + 1, rsv.n_machines, 3))
    start[0] = u.now
    np.add.at(start, (np.searchsorted(cuts, seg, side="left"), mach), delta)
    np.cumsum(start, axis=0, out=start)
    peaks = start[:-1]
    if k:
        # each machine's level after each of its changes: a running sum per machine
        order = np.lexsort((times, mach))
        m, t, d = mach[order], times[order], delta[order]
        running = np.cumsum(d, axis=0)
        group = np.ones(k, dtype=np.bool_)
        group[1:] = m[1:] != m[:-1]
        begin = np.flatnonzero(group)
        before = np.zeros((len(begin), 3))
        before[1:] = running[begin[1:] - 1]
        level = u.now[m] + running - np.repeat(before, np.diff(np.append(begin, k)), axis=0)
        settled = np.ones(k, dtype=np.bool_)  # the last change of a machine at a slot
        settled[:-1] = (m[1:] != m[:-1]) | (t[1:] != t[:-1])
        block = np.searchsorted(cuts, seg[order], side="right") - 1
        np.maximum.at(peaks, (block[settled], m[settled]), level[settled])
    if not rsv.integral:
        peaks = np.maximum(np.round(peaks, 9), 0.0)
    return peaks


@dataclass(frozen=True)
class Window:
    """The segments from slot a on, their reserved usage and their curves."""

    starts: IntArray
    lengths: IntArray
    used: FloatArray
    curves: Curves
    open_ended: bool
    merged: bool = False  # blocks of segments (more than ``max_segments``)

    @staticmethod
    def of(ctx: Context, tl: Reserved, stop: int | None, before: Window | None = None) -> Window:
        """The window [a, stop). ``before``: a smaller window of the same arrival, whose
        curves are reused for the segments the two share (a segment's curve depends only
        on its usage), when neither is merged."""
        starts, lengths, used, merged = segment_blocks(tl, ctx.a, stop, ctx.max_segments)
        k = 0 if before is None or before.merged or merged else len(before.starts)
        if before is not None and k and k <= len(starts) and (before.starts == starts[:k]).all():
            c = before.curves
            rest = curves(ctx, used[k:])
            got = Curves(
                np.concatenate([c.cost, rest.cost]),
                np.concatenate([c.levels, rest.levels]),
                np.concatenate([c.picks, rest.picks]),
                {
                    kind: np.concatenate([v, rest.first_cost[kind]])
                    for kind, v in c.first_cost.items()
                },
            )
        else:
            got = curves(ctx, used)
        return Window(starts, lengths, used, got, stop is None, merged)

    def slots_until(self, end: int) -> IntArray:
        """Slots of each segment inside [a, end]."""
        stop = np.minimum(self.starts + self.lengths, end + 1)
        out: IntArray = np.maximum(stop - self.starts, 0)
        return out


def earliest_end(ctx: Context, win: Window) -> int | None:
    """E₀: the first slot by which every slot at its most steps covers the work."""
    most = ctx.steps.workers_at(win.curves.levels)
    cum = np.cumsum(most * win.lengths)
    k = int(np.searchsorted(cum, ctx.need))
    if k >= len(cum):
        return None
    before = int(cum[k - 1]) if k else 0
    return int(win.starts[k]) + math.ceil((ctx.need - before) / int(most[k])) - 1


@dataclass(frozen=True)
class Schedule:
    """Steps taken in every slot of each segment (``levels``), and ``partial`` = (segment,
    slots u, level) when the last entry covers only the first u slots of its segment."""

    end: int
    log_cost: float
    levels: IntArray
    partial: tuple[int, int, int] | None


@dataclass(frozen=True)
class Order:
    """The (segment, step) entries of a window by ironed marginal cost per worker."""

    seg: IntArray
    step: IntArray
    cost: FloatArray  # raw log marginal cost of the entry

    @staticmethod
    def of(ctx: Context, win: Window) -> Order:
        c = win.curves
        per_worker = c.cost - np.log(ctx.steps.workers)[None, :]
        ironed = np.maximum.accumulate(per_worker, axis=1)
        valid = np.arange(len(ctx.steps))[None, :] < c.levels[:, None]
        seg, step = np.nonzero(valid)
        order = np.lexsort((step, seg, ironed[seg, step]))
        return Order(seg[order], step[order], c.cost[seg, step][order])


def split(ctx: Context, win: Window, order: Order, end: int) -> Schedule | None:
    """The cheapest split of the work over [a, ``end``] (module docstring), None when the
    slots there cannot hold it."""
    n = win.slots_until(end)
    units = ctx.steps.workers[order.step] * n[order.seg]
    cum = np.cumsum(units)
    k = int(np.searchsorted(cum, ctx.need))
    if k >= len(cum):
        return None
    take = np.flatnonzero(units[:k] > 0)
    levels = np.bincount(order.seg[take], minlength=len(n)).astype(np.int64)
    terms = list(order.cost[take] + np.log(n[order.seg[take]]))
    s, j = int(order.seg[k]), int(order.step[k])
    left = ctx.need - (int(cum[k - 1]) if k else 0)
    used = math.ceil(left / int(ctx.steps.workers[j]))
    terms.append(float(order.cost[k]) + math.log(used))
    partial = None
    if used < n[s]:
        partial = (s, used, j + 1)
    else:
        levels[s] = j + 1
    running = np.flatnonzero(levels > 0)
    last = int((win.starts[running] + n[running] - 1).max()) if len(running) else -1
    if partial is not None:
        last = max(last, int(win.starts[s]) + used - 1)
    return Schedule(last, float(np.logaddexp.reduce(terms)), levels, partial)


def candidate_ends(ctx: Context, first: int, count: int) -> list[int]:
    """E₀, then the ends at durations ×√2 each, ``count`` in all (distinct)."""
    d0 = first - ctx.a + 1
    return sorted({ctx.a + math.ceil(d0 * math.sqrt(2.0) ** k - 1e-9) - 1 for k in range(count)})


def _dominates(sched: Schedule, a: int, log_utility: Callable[[int], float]) -> bool:
    """Whether no schedule ending later can pay more: its cost is below the utility lost by
    ending one slot later, ln c < ln(f(d) − f(d + 1)) (never for a time-insensitive job)."""
    d = sched.end - a + 1
    now, later = log_utility(d), log_utility(d + 1)
    lost = -math.expm1(later - now)  # (f(d) − f(d + 1)) / f(d), exact for tiny losses
    if not lost > 0:
        return False
    return sched.log_cost < now + math.log(lost)


def search(
    ctx: Context, tl: Reserved, count: int, log_utility: Callable[[int], float]
) -> tuple[Window, list[Schedule]] | None:
    """The window and the schedules of the candidate ends; None when the job's smallest
    shape never fits. First the window of the fastest run: if the earliest end is there and
    its schedule dominates every later one (:func:`_dominates`), it is the only candidate.
    Otherwise the window is cut after the last candidate, or spans every reservation when
    the earliest end is not in the first window."""

    def cut(stop: int) -> int | None:
        return None if stop >= tl.free_after else stop

    fastest = math.ceil(ctx.need / max(int(ctx.steps.workers.sum()), 1))
    win = Window.of(ctx, tl, cut(ctx.a + fastest + 1))
    first = earliest_end(ctx, win)
    if first is None:
        win = Window.of(ctx, tl, None, win)
        first = earliest_end(ctx, win)
        if first is None:
            return None
    else:
        found = split(ctx, win, Order.of(ctx, win), first)
        if found is not None and _dominates(found, ctx.a, log_utility):
            return win, [found]
    ends = candidate_ends(ctx, first, count)
    if not win.open_ended and int(win.starts[-1] + win.lengths[-1]) <= ends[-1]:
        win = Window.of(ctx, tl, cut(ends[-1] + 1), win)
    order = Order.of(ctx, win)
    schedules = [split(ctx, win, order, end) for end in ends]
    return win, [s for s in schedules if s is not None]
