r"""The live queue's estimated starts and its distance from the lower bound (pure).

:func:`estimate_queue` takes the queue as one re-plan leaves it — the waiting jobs in
queue order, each with the decision the re-plan made for it when it made one (a start now,
or the tentative plan of a reserved job), and a snapshot whose reservations are what is
fixed: the running jobs until their expected ends and the decisions that already reserve —
and returns, per waiting job, an **estimated start** and, for the queue, the **plan ÷
lower bound** ratio (docs/formulation.md §14.9). No clock, no I/O: ``now`` is a parameter.

Estimated starts, if nothing else arrives and every running job ends at its expected end:

* a job the re-plan decided starts as decided;
* every other job, in queue order, on the room the fixed reservations, the decided jobs
  and the jobs before it leave, in the earliest-ending of: its requested width at its
  earliest start (:func:`.list_schedule.earliest_requested`, the list schedule the
  look-ahead uses) and, from each slot where the room grows, the most workers any one
  machine holds beside a PS for the whole run (a narrower co-located start, as ``yu-rr``
  may choose; exact over every machine the job may use, :func:`_colocated_from`);
* unknown (``None``, with the reason) when the job cannot be placed, or when its start is
  at or after the placeholder end of a running job whose end Slurm does not know (no time
  limit: its reservation ends at a placeholder, so nothing behind it has a real estimate).

The ratio. Slots are counted from the current slot n; a waiting job i whose estimate ends
in slot e_i (inclusive) has the remaining term R_i = e_i − n + 1 (its Σ_{t ≥ n} z[i,t]).
The plan's value is P = Σ_i R_i over the waiting jobs with an estimate; the ratio is
P ÷ B, B a lower bound on Σ_i R_i that holds for **every** schedule of those jobs in
constant shapes (the live, non-elastic form) that keeps the fixed reservations, built from
two facts:

* **alone from now**: L_i = min over c ∈ {n} ∪ {slots where the fixed reservations' room
  grows} of (c − n) + d_i(c), d_i(c) the fewest slots of job i in one constant shape on
  the room at slot c (:func:`.list_schedule.fastest_run_slots`'s rule; candidates where
  nothing of the job fits are skipped). A start s in [c_k, c_k+1) sees at most the room of
  c_k (the room only shrinks between the slots where it grows), so R_i ≥ L_i and
  Σ_i L_i ≤ P;
* **pooled resource from now** (per resource r with C_r > 0): job i needs at least
  p_i = V_i·α_i[r] / (ν_in,i·C_r) slots of the whole cluster's r, and in slot t the
  waiting jobs together have at most a_r(t) = Σ_h room[h][r](t) / C_r of it. With A(τ)
  the room over [n, n + τ), the k-th job to finish in any schedule has finished at least
  the k smallest sizes, so it ends no earlier than a_k = A⁻¹(p_(1) + … + p_(k)) (all
  waiting jobs are released at n: shortest-first on a machine of varying speed).

So the k-th job to finish has R ≥ ⌈a_k⌉ and R ≥ its own L: for the schedule's order π,
P ≥ Σ_k max(⌈a_k⌉, L_π(k)) ≥ Σ_k max(⌈a_k⌉, L_(k)) with the L sorted ascending (max(a, b)
is a Monge cost, so the sorted matching is the cheapest). B is the largest of that over
the resources (Σ_i L_i without any): at least both Σ_i L_i and each pooled bound — or the
pooled LP with rate caps on the room from now (:func:`capped_from_now`; the pool above
lets one job use all of it, this one does not) when that is higher.

Both bounds count the running jobs' remaining work as the room they hold until their
expected ends; the running jobs' own remaining terms are the same in every schedule (they
never move) and are left out of both P and B, so the ratio measures only what the plan
decides. ``ratio`` is 1.0 with no waiting job, None when no waiting job has an estimate;
else P ÷ B ≥ 1, since the estimates form one feasible constant-shape schedule.

``busy`` says how full the plan keeps the cluster: the share of the cluster's GPU-slots
(CPU-slots on a cluster without GPUs) over [n, the last estimated end] held by the fixed
reservations and the estimates. A ratio near 1 with ``busy`` near 1 is a full cluster; a
ratio well above 1 is a plan far from what any schedule could reach.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np

from ..model import ClusterSnapshot, Decision, JobRequest
from ..model.speed import upper_worker_rate
from ..placement.params import PlacementParams
from ..placement.program.packing import EPS
from ..placement.program.residual import FloatArray, IntArray, Residual, residual_from
from ..placement.yu_rr.arrival import Arrival
from ..placement.yu_rr.late_binding import without
from ..placement.yu_rr.list_schedule import arrival_of, earliest_requested, fastest_on, usage
from ..placement.yu_rr.nonelastic import Shape, end_slot
from .capped_bound import (
    Pool,
    capped_jobs,
    columns,
    counted,
    find_prices,
    greedy_schedule,
    node_types,
    relaxation_total,
    type_sets,
)

#: the resources of a row of usage, in order
RESOURCES = ("gpu", "cpu", "mem")
#: From this busy share on, a queue is called full (``QueueEstimate.full``; choice,
#: docs/formulation.md §14.9).
FULL_SHARE = 0.90


@dataclass(frozen=True)
class QueuedJob:
    """A waiting job as the estimate sees it: its request on the snapshot's grid, the
    decision the re-plan made for it (None: not decided in this re-plan) and, when the
    re-plan could not place it, why (then it has no estimate)."""

    request: JobRequest
    plan: Decision | None = None
    unplaceable: str = ""


@dataclass(frozen=True)
class JobEstimate:
    """One waiting job's estimate (module docstring). ``start``: the estimated start, never
    before ``now``; ``end``: when its last slot ends; ``source``: ``plan`` (the re-plan's
    decision), ``list`` (list scheduled) or ``unknown`` (then ``reason`` says why);
    ``alone_slots``: L_i."""

    job_id: str
    start_slot: int | None
    end_slot: int | None
    start: datetime | None
    source: str
    reason: str = ""
    alone_slots: int | None = None
    end: datetime | None = None

    @property
    def known(self) -> bool:
        return self.end_slot is not None

    def to_json(self) -> dict[str, object]:
        """What a user reads (``mlsub queue --json``: each row's ``estimate``): the times,
        where they come from, why there is none."""
        return {
            "start": None if self.start is None else self.start.isoformat(),
            "end": None if self.end is None else self.end.isoformat(),
            "source": self.source,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class QueueEstimate:
    """The queue's estimates and its plan ÷ bound ratio (module docstring)."""

    now: datetime
    now_slot: int
    slot_seconds: float
    jobs: tuple[JobEstimate, ...]
    plan_slots: float  # P: Σ R_i over the jobs with an estimate
    bound_slots: float  # B (0 without estimates)
    bound_kind: str  # "alone from now" or "pooled <resource> from now" ("" without estimates)
    ratio: float | None  # P ÷ B; 1.0 without waiting jobs; None when none has an estimate
    busy: float  # share of busy_resource-slots held over [n, horizon_slot]
    busy_resource: str  # "gpu", or "cpu" on a cluster without GPUs
    horizon_slot: int  # the last estimated end (n without estimates)
    horizon: datetime  # when the last estimated run ends (now without estimates)

    @property
    def full(self) -> bool:
        """Whether the plan keeps the cluster full (``busy`` ≥ :data:`FULL_SHARE`)."""
        return self.busy >= FULL_SHARE

    @property
    def reason(self) -> str:
        """Why there is no ratio (``""`` when there is one)."""
        return "" if self.ratio is not None else "no waiting job has an estimate"

    @property
    def estimated(self) -> int:
        """How many waiting jobs have an estimate (the jobs the ratio is over)."""
        return sum(1 for j in self.jobs if j.known)

    def by_job(self) -> dict[str, JobEstimate]:
        return {j.job_id: j for j in self.jobs}

    def to_json(self) -> dict[str, object]:
        return {
            "waiting": len(self.jobs),
            "estimated": self.estimated,
            "slot_seconds": self.slot_seconds,
            "plan_slots": self.plan_slots,
            "bound_slots": self.bound_slots,
            "bound_kind": self.bound_kind,
            "ratio": self.ratio,
            "busy": self.busy,
            "busy_resource": self.busy_resource,
            "full": self.full,
            "horizon": self.horizon.isoformat(),
            "reason": self.reason,
        }


def bound_json(bound: QueueEstimate | None, reason: str = "") -> dict[str, object]:
    """``plan_vs_bound`` of ``mlsub queue --json`` and ``explain --json``: the same keys
    whether or not the estimate could be made (``reason``: why not)."""
    if bound is not None:
        return bound.to_json()
    keys = ("waiting", "estimated", "slot_seconds", "plan_slots", "bound_slots", "bound_kind")
    return {
        **dict.fromkeys(keys),
        **dict.fromkeys(("ratio", "busy", "busy_resource", "full", "horizon")),
        "reason": reason,
    }


def combined(estimates: Sequence[QueueEstimate]) -> QueueEstimate:
    """One estimate of a queue re-planned in node groups (jobs narrowed to different nodes
    by their ``#SBATCH`` lines or partitions, stepped one group after the other, each on
    its nodes around the earlier groups' starts): every group's job estimates, P and B
    summed, the largest busy share. Each group's B bounds its jobs given the earlier
    groups' starts now, so the sum bounds every schedule that starts those as the re-plan
    does (docs/formulation.md §14.9). One group: that group's estimate unchanged."""
    if not estimates:
        raise ValueError("no estimate to combine")
    if len(estimates) == 1:
        return estimates[0]
    first = estimates[0]
    jobs = tuple(j for e in estimates for j in e.jobs)
    plan = sum(e.plan_slots for e in estimates)
    bound = sum(e.bound_slots for e in estimates)
    known = any(j.known for j in jobs)
    ratio = 1.0 if not jobs else (plan / bound if known and bound > 0 else None)
    busiest = max(estimates, key=lambda e: e.busy)
    last = max(estimates, key=lambda e: e.horizon_slot)
    kinds = sorted({e.bound_kind for e in estimates if e.bound_kind})
    kind = f"summed over {len(estimates)} node groups ({'; '.join(kinds)})" if kinds else ""
    return QueueEstimate(
        first.now, first.now_slot, first.slot_seconds, jobs, plan, bound, kind, ratio,
        busiest.busy, busiest.busy_resource, last.horizon_slot, last.horizon,
    )  # fmt: skip


#: one placed job's run: (first slot, stop slot exclusive, per-slot usage per machine (H, 3))
Use = tuple[int, int, FloatArray]


@dataclass(frozen=True)
class Placed:
    """Where the estimate puts one waiting job: start, end (inclusive), ``plan`` or
    ``list``, and its runs."""

    start: int
    end: int
    source: str
    runs: tuple[Use, ...]


def estimate_queue(
    waiting: Sequence[QueuedJob],
    cluster: ClusterSnapshot,
    now: datetime,
    *,
    params: PlacementParams | None = None,
    unknown_ends: Collection[str] = (),
) -> QueueEstimate:
    """Estimated starts of ``waiting`` (in queue order) and the plan ÷ bound ratio at
    ``cluster.now_slot`` (module docstring). ``cluster.reservations``: what is fixed (the
    running jobs until their expected ends, the reserving decisions); ``unknown_ends``:
    the job ids among them whose end is a placeholder; ``now``: the wall time, within the
    current slot (no estimated start is before it)."""
    n, delta = cluster.now_slot, cluster.slot_seconds
    fixed = residual_from(cluster, n)
    placeholder = min(
        (r.end_slot for r in cluster.reservations if r.job_id in unknown_ends), default=None
    )
    placed = place_waiting(waiting, cluster, params or PlacementParams())
    jobs = tuple(_estimate(q, placed, fixed, now, cluster, placeholder) for q in waiting)
    known = [(q.request, j) for q, j in zip(waiting, jobs, strict=True) if j.end_slot is not None]
    plan = float(sum(j.end_slot - n + 1 for _, j in known if j.end_slot is not None))
    alone = [j.alone_slots or 1 for _, j in known]
    bound, kind = queue_bound([job for job, _ in known], alone, fixed, delta)
    capped = capped_from_now([job for job, _ in known], alone, cluster, fixed, bound)
    if capped > bound + 1e-9:
        bound, kind = capped, "rate caps on the room from now"
    ratio = 1.0 if not waiting else (plan / bound if known and bound > 0 else None)
    horizon = max((j.end_slot for _, j in known if j.end_slot is not None), default=n)
    runs = [u for job, _ in known for u in placed[job.job_id].runs]
    busy, name = held_share(fixed, runs, horizon)
    when = max(now, cluster.slot_start(horizon + 1)) if known else now
    return QueueEstimate(now, n, delta, jobs, plan, bound, kind, ratio, busy, name, horizon, when)


def place_waiting(
    waiting: Sequence[QueuedJob], cluster: ClusterSnapshot, params: PlacementParams
) -> dict[str, Placed]:
    """Every placeable waiting job's estimated run (module docstring): the re-plan's
    decisions as they are, then the others in queue order, list scheduled on the room
    left. A job missing from the result has no layout on this cluster."""
    n, delta = cluster.now_slot, cluster.slot_seconds
    index = cluster.machine_index()
    res = residual_from(cluster, n)
    out: dict[str, Placed] = {}
    for q in waiting:  # the re-plan's decisions first: they hold their room
        if q.plan is not None and not q.unplaceable:
            held = q.plan.reservations(q.request)
            runs = []
            for r in held:
                use = np.zeros((len(index), 3))
                use[index[r.machine]] = r.usage.as_tuple()
                runs.append((r.start_slot, r.end_slot, use))
            out[q.request.job_id] = Placed(q.plan.start_slot, q.plan.end_slot, "plan", tuple(runs))
            res = without(res, held, index)
    for q in waiting:
        job = q.request
        if q.unplaceable or job.job_id in out:
            continue
        got = _list_placed(job, res, params, n, delta)
        if got is not None:
            start, end, use, res = got
            out[job.job_id] = Placed(start, end, "list", ((start, end + 1, use),))
    return out


def _estimate(
    q: QueuedJob,
    placed: dict[str, Placed],
    fixed: Residual,
    now: datetime,
    cluster: ClusterSnapshot,
    placeholder: int | None,
) -> JobEstimate:
    job = q.request
    alone = alone_from_now(job, fixed, cluster.slot_seconds)
    if q.unplaceable:
        return JobEstimate(job.job_id, None, None, None, "unknown", q.unplaceable, alone)
    got = placed.get(job.job_id)
    if got is None:
        why = "no layout of the job fits this cluster"
        return JobEstimate(job.job_id, None, None, None, "unknown", why, alone)
    start, end, source = got.start, got.end, got.source
    if placeholder is not None and start >= placeholder:
        why = "it waits behind a running job whose end Slurm does not know (no time limit)"
        return JobEstimate(job.job_id, None, None, None, "unknown", why, alone)
    begins = max(now, cluster.slot_start(start))
    ends = max(now, cluster.slot_start(end + 1))
    return JobEstimate(job.job_id, start, end, begins, source, "", alone, ends)


def _list_placed(
    job: JobRequest, res: Residual, params: PlacementParams, n: int, delta: float
) -> tuple[int, int, FloatArray, Residual] | None:
    """The job's earliest-ending run on ``res`` among its requested width at its earliest
    start (:func:`.list_schedule.earliest_requested`) and, at each slot where the room
    grows, the most workers any one machine holds beside a PS for the whole run (a
    narrower co-located start, as ``yu-rr`` may choose; :func:`_colocated_from`): start,
    end, its usage (H, 3) and the room left. None when no worker ever fits beside a PS
    and the width never fits at once."""
    arr = arrival_of(job, delta, res, params, n)
    end, _, shape = earliest_requested(arr, res, room_left=False)
    best: Shape | None = shape
    best_end = end if shape is not None else math.inf
    view = res.for_job(job)  # no GPU room on machines of a type the job may not use
    beside = _beside_by_segment(view, arr)  # (H, S)
    most = int(beside.max(initial=0))  # in any machine and segment: no run has more
    if most >= 1:
        fastest = math.ceil(arr.shape.workload / (most * arr.shape.nu_in) - 1e-9)
        for sigma in (n, *(t for t in res.increase_slots() if t > n)):
            if sigma + fastest - 1 >= best_end:
                break  # no later start ends sooner
            sh = _colocated_from(arr, view, beside, sigma, best_end)
            if sh is not None:
                best, best_end = sh, end_slot(arr, sh)
    if best is None:
        return None
    last = end_slot(arr, best)
    use = usage(arr, best)
    return best.start, last, use, res.minus(use, best.start, last + 1)


def _beside_by_segment(res: Residual, arr: Arrival) -> IntArray:
    """Per machine and segment of ``res``: the most workers (≤ N) it holds beside one PS
    there: (H, S)."""
    shape = arr.shape
    seg = np.moveaxis(res.seg_res, 2, 1)  # (H, S, 3)
    ok = (seg >= shape.beta - 1e-9).all(axis=2)
    mask = shape.alpha > 0
    if not mask.any():
        fit = np.full(ok.shape, shape.n_max, dtype=np.int64)
    else:
        q = np.floor(np.maximum(seg[:, :, mask] - shape.beta[mask], 0.0) / shape.alpha[mask] + EPS)
        fit = q.min(axis=2).astype(np.int64)
    out: IntArray = np.minimum(np.where(ok, fit, 0), shape.n_max)
    return out


def _colocated_from(
    arr: Arrival, res: Residual, beside: IntArray, sigma: int, before: float
) -> Shape | None:
    """The earliest-ending co-located run from ``sigma`` (k workers and one PS on one
    machine for its whole run of d(k) = ⌈V/(k·ν_in)⌉ slots, k largest) when it ends
    before slot ``before``; else None. ``beside``: :func:`_beside_by_segment` of ``res``.

    k holds on machine h over the run iff k ≤ min of ``beside[h]`` over the segments the
    run covers. Start from k₀ = the most any machine holds at ``sigma`` and repeat
    k ← max_h min over the run of d(k) slots: every k stays ≥ the largest feasible k (a
    larger k is a shorter run, a shorter window, a larger minimum), and k stops falling
    exactly when some machine holds it for its whole run — so the fixed point is the
    largest feasible k, over every machine. Of the machines that hold it, the one with
    the most room at ``sigma`` (the first on ties)."""
    shape = arr.shape
    s0 = res.segment_of(sigma)
    k = int(beside[:, s0].max(initial=0))
    while k >= 1:
        d = math.ceil(shape.workload / (k * shape.nu_in) - 1e-9)
        if sigma + d - 1 >= before:
            return None  # k only falls from here, and the run only grows
        window = beside[:, s0 : res.segment_of(sigma + d - 1) + 1].min(axis=1)
        fit = int(window.max())
        if fit >= k:
            holds = np.flatnonzero(window >= k)
            h = int(holds[np.argmax(beside[holds, s0])])
            w = np.zeros(res.n_machines, dtype=np.int64)
            s = np.zeros(res.n_machines, dtype=np.int64)
            w[h], s[h] = k, 1
            return Shape(sigma, h, w, s)
        k = fit
    return None


def alone_from_now(job: JobRequest, fixed: Residual, slot_seconds: float) -> int | None:
    """L_i: the job's fewest slots from now through its end, alone on the room the fixed
    reservations leave (module docstring); None when it never fits."""
    n = fixed.t0
    best: int | None = None
    for c in (n, *fixed.increase_slots()):
        if best is not None and c - n + 1 >= best:
            break  # a later start cannot end sooner
        d = fastest_on(job, fixed.at(c), slot_seconds)
        if d is not None and (best is None or c - n + d < best):
            best = c - n + d
    return best


def pooled_finishes(
    jobs: Sequence[JobRequest], fixed: Residual, r: int, slot_seconds: float
) -> list[float]:
    """a_k = A_r⁻¹(p_(1) + … + p_(k)), k = 1 … len(jobs), counted from ``fixed.t0``: the
    earliest the k-th of ``jobs`` to finish can finish on the pooled resource ``r``
    (module docstring); empty without capacity of ``r``."""
    cap = float(fixed.capacity[:, r].sum())
    if cap <= 0 or not jobs:
        return []
    sizes = sorted(
        j.workload * j.worker.as_tuple()[r] / (upper_worker_rate(j, slot_seconds) * cap)
        for j in jobs
    )
    n = fixed.t0
    starts = [int(s) for s in fixed.seg_starts]
    rates = [float(fixed.seg_res[:, r, i].sum()) / cap for i in range(len(starts))]
    out: list[float] = []
    done, need, i = 0.0, 0.0, 0  # done: A at the start of segment i
    for p in sizes:
        need += p
        while True:
            last = i == len(starts) - 1
            length = math.inf if last else starts[i + 1] - starts[i]
            if rates[i] > 0 and done + rates[i] * length >= need - 1e-12:
                out.append(starts[i] - n + (need - done) / rates[i])
                break
            if last:  # the last segment is the whole capacity: only with rate 0
                return []
            done += rates[i] * length
            i += 1
    return out


def pooled_from_now(
    jobs: Sequence[JobRequest], fixed: Residual, r: int, slot_seconds: float
) -> float:
    """The pooled-resource bound of resource ``r`` alone: Σ_k a_k (0 without capacity)."""
    return sum(pooled_finishes(jobs, fixed, r, slot_seconds))


def queue_bound(
    jobs: Sequence[JobRequest], alone: Sequence[int], fixed: Residual, slot_seconds: float
) -> tuple[float, str]:
    """B for ``jobs`` waiting at ``fixed.t0`` with their L_i ``alone``: the largest over
    the resources r of Σ_k max(⌈a_k⌉, L_(k)) (both sorted; Σ_i L_i without capacity), and
    which it was (module docstring)."""
    if not jobs:
        return 0.0, ""
    low = sorted(alone)
    best, kind = float(sum(low)), "alone from now"
    for r, name in enumerate(RESOURCES):
        finishes = pooled_finishes(jobs, fixed, r, slot_seconds)
        if not finishes:
            continue
        value = float(sum(max(math.ceil(a - 1e-9), b) for a, b in zip(finishes, low, strict=True)))
        if value > best:
            best, kind = value, f"alone and pooled {name} from now"
    return best, kind


def capped_from_now(
    jobs: Sequence[JobRequest],
    alone: Sequence[int],
    cluster: ClusterSnapshot,
    fixed: Residual,
    beat: float = 0.0,
) -> float:
    """The pooled LP with rate caps (:mod:`.capped_bound`, docs/formulation.md §15.3) for
    ``jobs`` waiting at ``fixed.t0``: each job at most its fastest rate on ``cluster``'s
    machines (at its Δ), all of them in the room the fixed reservations leave per slot
    (the pool's share of it), each term at least its L_i ``alone``; slots counted from t0
    (0 without a job with work to count, and 0 without solving when a schedule of its
    relaxation is no higher than ``beat``, a bound the caller has)."""
    # capped_jobs's columns, on the same machines
    _, cols = columns(fixed.capacity, True, node_types(cluster), type_sets(jobs))
    if not jobs or not cols:
        return 0.0
    data = capped_jobs([replace(j, arrival_slot=0) for j in jobs], cluster)
    data = data.with_fewest(np.asarray(alone, dtype=np.int64))
    rows = np.stack(
        [
            fixed.seg_res[c.machines, c.resource, :].sum(axis=0) / c.total(fixed.capacity)
            for c in cols
        ],
        axis=1,
    )  # (segments, pooled resources)
    pool = Pool((np.asarray(fixed.seg_starts, dtype=np.int64) - fixed.t0), np.clip(rows, 0, 1))
    sub = counted(data)
    if not len(sub):
        return 0.0
    greedy = greedy_schedule(sub, pool)
    if relaxation_total(data, sub, greedy) <= beat:
        return 0.0  # the LP's optimum is below that schedule: it cannot beat ``beat``
    # the floors in L's terms, not the LP with them: the dearest LP, for 0.3 % on 1,000
    # waiting jobs at 1,024 machines (docs/formulation.md §15.3, Lemma 5)
    found = find_prices(data, greedy, pool=pool, floored_lp=False)
    return 0.0 if found is None else found.value


def held_share(fixed: Residual, uses: Sequence[Use], horizon: int) -> tuple[float, str]:
    """The share of the GPU-slots (CPU-slots without GPUs) over [t0, horizon] held by the
    fixed reservations and ``uses``, and which resource it is."""
    r = 0 if fixed.capacity[:, 0].sum() > 0 else 1
    cap = float(fixed.capacity[:, r].sum())
    n, stop = fixed.t0, horizon + 1
    if cap <= 0 or stop <= n:
        return 0.0, RESOURCES[r]
    edges = [*(int(s) for s in fixed.seg_starts), stop]
    held = 0.0
    for i in range(len(fixed.seg_starts)):
        lo, hi = max(edges[i], n), min(edges[i + 1], stop)
        if hi > lo:
            held += (cap - float(fixed.seg_res[:, r, i].sum())) * (hi - lo)
    for start, end, use in uses:
        held += float(use[:, r].sum()) * max(0, min(end, stop) - max(start, n))
    return min(1.0, held / (cap * (stop - n))), RESOURCES[r]
