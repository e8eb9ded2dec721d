"""The layout of an ``allreduce`` job's ring, and its decision timed by the formula (pure;
docs/formulation.md §18).

Every policy counts an allreduce job's workers at the per-worker floors of
:func:`~...model.speed.worker_rates` (linear, conservative). Then, at its exit, the
decision is **settled** (:func:`settle`), the same for every arrival policy:

1. *no PS*: the PS entries the PS machinery gives a co-located slot (one, of zero demand)
   are dropped;
2. *pack* (``allreduce_pack = True``, the default): every run that spans several nodes
   is re-laid with the same worker count on the layout the ring formula makes fastest
   among those the room over the run's window holds (:func:`best_layout`: fewest nodes
   and equal counts where the formula prefers them), when that is faster than the layout
   as placed; the window only shrinks in step 4, so the room stays sufficient;
3. *fewer* (``allreduce_shrink = True``): each run keeps, within its own nodes and counts,
   the sub-layout the formula makes fastest, when fewer workers are faster (a heavy
   model: vgg-16's 4 workers on one node train 969 mini-batches a slot, 1 worker 1,121);
   dropping tasks only frees room;
4. *time*: the work of each run is its exact rate (:func:`~...model.speed.plan_rate`) ×
   its length; the run in which the work reaches V is cut to the slots it needs and the
   later runs dropped. The exact rate is at least the floor the policy counted, so the
   end only comes earlier and capacity still holds.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from ...model import ClusterSnapshot, Decision, JobRequest, Mode, SlotPlan
from ...model.allreduce import step_seconds
from ...model.speed import plan_rate
from .packing import fit_counts
from .residual import Residual, residual_from

IntArray = npt.NDArray[np.int64]

#: Work a settled decision may leave uncovered in floating point (``verify`` accepts
#: V·(1 − 10⁻⁹) − 10⁻⁶).
_TOLERANCE = 1e-9


def best_layout(job: JobRequest, fits: IntArray, workers: int) -> IntArray | None:
    """Per-machine counts of ``workers`` workers with the shortest ring step among the
    layouts ``fits`` (how many workers each machine holds) allows: for every node count k,
    the smallest largest-count g that the k machines with most room hold, then the counts
    as equal as the room allows. Ties: fewer nodes, then lower machine index. None when
    the machines together hold fewer than ``workers``."""
    order = np.lexsort((np.arange(len(fits)), -fits))  # most room first, then index
    ranked = fits[order]
    usable = int((ranked >= 1).sum())
    best: tuple[float, int, IntArray] | None = None
    for k in range(1, min(workers, usable) + 1):
        top = ranked[:k]
        g_lo = math.ceil(workers / k)
        if g_lo > int(top[0]):
            continue
        g = _smallest_g(top, workers, g_lo)
        if g is None:
            continue
        counts = _spread(top, workers, g)
        t = step_seconds(tuple(int(c) for c in counts), job.profile)
        if best is None or t < best[0] - 1e-12:
            out = np.zeros(len(fits), dtype=np.int64)
            out[order[:k]] = counts
            best = (t, k, out)
    return None if best is None else best[2]


def _smallest_g(top: IntArray, workers: int, g_lo: int) -> int | None:
    for g in range(g_lo, int(top[0]) + 1):
        if int(np.minimum(top, g).sum()) >= workers:
            return g
    return None


def _spread(top: IntArray, workers: int, g: int) -> IntArray:
    """Counts ≤ min(room, g), each ≥ 1, summing to ``workers``, as equal as possible: fill
    every machine to ⌊W/k⌋ where it can, then one more at a time in order, up to g."""
    k = len(top)
    cap = np.minimum(top, g)
    counts = np.minimum(cap, workers // k)
    left = workers - int(counts.sum())
    while left > 0:
        for i in range(k):
            if left and counts[i] < cap[i]:
                counts[i] += 1
                left -= 1
    return counts.astype(np.int64)


def settle(
    decision: Decision,
    job: JobRequest,
    residual: Residual | None,
    slot_seconds: float,
    shrink: bool = True,
) -> Decision:
    """``decision`` of an allreduce ``job`` settled (module docstring); a ``ps`` job's
    unchanged. ``residual``: the room the decision was taken in (None: do not re-pack);
    ``shrink``: step 3 (``allreduce_shrink``)."""
    if not job.is_allreduce or not decision.slots:
        return decision
    plans = [_no_ps(p) for p in decision.slots]
    actions: list[str] = []
    if residual is not None:
        packed = [_packed(p, job, residual, slot_seconds) for p in plans]
        if packed != plans:
            actions.append("ring: re-laid on the fastest layout the room holds")
        plans = packed
    if shrink:
        fewer = [_shrunk(p, job, slot_seconds) for p in plans]
        if fewer != plans:
            actions.append("ring: fewer workers, faster by the formula")
        plans = fewer
    plans, work = _timed(plans, job, slot_seconds)
    if plans[-1].stop != decision.slots[-1].stop:
        actions.append("ring: end from the all-reduce formula")
    return replace(
        decision,
        slots=tuple(plans),
        start_slot=plans[0].slot,
        end_slot=plans[-1].stop - 1,
        work_covered=work,
        repair_actions=decision.repair_actions + tuple(actions),
    )


def settle_on(
    decision: Decision,
    job: JobRequest,
    snapshot: ClusterSnapshot,
    pack: bool = True,
    shrink: bool = True,
) -> Decision:
    """:func:`settle` against the room ``snapshot``'s reservations leave (allreduce only;
    ``pack`` False: no re-packing)."""
    if not job.is_allreduce or not decision.slots:
        return decision
    if not pack:
        return settle(decision, job, None, snapshot.slot_seconds, shrink)
    t0 = min(decision.slots[0].slot, snapshot.now_slot)
    residual = residual_from(snapshot, t0).for_job(job)
    return settle(decision, job, residual, snapshot.slot_seconds, shrink)


def _no_ps(plan: SlotPlan) -> SlotPlan:
    return replace(plan, ps=()) if plan.ps else plan


def _packed(plan: SlotPlan, job: JobRequest, res: Residual, slot_seconds: float) -> SlotPlan:
    used = [(n, c) for n, c in plan.workers if c > 0]
    if len(used) < 2:
        return plan
    index = {name: i for i, name in enumerate(res.names)}
    room = res.window_min(plan.slot, plan.stop).copy()
    alpha = np.asarray(job.worker.as_tuple(), dtype=np.float64)
    fits = fit_counts(room, alpha)
    counts = best_layout(job, fits, plan.total_workers)
    if counts is None:
        return plan
    candidate = SlotPlan(
        plan.slot,
        Mode.DISTRIBUTED if int((counts > 0).sum()) > 1 else Mode.COLOCATED,
        tuple((res.names[i], int(c)) for i, c in enumerate(counts) if c > 0),
        (),
        plan.length,
    )
    if all(name in index for name, _ in used) and plan_rate(
        candidate, job, slot_seconds
    ) <= plan_rate(plan, job, slot_seconds) * (1 + 1e-12):
        return plan
    return candidate


def _shrunk(plan: SlotPlan, job: JobRequest, slot_seconds: float) -> SlotPlan:
    """The run on the fastest sub-layout of its own: at most its count on each of its
    nodes, any total (a ring of fewer workers may train faster: a heavy model's all-reduce
    can cost more than the extra workers add). Unchanged unless strictly faster."""
    names = [n for n, c in plan.workers if c > 0]
    own = np.array([c for _, c in plan.workers if c > 0], dtype=np.int64)
    best, best_rate = plan, plan_rate(plan, job, slot_seconds)
    for total in range(1, int(own.sum())):
        counts = best_layout(job, own, total)
        if counts is None:
            continue
        used = [(names[i], int(c)) for i, c in enumerate(counts) if c > 0]
        mode = Mode.COLOCATED if len(used) == 1 else Mode.DISTRIBUTED
        candidate = SlotPlan(plan.slot, mode, tuple(used), (), plan.length)
        r = plan_rate(candidate, job, slot_seconds)
        if r > best_rate * (1 + 1e-12):
            best, best_rate = candidate, r
    return best


def _timed(
    plans: list[SlotPlan], job: JobRequest, slot_seconds: float
) -> tuple[list[SlotPlan], float]:
    out: list[SlotPlan] = []
    work = 0.0
    need = job.workload * (1 - _TOLERANCE)
    for plan in plans:
        rate = plan_rate(plan, job, slot_seconds)
        if rate > 0 and work + rate * plan.length >= need:
            slots = max(1, math.ceil((job.workload - work) / rate - 1e-9))
            slots = min(slots, plan.length)
            out.append(replace(plan, length=slots))
            return out, work + rate * slots
        out.append(plan)
        work += rate * plan.length
    return out, work
