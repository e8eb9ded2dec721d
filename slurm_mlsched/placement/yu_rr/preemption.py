r"""Checkpoint-restart preemption under late binding (docs/formulation.md §16), pure.

Late binding never moves a running job (:mod:`.late_binding`): on a heavy-tailed trace a
few very long jobs then hold the GPUs that many short ones wait for. With ``preempt`` on,
the replay's event loop asks :func:`replan_preempting` at every event whether to pause
(checkpoint, requeue) some running jobs first. The rule (docs/formulation.md §16):

**The index.** A running job j is treated as if it were waiting with the work it has
left: its *resumed request* has workload R_j + ρ_j (R_j: the mini-batches its run has not
covered by now; ρ_j: the restart charge below) and its original arrival, so its queue key
k_j = S(R_j + ρ_j) + γ·s_j is the one :mod:`.queue_order` gives every waiting job (the
SRPT-style index with the known runtime, aged). Only waiting jobs whose key is smaller may
take j's place, so a preempted job is overtaken only by jobs the queue order already puts
ahead of it and the overtaking bound of :mod:`.queue_order` still holds for it.

**The exchange.** Let S be the waiting jobs, in queue order, that cannot start now but
start now at their requested width (:func:`.list_schedule.earliest_requested`) in the
room j frees, each with key < k_j, and t_i the start each would get without the
preemption (its earliest start at the requested width on the running jobs' residual:
no later than the true one, which also waits for the jobs ahead of it). Pausing j now
instead of letting it run its p_j remaining slots changes the total completion time by

    gain_j = Σ_{i∈S} min(t_i − now, p_j)·Δ  −  max_{i∈S} d_i·Δ

(each i ends t_i − now sooner; j resumes when the last of S ends, d_i its run), the
two-job exchange argument of SRPT summed over S. j is preempted when gain_j exceeds the
restart cost c = ⌈restart_s / Δ⌉·Δ (the restart at most costs that many whole slots of
j's run on the slot grid). Victims are tried from the largest key (lowest priority)
down; each sees the room the ones before it freed and their S took. A job is preempted
at most ``preempt_max`` times; only running jobs that started before now are candidates;
at most ``preempt_jobs`` waiting jobs are looked at.

**The restart charge.** The simulator charges a re-allocating policy's resumed job its
new rate × restart_s (MODEL.md §6, ``sim.realloc``). A queue policy decides the resumed
job's width later, so ρ_j = its fastest rate on the cluster × restart_s / Δ
(:func:`restart_charge`): never less than that charge, and equal to it when the job
resumes in its fastest shape (every one-worker job). Work is conserved: the job's runs
cover its workload plus its charges (``sim.engine``; tests/sim/test_preemption.py).

**Kept only if it pays.** The re-plan with the preemptions must start, now, some job of
each preempted job's S and must not start the preempted job itself again now; a
preemption that fails this is dropped and the re-plan repeated (at most twice; then the
plain re-plan). So no restart is charged for nothing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ...model import ClusterSnapshot, Decision, JobRequest, SlotPlan, speed
from ..params import PlacementParams
from ..program.packing import fit_counts
from ..program.residual import FloatArray, Residual, residual_from
from .late_binding import PendingJob, QueueStep, ordered
from .list_schedule import arrival_of, requested_at
from .queue_order import largest_capacity, queue_key

QueueCall = Callable[
    [tuple[PendingJob, ...], ClusterSnapshot, PlacementParams, Sequence[JobRequest]], QueueStep
]


@dataclass(frozen=True)
class RunningRun:
    """A running job as the preemption rule sees it: ``request`` is what its current run
    covers (after an earlier preemption: the work left then plus the charge), ``decision``
    the run (one constant shape), ``preemptions`` how often it was paused before."""

    request: JobRequest
    seed: int
    decision: Decision
    preemptions: int = 0


@dataclass(frozen=True)
class Preemption:
    """One running job paused now, and why."""

    job_id: str
    resumed: JobRequest  # what it waits with: the work left + the restart charge
    work_done: float  # mini-batches its run covered before now
    charge: float  # ρ: mini-batches of restart charge added
    for_jobs: tuple[str, ...]  # S: the waiting jobs it makes room for
    gain_s: float  # estimated reduction of the total completion time, before the cost
    cost_s: float  # the restart cost it was weighed against


def plan_rate(plan: SlotPlan, job: JobRequest, slot_seconds: float) -> float:
    """Mini-batches per slot of one run: W · ν_mode (MODEL.md §2), or the ring formula of
    its layout for an allreduce job (:func:`~...model.speed.plan_rate`)."""
    return speed.plan_rate(plan, job, slot_seconds)


def work_done(decision: Decision, job: JobRequest, now: int, slot_seconds: float) -> float:
    """Mini-batches ``decision``'s runs cover in the slots before ``now``."""
    return sum(
        plan_rate(p, job, slot_seconds) * max(0, min(p.stop, now) - p.slot) for p in decision.slots
    )


def fastest_rate(job: JobRequest, capacity: FloatArray, slot_seconds: float) -> float:
    """The job's largest rate in any constant shape on machines of ``capacity`` (H, 3):
    co-located beside one PS on one machine, or distributed over all of them."""
    alpha = np.array(job.worker.as_tuple())
    beta = np.array(job.ps.as_tuple())
    beside = capacity - beta
    ok = (beside >= -1e-9).all(axis=1)
    colo = int(np.where(ok, fit_counts(beside, alpha), 0).max(initial=0))
    dist = int(min(job.max_distributed_workers(), fit_counts(capacity, alpha).sum()))
    if job.is_allreduce:  # the formula's best over the widths the machines hold (§18.2)
        return speed.upper_rate(job, max(min(colo, job.max_workers), dist), slot_seconds)
    nu_in, nu_ex = speed.worker_rates(job, slot_seconds)
    rate_ex = dist * nu_ex if dist >= job.min_distributed_workers() else 0
    return max(min(colo, job.max_workers) * nu_in, float(rate_ex))


def restart_charge(
    job: JobRequest, capacity: FloatArray, slot_seconds: float, restart_s: float
) -> float:
    """ρ = the job's fastest rate × restart_s / Δ (module docstring)."""
    return fastest_rate(job, capacity, slot_seconds) * max(0.0, restart_s) / slot_seconds


def resumed(
    run: RunningRun, now: int, capacity: FloatArray, slot_seconds: float, restart_s: float
) -> tuple[JobRequest, float, float]:
    """The request ``run``'s job waits with when paused at ``now``, the work its run did
    and the restart charge: workload = the work left + ρ (> 0: the run is unfinished)."""
    done = work_done(run.decision, run.request, now, slot_seconds)
    left = max(run.request.workload - done, 1e-9)
    charge = restart_charge(run.request, capacity, slot_seconds, restart_s)
    return replace(run.request, workload=left + charge), done, charge


def restart_cost_s(params: PlacementParams, slot_seconds: float) -> float:
    """c = ⌈restart_s / Δ⌉ · Δ: what one restart may cost a job on the slot grid."""
    if params.restart_s <= 0:
        return 0.0
    return math.ceil(params.restart_s / slot_seconds - 1e-9) * slot_seconds


@dataclass
class _Blocked:
    pending: PendingJob
    key: tuple[float, int, str]
    res: Residual  # the room it was found not to start in (after the starts ahead of it)
    found: int | None = None  # the earliest start found so far (``res`` never changes)
    scanned: int = 0  # starts before this slot were tried (and failed, unless ``found``)

    def alt_start(self, params: PlacementParams, slot_seconds: float, now: int, cap: int) -> int:
        """t_i: its earliest start at the requested width without the preemption, capped
        at ``cap`` (the gain counts min(t_i, the victim's end + 1) only). Several victims
        ask for one blocked job with their own caps; the scan is kept, so each start slot
        is tried once per event."""
        if self.found is not None:
            return min(self.found, cap)
        if cap <= self.scanned:
            return cap
        arr = arrival_of(self.pending.request, slot_seconds, self.res, params, now)
        for sigma in self.res.increase_slots():
            if sigma >= cap:
                break
            if (
                sigma > now
                and sigma >= self.scanned
                and requested_at(arr, self.res, sigma) is not None
            ):
                self.found = sigma
                return sigma
        self.scanned = max(self.scanned, cap)
        return cap


def choose(
    pending: Sequence[PendingJob],
    running: Sequence[RunningRun],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
) -> tuple[Preemption, ...]:
    """The running jobs to pause at ``snapshot.now_slot`` (module docstring). The
    snapshot holds the running jobs' reservations (nothing else); pure."""
    now, delta = snapshot.now_slot, snapshot.slot_seconds
    if not params.preempt or not pending or not running:
        return ()
    res = residual_from(snapshot, now)
    largest = largest_capacity(snapshot.machines)

    def key(job: JobRequest) -> tuple[float, int, str]:
        return queue_key(job, delta, largest, params.aging)

    blocked: list[_Blocked] = []
    for p in ordered(pending, snapshot, params)[: max(0, params.preempt_jobs)]:
        got = requested_at(arrival_of(p.request, delta, res, params, now), res, now)
        if got is not None:
            res = got[1]  # the re-plan starts it now: its room is taken first
        else:
            blocked.append(_Blocked(p, key(p.request), res))
    if not blocked:
        return ()
    cost = restart_cost_s(params, delta)
    victims = []
    for run in running:
        d = run.decision
        if run.preemptions >= params.preempt_max or d.start_slot >= now or d.end_slot < now:
            continue
        req, done, charge = resumed(run, now, res.capacity, delta, params.restart_s)
        victims.append((key(req), run, req, done, charge))
    victims.sort(key=lambda v: v[0], reverse=True)
    out: list[Preemption] = []
    index = snapshot.machine_index()
    for kj, run, req, done, charge in victims:
        if not blocked or kj <= min(b.key for b in blocked):
            break  # victims come by falling key: no waiting job may overtake the rest
        room = _freed(res, run, index, now)
        taken: list[tuple[_Blocked, int]] = []
        for b in blocked:
            if b.key >= kj:
                continue
            got = requested_at(arrival_of(b.pending.request, delta, room, params, now), room, now)
            if got is None:
                continue
            end, room, _ = got
            taken.append((b, end - now + 1))
        if not taken:
            continue
        cap = run.decision.end_slot + 1  # when the victim's room frees anyway
        waits = [b.alt_start(params, delta, now, cap) - now for b, _ in taken]
        gain = sum(waits) - max(d for _, d in taken)
        if gain * delta <= cost:
            continue
        out.append(
            Preemption(
                run.decision.job_id,
                req,
                done,
                charge,
                tuple(b.pending.request.job_id for b, _ in taken),
                gain * delta,
                cost,
            )
        )
        res = room
        served = {id(b) for b, _ in taken}
        blocked = [b for b in blocked if id(b) not in served]
    return tuple(out)


def _freed(res: Residual, run: RunningRun, index: dict[str, int], now: int) -> Residual:
    """``res`` with ``run``'s usage from ``now`` to its end given back."""
    plan = run.decision.slots[-1]
    w = np.zeros(res.n_machines, dtype=np.int64)
    s = np.zeros(res.n_machines, dtype=np.int64)
    for name, c in plan.workers:
        w[index[name]] += c
    for name, c in plan.ps:
        s[index[name]] += c
    use = w[:, None] * np.array(run.request.worker.as_tuple()) + s[:, None] * np.array(
        run.request.ps.as_tuple()
    )
    return res.minus(-use, now, run.decision.end_slot + 1)


def without_jobs(snapshot: ClusterSnapshot, job_ids: set[str]) -> ClusterSnapshot:
    """``snapshot`` without the reservations of ``job_ids``."""
    kept = tuple(r for r in snapshot.reservations if r.job_id not in job_ids)
    return replace(snapshot, reservations=kept)


def replan_preempting(
    pending: tuple[PendingJob, ...],
    running: Sequence[RunningRun],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    queue: QueueCall,
    recent: Sequence[JobRequest] = (),
) -> tuple[QueueStep, tuple[Preemption, ...]]:
    """One re-plan with preemption (module docstring, "Kept only if it pays"): the step
    and the preemptions it was taken with (the caller pauses those jobs, then applies the
    step, in which they are waiting jobs)."""
    chosen = choose(pending, running, snapshot, params)
    seeds = {r.decision.job_id: r.seed for r in running}
    for _ in range(2):
        if not chosen:
            break
        ids = {p.job_id for p in chosen}
        extra = tuple(PendingJob(p.resumed, seeds[p.job_id]) for p in chosen)
        step = queue((*pending, *extra), without_jobs(snapshot, ids), params, recent)
        now_started = {d.job_id for d in step.started}
        wasted = {
            p.job_id
            for p in chosen
            if p.job_id in now_started or not now_started.intersection(p.for_jobs)
        }
        if not wasted:
            return step, chosen
        chosen = tuple(p for p in chosen if p.job_id not in wasted)
    return queue(pending, snapshot, params, recent), ()
