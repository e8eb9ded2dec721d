"""``srtf``: shortest remaining time first, clairvoyant, preemptive and elastic, re-packed at
every arrival and completion. A re-allocating policy (``placement.reallocation``): replay
only. It is the reference DL-scheduling papers put beside Tiresias (Gu et al., NSDI 2019,
§6: "SRTF", which knows each job's remaining time) and the feasible neighbour of the
bound's own relaxed schedule (docs/formulation.md §15.10): the same order, on real
machines, in integral shapes, each change charged a restart.

**Order.** Job i's key is its remaining time at its fastest rate on this cluster,
k_i = V_i^left / R_i (R_i: the rate of the fastest shape the empty cluster holds for it,
:func:`best_shape` on the whole capacity); ties to the earlier job. It knows V_i^left,
as ``yu-rr`` and ``qssf`` know a job's work; ``tiresias`` does not.

**Shapes.** In a room, a job's *best shape* is the faster of (rates by
:meth:`~.reallocation.Allocation.rate`; a tie to co-location):

* co-located: the most workers w ≤ N that one machine holds beside one PS, on the machine
  that fits them most tightly (least GPU room left, then CPU, then the lower index:
  best fit, which keeps whole nodes for wide jobs);
* distributed: the most workers w ≤ N, within the PS rule, that the room holds, laid out
  holes first (:func:`tightest_spread`: the workers on the machines with the least room
  first, then the PSs the rule needs the same way). A spread run trains at ν_ex per
  worker wherever its tasks sit (an allreduce job: the ring's rate, its layout packed by
  :func:`~..program.ring.best_layout`), so filling holes costs it nothing and keeps whole
  machines whole for co-located runs. (Measured on the 103 ladder cells, 2026-12-06:
  mean avg JCT ÷ ``yu-rr``'s 1.071 holes first, 1.092 with Optimus's fewest machines,
  which put the PS of a one-node CPU job on an empty node and so lost that node to
  workers on the Mustang weeks, 1.073 with the workers on the fewest machines and the
  PSs holes first.) A job that no holes-first spread holds at any width even on the empty
  cluster (a fixed PS count whose PSs fit only where holes first put its workers) is laid
  out by the fallback of :func:`.task_layout.spread_for` instead, so it runs rather than
  waits forever.

**Allocation**, at every event, in key order, with ``room`` the capacity minus every
allocation kept or given so far *and* every running job's allocation not yet visited
(reserved until its turn, so a job is placed beside them, not over them). At its turn a
running job's own allocation A returns to the room; then the job's candidate is

* its best shape B in the room; or, if the room together with the reserved allocations
  of the later jobs (by key) holds a faster shape, that one, **evicting** the later jobs
  it needs (a co-located shape goes to the machine whose evictions spare the earliest
  keys — the machine whose earliest evicted job comes latest in key order, then the
  fewest GPUs evicted; a spread shape evicts, on each machine it is short on, the latest
  keys first). An evicted job's allocation returns to the room and the job is placed
  again at its own turn, if anything still fits it, with a restart when its allocation
  changes;
* a running job keeps A unless the candidate ends sooner after its restart:
  V/rate(A) > V/rate(candidate) + restart_s/Δ (slots; ``params.restart_s``), so a
  running job never moves (nor evicts) for a gain its restart eats;
* a job with no shape waits until the next event.

So between events no job with a larger key runs in a shape a job with a smaller key could
have taken faster: SRTF's rule, on machines. No wake-up is needed: between events the
running jobs' keys fall and the waiting jobs' stay, so the order among them never inverts.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ...model import ClusterSnapshot, JobRequest, Mode
from ..params import PlacementParams
from ..program.eligibility import BoolArray, allowed, masked
from ..program.packing import EPS, fit_counts
from .reallocation import Allocation, RunningJob
from .task_layout import Spread, spread_for, usage_rows, widest_spread
from .timeline import Timeline

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
POLICY = "srtf"


def _usage(job: JobRequest, alloc: Allocation, n: int) -> FloatArray:
    """(H, 3) usage of one allocation over ``n`` machines."""
    out = np.zeros((n, 3))
    rows, use = usage_rows([(job, alloc)])
    np.add.at(out, np.asarray(rows), np.asarray(use))
    return out


def _colocated(job: JobRequest, view: FloatArray) -> Allocation | None:
    """The most workers one machine holds beside a PS, on the tightest such machine."""
    alpha = np.asarray(job.worker.as_tuple())
    beta = np.asarray(job.ps.as_tuple())
    beside = view - beta
    holds = (beside >= -EPS).all(axis=1)
    fits = np.where(holds, np.minimum(fit_counts(beside, alpha), job.max_workers), 0)
    w = int(fits.max()) if len(fits) else 0
    if w < 1:
        return None
    left = view - alpha * w - beta
    cand = np.flatnonzero(fits >= w)
    h = int(cand[np.lexsort((cand, left[cand, 1], left[cand, 0]))[0]])
    ps = () if job.is_allreduce else ((h, 1),)
    return Allocation(Mode.COLOCATED, ((h, w),), ps)


def _tightest(room: FloatArray, demand: FloatArray, count: int) -> IntArray | None:
    """``count`` tasks of ``demand``, the machines with the least room first (of the
    resource the task needs most of: GPU, else CPU, else memory), each holding as many as
    fit; None when they do not all fit."""
    out = np.zeros(room.shape[0], dtype=np.int64)
    if count <= 0:
        return out
    fits = fit_counts(room, demand)
    main = int(np.flatnonzero(demand > 0)[0]) if (demand > 0).any() else 0
    order = np.lexsort((np.arange(room.shape[0]), room[:, main]))
    order = order[fits[order] > 0]
    took = np.minimum(fits[order], count)
    cum = np.cumsum(took)
    if not len(cum) or cum[-1] < count:
        return None
    last = int(np.searchsorted(cum, count))
    out[order[:last]] = took[:last]
    out[order[last]] = count - (int(cum[last - 1]) if last else 0)
    return out


def tightest_spread(
    room: FloatArray, alpha: FloatArray, workers: int, beta: FloatArray, ps: int
) -> tuple[IntArray, IntArray] | None:
    """A spread layout that fills holes: the workers on the machines with the least room
    first, then the PSs the same way on what is left (a spread run trains at ν_ex per
    worker wherever its tasks sit, so the whole machines stay whole for co-located runs)."""
    w = _tightest(room, alpha, workers)
    if w is None:
        return None
    p = _tightest(room - w[:, None] * alpha, beta, ps)
    return None if p is None else (w, p)


def _distributed(
    job: JobRequest, room: FloatArray, ok: BoolArray | None, capacity: FloatArray | None = None
) -> Allocation | None:
    """The most workers (≤ N, within the PS rule) the room holds spread, holes first (or,
    for a job holes first holds at no width on the empty cluster ``capacity``, by the
    fallback layout of :func:`.task_layout.spread_for`)."""
    spread: Spread = tightest_spread
    if capacity is not None:
        spread = spread_for(job, capacity, tightest_spread, ok=ok)
    return widest_spread(job, job.max_workers, room.copy(), spread, ok)


def best_shape(
    job: JobRequest,
    room: FloatArray,
    slot_seconds: float,
    ok: BoolArray | None = None,
    capacity: FloatArray | None = None,
) -> Allocation | None:
    """The job's fastest shape in ``room`` (module docstring), or None; ``room`` is not
    changed. ``ok``: the machines the job's GPU tasks may use (None: all); ``capacity``:
    the empty cluster, for a job no holes-first spread ever holds (:func:`_distributed`)."""
    view = masked(room, ok) if ok is not None else room
    colo = _colocated(job, view)
    dist = _distributed(job, room, ok, capacity)
    if dist is None:
        return colo
    if colo is None:
        return dist
    return dist if dist.rate(job, slot_seconds) > colo.rate(job, slot_seconds) + EPS else colo


_FASTEST: dict[tuple[object, ...], float] = {}
_FASTEST_ON: list[FloatArray] = []  # the capacity the cache holds rates for


def fastest_rate(
    job: JobRequest, capacity: FloatArray, slot_seconds: float, ok: BoolArray | None
) -> float:
    """R_i: the rate of the job's best shape on the empty cluster (mini-batches a slot).
    Cached for one capacity (one replay) at a time."""
    if not _FASTEST_ON or _FASTEST_ON[0] is not capacity:
        _FASTEST.clear()
        _FASTEST_ON[:] = [capacity]
    key = (job, None if ok is None else ok.tobytes(), slot_seconds)
    rate = _FASTEST.get(key)
    if rate is None:
        shape = best_shape(job, capacity, slot_seconds, ok, capacity)
        rate = _FASTEST[key] = 0.0 if shape is None else shape.rate(job, slot_seconds)
    return rate


def _evictions(
    need: FloatArray, room: FloatArray, later: list[tuple[int, FloatArray]]
) -> list[int] | None:
    """Which of ``later`` (job index, usage), latest key last, must leave so that ``need``
    fits ``room`` on every machine: on each short machine the latest keys first."""
    short = np.flatnonzero(((need - room) > EPS).any(axis=1))
    out: list[int] = []
    free = room.copy()
    for h in short:
        for i, use in reversed(later):
            if not ((need[h] - free[h]) > EPS).any():
                break
            if i in out or not (use[h] > EPS).any():
                continue
            out.append(i)
            free += use
        if ((need[h] - free[h]) > EPS).any():
            return None
    return out


def _cheapest_node(
    job: JobRequest,
    shape: Allocation,
    room: FloatArray,
    wider: FloatArray,
    later: list[tuple[int, FloatArray]],
    ok: BoolArray | None,
) -> tuple[Allocation, list[int]] | None:
    """A co-located ``shape`` moved to the machine whose evictions spare the earliest keys:
    the machine whose earliest evicted job is latest in key order, then the fewest GPUs
    evicted, then the lower index; with the evictions. None: no machine holds it.
    ``wider``: ``room`` with every allocation of ``later`` in it."""
    n = len(room)
    ((h0, w),) = shape.workers
    need0 = _usage(job, shape, n)[h0]
    view = masked(wider, ok) if ok is not None else wider
    best: tuple[tuple[float, float, int], Allocation, list[int]] | None = None
    rank = {k: pos for pos, (k, _) in enumerate(later)}
    for h in (int(x) for x in np.flatnonzero(((view - need0) >= -EPS).all(axis=1))):
        moved = Allocation(Mode.COLOCATED, ((h, w),), () if job.is_allreduce else ((h, 1),))
        need = np.zeros_like(room)
        need[h] = need0
        evict = _evictions(need, room, later)
        if evict is None:
            continue
        cost = (
            float(-min((rank[k] for k in evict), default=len(later))),
            float(sum(later[rank[k]][1][:, 0].sum() for k in evict)),
            h,
        )
        if best is None or cost < best[0]:
            best = (cost, moved, evict)
    return None if best is None else (best[1], best[2])


def reallocate_srtf(
    jobs: tuple[RunningJob, ...], cluster: ClusterSnapshot, slot: int, params: PlacementParams
) -> tuple[Allocation | None, ...]:
    """Clairvoyant shortest remaining time first, preemptive and elastic, re-packed on
    machines at every event (the module docstring)."""
    capacity = Timeline.of(cluster, slot).capacity
    delta = cluster.slot_seconds
    machines = cluster.machines
    n = len(capacity)
    oks = [allowed(j.request, machines) if machines else None for j in jobs]

    def key(i: int) -> tuple[float, int]:
        rate = fastest_rate(jobs[i].request, capacity, delta, oks[i])
        return (jobs[i].remaining / rate if rate > 0 else float("inf"), i)

    order = sorted(range(len(jobs)), key=key)
    use = {i: _usage(jobs[i].request, a, n) for i in order if (a := jobs[i].allocation) is not None}
    room = np.array(capacity, dtype=np.float64)
    held = np.zeros_like(room)  # what the reserved jobs hold: room + held = capacity − given
    for u in use.values():
        held += u
    room -= held
    reserved = set(use)  # running jobs not visited yet (nor evicted)
    out: list[Allocation | None] = [None] * len(jobs)
    restart = params.restart_s / delta
    for pos, i in enumerate(order):
        job, ok, left = jobs[i].request, oks[i], jobs[i].remaining
        current = jobs[i].allocation if i in reserved else None
        if current is not None:
            room += use[i]
            held -= use[i]
            reserved.discard(i)
        chosen = best_shape(job, room, delta, ok, capacity)
        evict: list[int] = []
        if reserved:  # every job still reserved comes later in the order
            wider = room + held
            faster = best_shape(job, wider, delta, ok, capacity)
            if faster is not None and (
                chosen is None or faster.rate(job, delta) > chosen.rate(job, delta) + EPS
            ):
                later = [(k, use[k]) for k in order[pos + 1 :] if k in reserved]
                if faster.mode is Mode.COLOCATED:
                    moved = _cheapest_node(job, faster, room, wider, later, ok)
                    if moved is not None:
                        chosen, evict = moved
                else:
                    found = _evictions(_usage(job, faster, n), room, later)
                    if found is not None:
                        chosen, evict = faster, found
        # a move pays a restart: the job keeps its allocation unless the new shape ends
        # sooner after it
        if (
            current is not None
            and chosen != current
            and (
                chosen is None
                or left / current.rate(job, delta) <= left / chosen.rate(job, delta) + restart
            )
        ):
            chosen, evict = current, []
        for k in evict:
            room += use[k]
            held -= use[k]
            reserved.discard(k)
        if chosen is not None:
            room -= _usage(job, chosen, n)
            out[i] = chosen
    return tuple(out)
