"""Late binding: re-plan the queue at an event (docs/formulation.md §14.1; MODEL.md §4b).

A **queue policy** is called at every event (an arrival or a completion) with the jobs
that wait and a snapshot at the event's slot that holds only the *running* jobs'
reservations (running jobs never move). It returns the decisions of the jobs that start
now; everything else keeps waiting and holds nothing. Its signature
(``registry.QueueFn``)::

    queue(pending: tuple[PendingJob, ...], snapshot: ClusterSnapshot,
          params: PlacementParams) -> QueueStep

:func:`replan_queue` is the re-plan every queue policy of the registry shares; the
policies differ in the per-job decision they pass in (``yu-rr``'s LP + rounding + repair,
``qssf``'s first fit at the requested width). At one event:

1. the waiting jobs are sorted by :func:`.queue_order.queue_key` (smallest service
   first, aged);
2. in that order each job is decided against the running jobs plus what this re-plan
   already gave out: the jobs started now, and the tentative plans of the first
   ``reserve_depth`` jobs that do not start now (the *reserved* jobs: later jobs may not
   delay them — EASY backfill's protection of the queue head);
3. a decision that starts now is committed by the caller; a reserved job's decision is a
   tentative plan, handed back at the next event in :attr:`PendingJob.plan`; the others
   are dropped (they hold nothing);
4. **monotone head**: if a job's previous tentative plan still fits and ends earlier than
   its new decision, the previous plan is kept. With (2) this makes the end of the first
   waiting job's plan non-increasing, the step of the starvation bound
   (:mod:`.queue_order`);
5. size control: past the reserved jobs, a job is decided only if a cheap necessary test
   passes (over its shortest possible run from now — every start now lasts at least that
   long with at least one worker — some machine has room for a worker and the cluster for
   a worker and a PS, given what this re-plan already gave out), and — for a policy whose
   decision chooses the width and minimizes the job's end (``chooses_width``: ``yu-rr``)
   — unless some later start ends before any start now could
   (:func:`.list_schedule.later_start_ends_sooner`: its decision would not start now, so
   it is spared); at most ``scan_depth`` such decisions are made per event;
6. **look-ahead** (``chooses_width``): a narrow start — slower than the job's fastest
   shape — is committed only if the arrivals the recent past forecasts are not better
   off with the job waiting (:mod:`.lookahead`; ``lookahead``, bounded by
   ``lookahead_patience``) — under ``preempt`` only for a job the pause rule could not
   take back once started (``PendingJob.pausable`` false; ``lookahead_pausable`` holds
   back every job, the rule until 2026-12-06); with ``lookahead_widths`` a start now is
   first weighed against the same job's starts with at most a half, a quarter, … of its workers
   (:func:`.lookahead.cheapest_width`).

A per-job decision that raises :class:`~slurm_mlsched.errors.MlschedError` rejects the
job (the caller records the error). Pure: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol

import numpy as np

from ...errors import MlschedError
from ...model import ClusterSnapshot, Decision, JobRequest, Reservation
from ..params import PlacementParams
from ..program.residual import FloatArray, Residual, residual_from
from .list_schedule import arrival_of, later_start_ends_sooner
from .lookahead import cheapest_width, holds_back, may_hold_back
from .queue_order import keyer


class DecideFn(Protocol):
    """A per-job decision (a policy function); ``residual`` is the snapshot's residual
    capacity from now, which the re-plan keeps and a policy may use instead of
    recomputing it."""

    def __call__(
        self,
        job: JobRequest,
        snapshot: ClusterSnapshot,
        params: PlacementParams,
        residual: Residual | None = None,
    ) -> Decision: ...


@dataclass(frozen=True)
class PendingJob:
    """A waiting job as a queue policy sees it at an event."""

    request: JobRequest
    seed: int  # derive_seed(params.seed, job_id): the same at every re-plan
    plan: Decision | None = None  # its tentative plan of the previous re-plan (reserved)
    replans: int = 0  # how often it was decided while waiting
    pausable: bool = True  # once started, the pause rule may pause it (with ``preempt``:
    # in a replay every job; live a job that consents, its ``#SBATCH --signal``)


@dataclass(frozen=True)
class QueueStep:
    """What one re-plan decided: who starts now, the tentative plans, the rejections."""

    started: tuple[Decision, ...]
    planned: tuple[Decision, ...] = ()
    rejected: tuple[tuple[str, MlschedError], ...] = ()
    decided: tuple[str, ...] = ()  # job ids decided (the per-job policy was called)
    kept: tuple[str, ...] = ()  # job ids whose previous plan was kept (step 4)


def ordered(
    pending: Sequence[PendingJob], snapshot: ClusterSnapshot, params: PlacementParams
) -> list[PendingJob]:
    """The waiting jobs in queue order (:func:`.queue_order.queue_key`)."""
    key = keyer(snapshot.machines, snapshot.slot_seconds, params.aging, params.aging_unit)
    return sorted(pending, key=lambda p: key(p.request))


def fits(reservations: Sequence[Reservation], snapshot: ClusterSnapshot) -> bool:
    """Whether ``reservations`` fit in the snapshot's residual capacity (from now on)."""
    if not reservations:
        return True
    now = snapshot.now_slot
    if any(r.start_slot < now for r in reservations):
        return False
    res = residual_from(snapshot, now)
    index = snapshot.machine_index()
    need: dict[tuple[str, int, int], FloatArray] = {}
    for r in reservations:
        key = (r.machine, r.start_slot, r.end_slot)
        use = np.array(r.usage.as_tuple())
        need[key] = need[key] + use if key in need else use
    for (machine, start, end), use in need.items():
        if end <= start:
            continue
        h = index.get(machine)
        if h is None or (res.window_min(start, end)[h] < use - 1e-7).any():
            return False
    # overlapping intervals on one machine: check slot by slot where they start
    by_machine: dict[str, list[Reservation]] = {}
    for r in reservations:
        by_machine.setdefault(r.machine, []).append(r)
    for machine, rows in by_machine.items():
        if len(rows) < 2:
            continue
        h = index[machine]
        for t in {r.start_slot for r in rows}:
            use = sum(
                (np.array(r.usage.as_tuple()) for r in rows if r.start_slot <= t < r.end_slot),
                np.zeros(3),
            )
            if (res.at(t)[h] < use - 1e-7).any():
                return False
    return True


def without(res: Residual, held: Sequence[Reservation], index: dict[str, int]) -> Residual:
    """``res`` with ``held`` taken out (each interval once)."""
    by_window: dict[tuple[int, int], FloatArray] = {}
    for r in held:
        use = by_window.setdefault((r.start_slot, r.end_slot), np.zeros((res.n_machines, 3)))
        use[index[r.machine]] += r.usage.as_tuple()
    for (start, stop), use in by_window.items():
        res = res.minus(use, max(start, res.t0), stop)
    return res


def might_start(job: JobRequest, room: FloatArray) -> bool:
    """Necessary for any start now: a worker fits on some machine, and a worker and a PS
    fit in the cluster's total room."""
    alpha = np.array(job.worker.as_tuple())
    beta = np.array(job.ps.as_tuple())
    if not (room >= alpha - 1e-9).all(axis=1).any():
        return False
    return bool((room.sum(axis=0) >= alpha + beta - 1e-9).all())


def _capped(
    job: JobRequest,
    snap: ClusterSnapshot,
    res: Residual,
    params: PlacementParams,
    p: PendingJob,
    decide: DecideFn,
) -> Callable[[int], Decision | None]:
    """The per-job decision of ``job`` with at most k workers (None if it fails)."""

    def capped(k: int) -> Decision | None:
        try:
            return decide(replace(job, max_workers=k), snap, params.with_seed(p.seed), res)
        except MlschedError:
            return None

    return capped


def replan_queue(
    pending: Sequence[PendingJob],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    decide: DecideFn,
    recent: Sequence[JobRequest] = (),
    chooses_width: bool = False,
) -> QueueStep:
    """Re-plan the waiting jobs at ``snapshot.now_slot`` (module docstring). ``recent``:
    the jobs that arrived lately (the look-ahead's forecast, step 6); ``chooses_width``:
    ``decide`` chooses the job's width and minimizes its end (``yu-rr``), so a job past
    the reserved ones that a later start would end sooner is not decided (step 5) and a
    narrow start is weighed against the forecast (step 6)."""
    now = snapshot.now_slot
    index = snapshot.machine_index()
    running = snapshot.reservations
    extra: list[Reservation] = []
    res = residual_from(snapshot, now)
    started: list[Decision] = []
    planned: list[Decision] = []
    rejected: list[tuple[str, MlschedError]] = []
    decided: list[str] = []
    kept: list[str] = []
    reserved = scanned = 0
    queue = ordered(pending, snapshot, params)
    for at, p in enumerate(queue):
        job = p.request
        protected = reserved < params.reserve_depth
        if not protected:
            # any start now runs at least d_min slots with at least one worker
            d_min = job.shortest_slots(snapshot.slot_seconds)
            if scanned >= params.scan_depth or not might_start(
                job, res.window_min(now, now + d_min)
            ):
                continue
            if chooses_width and later_start_ends_sooner(
                arrival_of(job, snapshot.slot_seconds, res, params, now)
            ):
                continue
            scanned += 1
        snap = ClusterSnapshot(
            snapshot.machines,
            (*running, *extra) if extra else running,
            snapshot.slot_seconds,
            snapshot.epoch,
            now,
        )
        try:
            d = decide(job, snap, params.with_seed(p.seed), residual=res)
        except MlschedError as err:
            rejected.append((job.job_id, err))
            continue
        decided.append(job.job_id)
        if p.plan is not None and p.plan.end_slot < d.end_slot:
            held = p.plan.reservations(job)
            if fits(held, snap):
                d = replace(
                    p.plan,
                    notes=(*p.plan.notes, f"kept the plan of an earlier re-plan at slot {now}"),
                )
                kept.append(job.job_id)
        behind = [q.request for q in queue[at + 1 : at + 1 + params.lookahead_jobs]]
        was_kept = bool(kept) and kept[-1] == job.job_id
        if chooses_width and not was_kept and params.lookahead_widths:
            d = cheapest_width(
                job,
                d,
                snap,
                res,
                behind,
                recent,
                params,
                _capped(job, snap, res, params, p, decide),
            )
        if (
            chooses_width
            and not was_kept
            and may_hold_back(p.pausable, params)
            and holds_back(job, d, snap, res, behind, recent, params)
        ):
            continue  # step 6: the forecast arrivals are better off if it waits (a start
            # the pause rule can take back when they come is not held back)
        if d.start_slot == now:
            started.append(d)
        elif protected:
            planned.append(d)
            reserved += 1
        else:
            continue
        held = d.reservations(job)
        extra.extend(held)
        res = without(res, held, index)
    return QueueStep(tuple(started), tuple(planned), tuple(rejected), tuple(decided), tuple(kept))
