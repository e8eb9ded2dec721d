r"""The live queue's estimated starts and its distance from the lower bound (pure).

:func:`estimate_queue` takes the queue as one re-plan leaves it — the waiting jobs in
queue order, each with the decision the re-plan made for it when it made one (a start now,
or the tentative plan of a reserved job), and a snapshot whose reservations are what is
fixed: the running jobs until their expected ends and the decisions that already reserve —
and returns, per waiting job, an **estimated start** and, for the queue, the **plan ÷
lower bound** ratio (docs/formulation.md §14.9). No clock, no I/O: ``now`` is a parameter.

Estimated starts, if nothing else arrives and every running job ends at its expected end:

* a job the re-plan decided starts as decided;
* every other job, in queue order, at its earliest start with its requested width on the
  room the fixed reservations, the decided jobs and the jobs before it leave
  (:func:`.list_schedule.earliest_requested`, the list schedule the look-ahead uses; a
  width that never fits at once: the most workers one machine holds, once the cluster is
  free);
* unknown (``None``, with the reason) when the job cannot be placed, or when its start is
  at or after the placeholder end of a running job whose end Slurm does not know (no time
  limit: its reservation ends at a placeholder, so nothing behind it has a real estimate).

The ratio. Slots are counted from the current slot n; a waiting job i whose estimate ends
in slot e_i (inclusive) has the remaining term R_i = e_i − n + 1 (its Σ_{t ≥ n} z[i,t]).
The plan's value is P = Σ_i R_i over the waiting jobs with an estimate; the ratio is
P ÷ B, B the largest of two lower bounds on Σ_i R_i that hold for **every** schedule of
those jobs in constant shapes (the live, non-elastic form) that keeps the fixed
reservations:

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
  the k smallest sizes, so it ends no earlier than A⁻¹(p_(1) + … + p_(k)): Σ_k of that
  bounds P (all waiting jobs are released at n, so this is shortest-first on a machine of
  varying speed).

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
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from ..model import ClusterSnapshot, Decision, JobRequest
from ..placement.late_binding import without
from ..placement.list_schedule import arrival_of, earliest_requested, usage
from ..placement.nonelastic import Shape, end_slot
from ..placement.packing import fit_counts
from ..placement.params import PlacementParams
from ..placement.residual import FloatArray, Residual, residual_from

#: the resources of a row of usage, in order
RESOURCES = ("gpu", "cpu", "mem")


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
    before ``now``; ``source``: ``plan`` (the re-plan's decision), ``list`` (list
    scheduled) or ``unknown`` (then ``reason`` says why); ``alone_slots``: L_i."""

    job_id: str
    start_slot: int | None
    end_slot: int | None
    start: datetime | None
    source: str
    reason: str = ""
    alone_slots: int | None = None

    @property
    def known(self) -> bool:
        return self.end_slot is not None

    def to_json(self) -> dict[str, object]:
        return {
            "job_id": self.job_id,
            "start_slot": self.start_slot,
            "end_slot": self.end_slot,
            "start": None if self.start is None else self.start.isoformat(),
            "source": self.source,
            "reason": self.reason,
            "alone_slots": self.alone_slots,
        }


@dataclass(frozen=True)
class QueueEstimate:
    """The queue's estimates and its plan ÷ bound ratio (module docstring)."""

    now: datetime
    now_slot: int
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
    def estimated(self) -> int:
        """How many waiting jobs have an estimate (the jobs the ratio is over)."""
        return sum(1 for j in self.jobs if j.known)

    def by_job(self) -> dict[str, JobEstimate]:
        return {j.job_id: j for j in self.jobs}

    def to_json(self) -> dict[str, object]:
        return {
            "waiting": len(self.jobs),
            "estimated": self.estimated,
            "plan_slots": self.plan_slots,
            "bound_slots": self.bound_slots,
            "bound_kind": self.bound_kind,
            "ratio": self.ratio,
            "busy": self.busy,
            "busy_resource": self.busy_resource,
            "horizon": self.horizon.isoformat(),
        }


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
    bound, kind = queue_bound([job for job, _ in known], fixed, delta)
    ratio = 1.0 if not waiting else (plan / bound if known and bound > 0 else None)
    horizon = max((j.end_slot for _, j in known if j.end_slot is not None), default=n)
    runs = [u for job, _ in known for u in placed[job.job_id].runs]
    busy, name = held_share(fixed, runs, horizon)
    when = max(now, cluster.slot_start(horizon + 1)) if known else now
    return QueueEstimate(now, n, jobs, plan, bound, kind, ratio, busy, name, horizon, when)


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
    return JobEstimate(
        job.job_id, start, end, max(now, cluster.slot_start(start)), source, "", alone
    )


def _list_placed(
    job: JobRequest, res: Residual, params: PlacementParams, n: int, delta: float
) -> tuple[int, int, FloatArray, Residual] | None:
    """The job at its earliest start with its requested width on ``res``: start, end, its
    usage (H, 3) and the room left. A width that never fits at once: the most workers one
    machine holds beside a PS, from the slot the cluster is free. None when not even that
    fits."""
    arr = arrival_of(job, delta, res, params, n)
    end, left, shape = earliest_requested(arr, res)
    if shape is None:
        beside = fit_counts(res.capacity - arr.shape.beta, arr.shape.alpha)
        beside = np.where((res.capacity >= arr.shape.beta - 1e-9).all(axis=1), beside, 0)
        h = int(np.argmax(beside))
        count = int(min(beside[h], arr.shape.n_max))
        if count < 1:
            return None
        w = np.zeros(res.n_machines, dtype=np.int64)
        s = np.zeros(res.n_machines, dtype=np.int64)
        w[h], s[h] = count, 1
        shape = Shape(max(res.free_after, n), h, w, s)
        end = end_slot(arr, shape)
        left = res.minus(usage(arr, shape), shape.start, end + 1)
    return shape.start, end, usage(arr, shape), left


def fastest_on(job: JobRequest, room: FloatArray, slot_seconds: float) -> int | None:
    """The fewest slots of ``job`` in one constant shape on ``room`` (H, 3), by
    :func:`.list_schedule.fastest_run_slots`'s rule; None when no worker fits (beside one
    PS on one machine, or distributed)."""
    alpha = np.array(job.worker.as_tuple())
    beta = np.array(job.ps.as_tuple())
    beside = room - beta
    fits_ps = (beside >= -1e-9).all(axis=1)
    colo = int(np.where(fits_ps, fit_counts(beside, alpha), 0).max(initial=0))
    dist = int(min(job.max_distributed_workers(), fit_counts(room, alpha).sum()))
    rate = max(
        min(colo, job.max_workers) * job.profile.nu_in(slot_seconds),
        dist * job.profile.nu_ex(slot_seconds) if dist >= job.min_distributed_workers() else 0.0,
    )
    if rate <= 0:
        return None
    return max(1, math.ceil(job.workload / rate - 1e-9))


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


def pooled_from_now(
    jobs: Sequence[JobRequest], fixed: Residual, r: int, slot_seconds: float
) -> float:
    """The pooled-resource bound of resource ``r`` for ``jobs``, all waiting at
    ``fixed.t0`` (module docstring): Σ_k A⁻¹(p_(1) + … + p_(k)); 0 without capacity."""
    cap = float(fixed.capacity[:, r].sum())
    if cap <= 0 or not jobs:
        return 0.0
    sizes = sorted(
        j.workload * j.worker.as_tuple()[r] / (j.profile.nu_in(slot_seconds) * cap) for j in jobs
    )
    n = fixed.t0
    starts = [int(s) for s in fixed.seg_starts]
    rates = [float(fixed.seg_res[:, r, i].sum()) / cap for i in range(len(starts))]
    total, done, need, i = 0.0, 0.0, 0.0, 0  # done: A at the start of segment i
    for p in sizes:
        need += p
        while True:
            last = i == len(starts) - 1
            length = math.inf if last else starts[i + 1] - starts[i]
            if rates[i] > 0 and done + rates[i] * length >= need - 1e-12:
                total += starts[i] - n + (need - done) / rates[i]
                break
            if last:  # the last segment is the whole capacity: only with rate 0
                return math.inf
            done += rates[i] * length
            i += 1
    return total


def queue_bound(
    jobs: Sequence[JobRequest], fixed: Residual, slot_seconds: float
) -> tuple[float, str]:
    """B for ``jobs`` waiting at ``fixed.t0``: max(Σ_i L_i, pooled bound per resource),
    and which one it was (module docstring). Jobs that never fit count nothing."""
    if not jobs:
        return 0.0, ""
    best = float(sum(alone_from_now(j, fixed, slot_seconds) or 0 for j in jobs))
    kind = "alone from now"
    for r, name in enumerate(RESOURCES):
        value = pooled_from_now(jobs, fixed, r, slot_seconds)
        if math.isfinite(value) and value > best:
            best, kind = value, f"pooled {name} from now"
    return best, kind


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
