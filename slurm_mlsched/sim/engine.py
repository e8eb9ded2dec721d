"""The replay engine: one event loop, pure and deterministic (MODEL.md §4, §6–8).

Events, in slot order: **completions** (a job's last slot is over: its reservations leave
the book) and **arrivals** (the policy decides where and when the job runs). The loop
advances the simulated clock from one slot boundary with events to the next; within a
slot, completions come before arrivals, and arrivals are taken in submission order
(submit time, then job id). Each arrival goes through the one loop of STYLE.md:

* **admit**: the job was checked once, before the run, to fit the empty cluster at all
  (:func:`admit`; the others are reported as unplaceable, never dropped silently);
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
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..errors import MlschedError, NeverFitsError
from ..model import ClusterSnapshot
from ..model.reservation_book import ReservationBook
from ..placement.feasibility import check_could_ever_fit
from ..placement.online import derive_seed
from ..placement.params import PlacementParams
from ..placement.registry import get_policy, get_reallocating, prepare_params
from .jobs import SimJob
from .realloc import simulate_reallocating
from .result import JobOutcome, SimResult

__all__ = ["JobOutcome", "Progress", "SimResult", "Unplaceable", "admit", "simulate"]

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
    (``placement.check_could_ever_fit``). Jobs of the same shape are checked once."""
    ok: list[SimJob] = []
    bad: list[Unplaceable] = []
    seen: dict[tuple[object, ...], str] = {}
    for job in jobs:
        r = job.request
        key = (r.worker, r.ps, r.max_workers, r.ps_count, r.profile.ps_per_worker)
        if key not in seen:
            try:
                check_could_ever_fit(r, cluster)
                seen[key] = ""
            except NeverFitsError as err:
                seen[key] = err.message
        if seen[key]:
            bad.append(Unplaceable(job, seen[key].replace(repr(r.job_id), "the job")))
        else:
            ok.append(job)
    return ok, bad


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
            jobs, base, policy, reallocate, params, progress, progress_every
        )
    fn = get_policy(policy)
    order = sorted(
        range(len(jobs)),
        key=lambda i: (jobs[i].request.arrival_slot, jobs[i].submit_s, jobs[i].job_id),
    )
    events: list[tuple[int, int, int]] = [
        (jobs[i].request.arrival_slot, _ARRIVAL, k) for k, i in enumerate(order)
    ]
    heapq.heapify(events)
    book = ReservationBook(base.machines)  # a job's rows leave at its completion event
    outcomes: list[JobOutcome | None] = [None] * len(order)
    done = peak = handled = 0
    while events:
        slot, kind, k = heapq.heappop(events)
        handled += 1
        if kind == _COMPLETION:
            continue  # the book drops the job's reservations from views after this slot
        job = jobs[order[k]]
        snapshot = ClusterSnapshot(
            base.machines, book.view(slot), base.slot_seconds, base.epoch, now_slot=slot
        )
        peak = max(peak, len(snapshot.reservations))
        seeded = params.with_seed(derive_seed(params.seed, job.job_id))
        try:
            decision = fn(job.request, snapshot, seeded)
        except MlschedError as err:
            outcomes[k] = JobOutcome(job, None, f"{err.code}: {err.message}")
        else:
            outcomes[k] = JobOutcome(job, decision)
            held = decision.reservations(job.request)
            if held:
                leave = max(max(r.end_slot for r in held), slot + 1)
                book.add(held, leave)
                heapq.heappush(events, (leave, _COMPLETION, k))
        done += 1
        if progress is not None and (done % progress_every == 0 or done == len(order)):
            progress(done, len(order))
    return SimResult(
        policy=policy,
        params=params,
        cluster=base,
        outcomes=tuple(o for o in outcomes if o is not None),
        peak_active_reservations=peak,
        events=handled,
    )
