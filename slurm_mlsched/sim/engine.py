"""The replay engine: one event loop, pure and deterministic (MODEL.md §4, §6–8).

Events, in slot order: **completions** (a job's last slot is over: its reservations leave
the book) and **arrivals** (the policy decides where and when the job runs). The loop
advances the simulated clock from one slot boundary with events to the next; within a
slot, completions come before arrivals, and arrivals are taken in submission order
(submit time, then job id). Each arrival goes through the one loop of STYLE.md:

* **admit**: the job was checked once, before the run, to fit the empty cluster at all
  (:func:`admit`; the others are reported as unplaceable, never dropped silently), and
  given the rate of the slowest GPU type it may run on there
  (:func:`~slurm_mlsched.model.gpu_speed.effective_request`: every policy, the checks and
  the bound read the job at that rate; docs/formulation.md §17);
* **schedule + place**: the policy, looked up in the registry, gets the job, a snapshot
  at the arrival slot holding only the *active* reservations (those of jobs not yet
  completed, in commit order; the book never grows with the history of the trace) and the
  parameters with the job's own seed (``placement.online.derive_seed(seed, job_id)``).
  The reservations are a view of one :class:`~slurm_mlsched.model.reservation_book.ReservationBook`
  kept across arrivals, so a baseline reads them as arrays without a per-arrival copy;
* **execute**: the decision's reservations are committed to the book and its completion
  is scheduled.

**The decision is the truth of when the job runs.** MODEL.md's model has no runtime noise
(a job's speed is set by its mode and worker count), so the simulator replays each plan
exactly: the job starts in its decision's first slot and finishes at the end of its last.
Nothing is re-planned later; a policy that re-plans would be a different model.

A policy that raises an :class:`~slurm_mlsched.errors.MlschedError` for a job (no fit
for its fixed shape, solver failure, ``oasis``'s admission control) rejects that job: it
is recorded with the error and the replay goes on. Nothing here reads a clock or does
I/O; progress is reported through a callback the caller passes in.

Before the run, the policy's prepare hook (``registry.prepare_params``) sees all the jobs
once (``oasis`` takes its price bounds from the whole trace). **Re-allocating** policies
(``optimus``, ``drf``), which change running jobs' counts at every arrival and completion,
run in the sibling loop :func:`slurm_mlsched.sim.realloc.simulate_reallocating`, to which
:func:`simulate` hands them; both return the same :class:`SimResult`.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..errors import MlschedError, NeverFitsError
from ..model import ClusterSnapshot, Decision, Form, JobRequest, SlotPlan
from ..model.gpu_speed import effective_request
from ..model.reservation_book import ReservationBook
from ..placement.params import PlacementParams, derive_seed
from ..placement.program.feasibility import check_could_ever_fit
from ..placement.registry import (
    get_policy,
    get_queue,
    get_reallocating,
    get_wakeup,
    prepare_params,
)
from ..placement.yu_rr.late_binding import PendingJob, QueueStep
from ..placement.yu_rr.preemption import Preemption, RunningRun, plan_rate, replan_preempting
from .jobs import SimJob
from .realloc import simulate_reallocating
from .result import JobOutcome, SimResult

__all__ = [
    "JobOutcome",
    "Progress",
    "SimResult",
    "Unplaceable",
    "admit",
    "event_order",
    "simulate",
]

Progress = Callable[[int, int], None]
"""Called as ``progress(done, total)`` after arrivals (every ``progress_every`` and at the end;
re-allocating policies: after completions)."""

_COMPLETION, _ARRIVAL = 0, 1


@dataclass(frozen=True)
class Unplaceable:
    """A job no placement could ever run on the replay cluster, and why."""

    job: SimJob
    reason: str


def admit(
    jobs: Sequence[SimJob], cluster: ClusterSnapshot
) -> tuple[list[SimJob], list[Unplaceable]]:
    """Split jobs into those that could ever run on ``cluster`` and those that could not
    (``placement.check_could_ever_fit``). Jobs of the same shape are checked once. An
    admitted job's request is its :func:`~slurm_mlsched.model.gpu_speed.effective_request`
    on ``cluster``: the replay's one place where a job meets the cluster's GPU speeds."""
    ok: list[SimJob] = []
    bad: list[Unplaceable] = []
    seen: dict[tuple[object, ...], str] = {}
    for job in jobs:
        r = job.request
        key = (r.worker, r.ps, r.max_workers, r.ps_count, r.profile.ps_per_worker, r.gpu_types)
        if key not in seen:
            try:
                check_could_ever_fit(r, cluster)
                seen[key] = ""
            except NeverFitsError as err:
                seen[key] = err.message
        if seen[key]:
            bad.append(Unplaceable(job, seen[key].replace(repr(r.job_id), "the job")))
        else:
            fast = effective_request(r, cluster)
            ok.append(job if fast is r else replace(job, request=fast))
    return ok, bad


def event_order(jobs: Sequence[SimJob]) -> list[int]:
    """Indices of ``jobs`` in the order their arrivals are handled: arrival slot, submit
    time, job id (MODEL.md §4b; completions come before arrivals in the same slot)."""
    return sorted(
        range(len(jobs)),
        key=lambda i: (jobs[i].request.arrival_slot, jobs[i].submit_s, jobs[i].job_id),
    )


def simulate(
    jobs: Sequence[SimJob],
    cluster: ClusterSnapshot,
    policy: str,
    params: PlacementParams,
    progress: Progress | None = None,
    progress_every: int = 100,
) -> SimResult:
    """Replay ``jobs`` on the empty ``cluster`` (its machines, Δ and epoch) under ``policy``.

    ``jobs`` should be admitted first (:func:`admit`); a job the policy cannot place is
    recorded as rejected. Deterministic for ``params.seed``.
    """
    base = replace(cluster, reservations=(), now_slot=0)
    params = prepare_params(policy, [j.request for j in jobs], base, params)
    reallocate = get_reallocating(policy)
    if reallocate is not None:
        return simulate_reallocating(
            jobs, base, policy, reallocate, params, progress, progress_every, get_wakeup(policy)
        )
    queue = get_queue(policy, params)
    decide = get_policy(policy) if queue is None else None
    order = event_order(jobs)
    events: list[tuple[int, int, int]] = [
        (jobs[i].request.arrival_slot, _ARRIVAL, k) for k, i in enumerate(order)
    ]
    heapq.heapify(events)
    book = ReservationBook(base.machines)  # a job's rows leave at its completion event
    outcomes: list[JobOutcome | None] = [None] * len(order)
    waiting: dict[int, PendingJob] = {}  # arrival index k -> the job while it waits
    seen: deque[JobRequest] = deque()  # queue policies: the arrivals of the look-back window
    lookback = int(params.lookahead_max_s // base.slot_seconds)
    series: list[tuple[int, int]] = []
    done = peak = handled = 0
    # preemption (params.preempt): the runs of jobs that may be paused, the slot each
    # leaves the book, and what earlier runs of a paused job did
    runs: dict[int, RunningRun] = {}
    leaves: dict[int, int] = {}
    history: dict[int, _History] = {}

    def commit(k: int, decision: Decision, slot: int) -> None:
        nonlocal done
        job = jobs[order[k]]
        past = history.get(k)
        request = waiting_request.pop(k, job.request)
        outcomes[k] = JobOutcome(
            job, decision if past is None else past.merged(decision, job.request, base)
        )
        held = decision.reservations(request)
        if held:
            leave = max(max(r.end_slot for r in held), slot + 1)
            book.add(held, leave)
            heapq.heappush(events, (leave, _COMPLETION, k))
            leaves[k] = leave
            if params.preempt:
                runs[k] = RunningRun(
                    request,
                    derive_seed(params.seed, job.job_id),
                    decision,
                    0 if past is None else past.pauses,
                )
        done += 1
        if progress is not None and (done % progress_every == 0 or done == len(order)):
            progress(done, len(order))

    def reject(k: int, err: MlschedError) -> None:
        nonlocal done
        outcomes[k] = JobOutcome(jobs[order[k]], None, f"{err.code}: {err.message}")
        done += 1
        if progress is not None and (done % progress_every == 0 or done == len(order)):
            progress(done, len(order))

    waiting_request: dict[int, JobRequest] = {}  # a paused job's resumed request

    def pause(p: Preemption, slot: int) -> None:
        nonlocal done
        k = by_id[p.job_id]
        run = runs.pop(k)
        book.withdraw(p.job_id, slot)
        leaves.pop(k, None)
        past = history.get(k) or _History()
        history[k] = past.paused(run, slot, p)
        outcomes[k] = None
        done -= 1
        waiting[k] = PendingJob(p.resumed, run.seed)
        waiting_request[k] = p.resumed

    by_id = {jobs[order[k]].job_id: k for k in range(len(order))} if params.preempt else {}
    while events:
        slot = events[0][0]
        arrived: list[int] = []
        ended = False
        while events and events[0][0] == slot:  # completions (kind 0) pop first
            _, kind, k = heapq.heappop(events)
            if kind == _ARRIVAL:
                arrived.append(k)
            elif leaves.get(k) == slot or not params.preempt:
                leaves.pop(k, None)
                runs.pop(k, None)
                ended = True
            else:
                continue  # the completion of a run that was preempted
            handled += 1
        if not arrived and not ended:
            continue
        if decide is not None:  # arrival policy: each new job decided once, whole future
            for k in arrived:  # each sees the ones committed before it
                snapshot = ClusterSnapshot(
                    base.machines, book.view(slot), base.slot_seconds, base.epoch, now_slot=slot
                )
                peak = max(peak, len(snapshot.reservations))
                job = jobs[order[k]]
                seeded = params.with_seed(derive_seed(params.seed, job.job_id))
                try:
                    decision = decide(job.request, snapshot, seeded)
                except MlschedError as err:
                    reject(k, err)
                else:
                    commit(k, decision, slot)
            continue
        assert queue is not None
        for k in arrived:
            job = jobs[order[k]]
            waiting[k] = PendingJob(job.request, derive_seed(params.seed, job.job_id))
            seen.append(job.request)
        while seen and seen[0].arrival_slot < slot - lookback:
            seen.popleft()
        if not waiting and not (params.preempt_resize and params.preempt and runs):
            continue  # (with preempt_resize a running job may grow into the room freed)
        snapshot = ClusterSnapshot(
            base.machines, book.view(slot), base.slot_seconds, base.epoch, now_slot=slot
        )
        peak = max(peak, len(snapshot.reservations))
        if params.preempt and runs:
            step, paused = replan_preempting(
                tuple(waiting.values()),
                tuple(runs.values()),
                snapshot,
                params,
                queue,
                tuple(seen),
            )
            for p in paused:
                pause(p, slot)
        else:
            step = queue(tuple(waiting.values()), snapshot, params, tuple(seen))
        _apply_step(step, waiting, slot, order, jobs, commit, reject)
        series.append((slot, len(waiting)))
        if waiting and not events:
            raise RuntimeError(
                f"{policy}: at slot {slot} nothing runs, {len(waiting)} job(s) wait and none "
                "is to arrive (the queue policy started none of them)"
            )
    return SimResult(
        policy=policy,
        params=params,
        cluster=base,
        outcomes=tuple(o for o in outcomes if o is not None),
        peak_active_reservations=peak,
        events=handled,
        queue_series=tuple(series),
    )


def _apply_step(
    step: QueueStep,
    waiting: dict[int, PendingJob],
    slot: int,
    order: list[int],
    jobs: Sequence[SimJob],
    commit: Callable[[int, Decision, int], None],
    reject: Callable[[int, MlschedError], None],
) -> None:
    """Commit a re-plan: started jobs leave the queue (their decision gains the count of
    re-plans), rejected ones too; reserved jobs keep their tentative plan."""
    by_id = {jobs[order[k]].job_id: k for k in waiting}
    decided = set(step.decided)
    for job_id, err in step.rejected:
        k = by_id[job_id]
        del waiting[k]
        reject(k, err)
    for d in step.started:
        k = by_id[d.job_id]
        if d.start_slot != slot:
            raise RuntimeError(f"job {d.job_id!r} started at {d.start_slot}, not now ({slot})")
        p = waiting.pop(k)
        replans = p.replans + (d.job_id in decided)
        commit(k, replace(d, stats=(*d.stats, ("replans", float(replans)))), slot)
    plans = {d.job_id: d for d in step.planned}
    for k, p in list(waiting.items()):
        job_id = p.request.job_id
        waiting[k] = PendingJob(
            p.request, p.seed, plans.get(job_id), p.replans + (job_id in decided)
        )


@dataclass(frozen=True)
class _History:
    """What the earlier runs of a preempted job did (``params.preempt``)."""

    runs: tuple[SlotPlan, ...] = ()  # its runs, cut at the slot it was paused
    preemptions: int = 0  # its restarts: pauses and resizes
    pauses: int = 0  # pauses for waiting jobs (``for_jobs``), what ``preempt_max`` limits
    charge: float = 0.0  # mini-batches of restart charge added over its pauses
    done: float = 0.0  # mini-batches its runs covered before each pause

    def paused(self, run: RunningRun, slot: int, p: Preemption) -> _History:
        cut = tuple(
            replace(plan, length=min(plan.stop, slot) - plan.slot)
            for plan in run.decision.slots
            if plan.slot < slot
        )
        return _History(
            (*self.runs, *cut),
            self.preemptions + 1,
            self.pauses + (1 if p.for_jobs else 0),
            self.charge + p.charge,
            self.done + p.work_done,
        )

    def merged(self, last: Decision, job: JobRequest, cluster: ClusterSnapshot) -> Decision:
        """The job's whole history as one decision: every run, the first start, the last
        end; elastic (its shape may change between runs), its pauses counted as restarts."""
        slots = (*self.runs, *last.slots)
        delta = cluster.slot_seconds
        work = sum(plan_rate(p, job, delta) * p.length for p in slots)
        return replace(
            last,
            form=Form.ELASTIC,
            slots=slots,
            start_slot=slots[0].slot,
            work_covered=work,
            notes=(
                *last.notes,
                f"checkpoint-restart: preempted {self.preemptions} time(s); each resume "
                "charged the restart cost",
            ),
            stats=(
                *last.stats,
                ("restarts", float(self.preemptions)),
                ("restart_work", self.charge),
            ),
        )
