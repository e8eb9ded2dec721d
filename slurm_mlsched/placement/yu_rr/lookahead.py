r"""Expected arrivals in late-binding ``yu-rr``'s choice of width (docs/formulation.md §14.7).

A *narrow* start — one that runs the job longer than its fastest shape on this cluster
would (fewer workers than it could have, or distributed where it could be co-located) —
ends that job sooner than waiting for that shape would, but it holds part of the cluster
for its whole, longer run — non-elastic, it never gives it back — while later jobs arrive and
would have used it. The per-job and joint decisions see only the jobs already waiting, so
on their own they start a long job at whatever width is free (on Pollux workload 2 at
Δ = 60 s, a 48-GPU job alone in the queue took 30 GPUs for five hours, and the short jobs
that came next waited hours for the rest). Before a narrow start is committed, two
futures are compared by **certainty-equivalent rollout** (a plan against the expected
future, re-made at every event):

* **forecast** (:func:`forecast`): the recent past repeats. With horizon
  H = min(the narrow run, ``lookahead_max_s``/Δ) slots, every job that arrived in
  [now − H, now) arrives again H slots later (when fewer than H slots of history exist,
  the history there is repeats until it covers H). Only arrivals already seen are used:
  the forecast is online.
* **rollout** (:func:`narrow_start_pays`): list scheduling in queue order
  (:func:`.queue_order.queue_key`), each job at its earliest start with its requested
  width (:mod:`.list_schedule`), of the waiting jobs behind this one (at most
  ``lookahead_jobs``) and the forecast arrivals —

  - **A**: after the narrow start now (the job ends at its decision's end);
  - **B**: with the job waiting, put in the list at its own place in the queue order.

  Cost = Σ over the job, the waiting jobs and the forecast of (end − arrival + 1) slots.
  The narrow start is committed iff cost(A) ≤ cost(B); otherwise the job keeps waiting
  and holds nothing (it is re-planned at the next event).

**Patience** (the bound): a job that has waited at least ``lookahead_patience`` × its
narrow run, or that would start with nothing else running (then no later event could start
it), is not held back. So the look-ahead adds at most that much to any job's wait — the
ski-rental argument: waiting as long as the run it would commit to at most doubles the
cost of that job against starting at once (patience 1), while the jobs the forecast
expects get the room.

**Under preemption** (``preempt``): the premise — a start is never given back — holds
only for a job the pause rule cannot pause once started. A pausable job's narrow start
is not held back (unless ``lookahead_pausable``): if the arrivals the forecast expects
do come, the pause rule weighs giving them its room, with the real arrivals and at the
restart cost, instead of the job idling now for arrivals that may not come (live only a
job that consents is pausable, ``late_binding.PendingJob.pausable``).

Only ``yu-rr``'s queue form looks ahead: ``qssf`` (the ablation)
starts every job at its requested width and has no width to choose.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from ...model import ClusterSnapshot, Decision, JobRequest
from ..params import PlacementParams
from ..program.residual import Residual
from .arrival import Arrival
from .list_schedule import arrival_of, fastest_run_slots, list_schedule
from .queue_order import keyer

MAX_FORECAST = 64
"""At most this many forecast arrivals per rollout (size control; the earliest kept)."""


def forecast(recent: Sequence[JobRequest], now: int, horizon: int) -> tuple[JobRequest, ...]:
    """The arrivals expected in [now, now + horizon): every job of ``recent`` that arrived
    in [now − L, now), L = min(horizon, now − the first arrival seen), arrives again L, 2L,
    … slots later (module docstring). Ids become ``forecast:K:<id>``."""
    seen = [j for j in recent if j.arrival_slot < now]
    if horizon <= 0 or not seen:
        return ()
    span = min(horizon, now - min(j.arrival_slot for j in seen))
    if span <= 0:
        return ()
    window = sorted((j for j in seen if j.arrival_slot >= now - span), key=lambda j: j.arrival_slot)
    out: list[JobRequest] = []
    k = 1
    while window and len(out) < MAX_FORECAST:
        for j in window:
            a = j.arrival_slot + k * span
            if a >= now + horizon or len(out) >= MAX_FORECAST:
                return tuple(out)
            out.append(replace(j, job_id=f"forecast:{k}:{j.job_id}", arrival_slot=a))
        k += 1
    return tuple(out)


def may_hold_back(pausable: bool, params: PlacementParams) -> bool:
    """Whether the look-ahead may hold back a job's narrow start at all: not a job the
    pause rule could pause once started (``pausable`` with ``preempt``), unless
    ``lookahead_pausable`` (module docstring, "Under preemption")."""
    return not (params.preempt and pausable and not params.lookahead_pausable)


def is_narrow(job: JobRequest, decision: Decision, res: Residual, slot_seconds: float) -> bool:
    """Whether the decision runs the job longer than its fastest shape on the empty
    cluster would (:func:`.list_schedule.fastest_run_slots`): it settles for less than it
    could get."""
    run = decision.end_slot - decision.start_slot + 1
    if run <= job.shortest_slots(slot_seconds):
        return False  # a lower bound of the fastest run: nothing to settle for
    return run > fastest_run_slots(job, res.for_job(job).capacity, slot_seconds)


def holds_back(
    job: JobRequest,
    decision: Decision,
    snapshot: ClusterSnapshot,
    res: Residual,
    behind: Sequence[JobRequest],
    recent: Sequence[JobRequest],
    params: PlacementParams,
) -> bool:
    """Whether a start now (``decision``, against ``snapshot``/``res``: the running jobs
    and what this re-plan already gave out) should wait instead (module docstring)."""
    now = snapshot.now_slot
    if (
        not params.lookahead
        or decision.start_slot != now
        or not is_narrow(job, decision, res, snapshot.slot_seconds)
    ):
        return False
    run = decision.end_slot - now + 1
    if now - job.arrival_slot >= params.lookahead_patience * run:
        return False
    if res.free_after <= now:
        return False  # nothing runs: no later event would start it
    horizon = min(run, int(params.lookahead_max_s // snapshot.slot_seconds))
    expected = forecast(recent, now, horizon)
    others = (*behind[: params.lookahead_jobs], *expected)
    if not expected:
        return False
    return not narrow_start_pays(job, decision, snapshot, res, others, params)


def queued(
    others: Sequence[JobRequest],
    snapshot: ClusterSnapshot,
    res: Residual,
    params: PlacementParams,
) -> list[Arrival]:
    """``others`` as arrivals from now (or their own arrival), in queue order: what every
    rollout of one decision list-schedules."""
    now, delta = snapshot.now_slot, snapshot.slot_seconds
    rest = [arrival_of(j, delta, res, params, max(j.arrival_slot, now)) for j in others]
    return sorted(rest, key=_order(snapshot, params))


def rollout_cost(
    job: JobRequest,
    decision: Decision,
    snapshot: ClusterSnapshot,
    res: Residual,
    rest: Sequence[Arrival],
) -> int:
    """cost(A) of the module docstring for the start ``decision`` of ``job`` now: its
    (end − now + 1) plus the terms of ``rest`` (:func:`queued`) list-scheduled in that
    order on the room it leaves."""
    index = snapshot.machine_index()
    after = res
    for r in decision.reservations(job):
        use = after.capacity * 0.0
        use[index[r.machine]] = r.usage.as_tuple()
        after = after.minus(use, max(r.start_slot, after.t0), r.end_slot)
    started, _ = list_schedule(rest, after)
    return (decision.end_slot - snapshot.now_slot + 1) + sum(x.term for x in started)


def _order(
    snapshot: ClusterSnapshot, params: PlacementParams
) -> Callable[[Arrival], tuple[float, int, str]]:
    key = keyer(snapshot.machines, snapshot.slot_seconds, params.aging, params.aging_unit)
    return lambda a: key(a.job)


def narrow_start_pays(
    job: JobRequest,
    decision: Decision,
    snapshot: ClusterSnapshot,
    res: Residual,
    others: Sequence[JobRequest],
    params: PlacementParams,
) -> bool:
    """cost(A) ≤ cost(B) of the module docstring; ``others``: the waiting jobs behind
    ``job`` and the forecast arrivals."""
    rest = queued(others, snapshot, res, params)
    cost_a = rollout_cost(job, decision, snapshot, res, rest)
    mine = arrival_of(job, snapshot.slot_seconds, res, params, snapshot.now_slot)
    waited, _ = list_schedule(sorted([*rest, mine], key=_order(snapshot, params)), res)
    cost_b = sum(x.term for x in waited)
    return cost_a <= cost_b


def cheapest_width(
    job: JobRequest,
    decision: Decision,
    snapshot: ClusterSnapshot,
    res: Residual,
    behind: Sequence[JobRequest],
    recent: Sequence[JobRequest],
    params: PlacementParams,
    capped: Callable[[int], Decision | None],
) -> Decision:
    """The start now, among ``decision`` (W workers) and the decisions at most W/2, W/4,
    … 1 workers give (``capped(k)``: the per-job decision with at most k workers, None
    when it does not start now), with the least rollout cost (:func:`rollout_cost`, ties
    to the wider) against the waiting jobs behind it (the first ``lookahead_jobs``) and,
    with ``widths_forecast``, the forecast arrivals over the longest of their runs (capped
    by ``lookahead_max_s``): ``lookahead_widths`` (docs/formulation.md §14.7).
    ``decision`` itself when nothing waits behind it (with ``widths_forecast``: when no
    arrival is forecast)."""
    now = snapshot.now_slot
    widest = max(p.total_workers for p in decision.slots)
    cap = int(params.lookahead_max_s // snapshot.slot_seconds)
    if not params.lookahead_widths or decision.start_slot != now or widest < 2:
        return decision
    if params.widths_forecast and not forecast(recent, now, cap):
        return decision
    if not params.widths_forecast and not behind:
        return decision
    variants = [decision]
    k = widest // 2
    while k >= 1:
        got = capped(k)
        if got is not None and got.start_slot == now:
            variants.append(got)
        k //= 2
    if len(variants) == 1:
        return decision
    run = max(v.end_slot - now + 1 for v in variants)
    expected = forecast(recent, now, min(run, cap)) if params.widths_forecast else ()
    rest = queued((*behind[: params.lookahead_jobs], *expected), snapshot, res, params)
    costs = [rollout_cost(job, v, snapshot, res, rest) for v in variants]
    return variants[min(range(len(variants)), key=lambda i: (costs[i], i))]
