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

**Who may take its room.** Let S be the waiting jobs, in queue order, that cannot start
now but start now at their requested width (:func:`.list_schedule.earliest_requested`) in
the room j frees, each with key < k_j. A victim with no such S is never paused — unless
it is paused together (below).

**Pause together** (``preempt_group``, with the rollout; :func:`_group`). Two 4-worker
jobs on one 8-GPU node keep an 8-worker job waiting, though no single pause frees its
room: each frees 4 GPUs, in which it does not start. A victim j whose room alone starts
no waiting job is joined by the other victims whose run shares a machine with j's, one at
a time by falling key (at most three), until some waiting job whose key is below every
member's starts now in the room they free together; the rollout then weighs the group as
one pause (without: Σ over the members of end − now + 1; with: every member's resumed
request in the list schedule), and all are paused when it gains. In the re-plan the
group stands or falls as one: if one member's pause is dropped, so are the others'.

**Arrivals in the rollout** (``preempt_forecast``, with the rollout; off, measured and
not kept). The rollout below also list-schedules, in both branches, the arrivals the
look-ahead's forecast expects (:func:`.lookahead.forecast`, from ``recent``) over the
victim's remaining run, at most ``lookahead_max_s``: without the pause they wait behind
it, with it they take its room and the resumed victim waits behind those with smaller
keys. The forecast arrivals gain from the pause as well, so it pauses more, not less
(docs/formulation.md §16).

**The gain, by rollout** (``preempt_gain = rollout``, the default since 2026-12-05). Let
W be the waiting jobs the rule looks at that do not start now (and the jobs it already
paused at this event), and L(W, room) the list schedule of W in queue order on a room
(:func:`.list_schedule.list_schedule`: each at its earliest start at its requested width
on what the ones before it leave). Without the pause the total is Σ_{i∈W} (e_i − now + 1)
of L(W, the running jobs' residual) plus j's own end − now + 1; with it, the same sum of
L(W ∪ {j's resumed request}, that residual with j's room given back), j at its key, its
restart charge in its work. gain_j is the difference, and j is paused when it is > 0 (the
restart's cost to j is inside the second sum). It sees what the exchange below misses:
the jobs behind a node that frees soon wait for each other, so the first of them would
start soon but the last would not. Like the exchange it is an estimate (no arrivals, no
backfill beyond the list's), and the re-plan's check below still drops a pause that
starts none of S. Its work is bounded: a rollout stops placing once its total plus every
job left at its fastest run reaches the total without the pause (:func:`_list_total`: the
same decision), and at most ``preempt_rollouts`` victims are weighed per event, the
largest key first; the rest wait for the next event.

**The gain, by exchange** (``preempt_gain = exchange``, the rule until 2026-12-05). With
t_i the start each i ∈ S would get without the
preemption (its earliest start at the requested width on the running jobs' residual:
no later than the true one, which also waits for the jobs ahead of it). Pausing j now
instead of letting it run its p_j remaining slots changes the total completion time by

    gain_j = Σ_{i∈S} min(t_i − now, p_j)·Δ  −  max_{i∈S} d_i·Δ

(each i ends t_i − now sooner; j resumes when the last of S ends, d_i its run), the
two-job exchange argument of SRPT summed over S. j is preempted when gain_j exceeds what
the restart costs j itself, c_j (``preempt_cost``, :func:`victim_cost_s`; the rollout
reports c_j beside its gain): by default the
whole slots its restart charge ρ_j adds to its run when it resumes in its current shape at
rate r_j, (⌈(R_j + ρ_j)/r_j⌉ − ⌈R_j/r_j⌉)·Δ with R_j its work left — 0 when ρ_j fits in
the slack of its last slot, one slot when it does not; ``slot`` takes the most a restart
may cost, ⌈restart_s / Δ⌉·Δ, for every victim (the rule until 2026-12-04). Victims are
tried from the largest key (lowest priority) down; each sees the room the ones before it
freed and their S took. A job is paused for waiting jobs at most ``preempt_max`` times
(its resizes below do not count: each pays on its own and leaves it faster); only running
jobs that started before now are candidates; at most ``preempt_jobs`` waiting jobs are
looked at.

**The restart charge.** The simulator charges a re-allocating policy's resumed job its
new rate × restart_s (MODEL.md §6, ``sim.realloc``). A queue policy decides the resumed
job's width later, so ρ_j = its fastest rate on the cluster × restart_s / Δ
(:func:`restart_charge`): never less than that charge, and equal to it when the job
resumes in its fastest shape (every one-worker job). Work is conserved: the job's runs
cover its workload plus its charges (``sim.engine``; tests/sim/test_preemption.py).

**Kept only if it pays.** The re-plan with the preemptions must start, now, some job of
each preempted job's S and (without ``preempt_migrate``) must not start the preempted job
itself again now; a preemption that fails this is dropped and the re-plan repeated (at
most twice; then the plain re-plan). So no restart is charged for nothing. With
``preempt_migrate`` a preempted job the re-plan starts again at once (elsewhere, or at
another width) keeps its pause when a job of S started: a migration, charged its restart
like any resume (off by default: it lost on the ladder's average, docs/formulation.md
§16).

**Move to a smaller node** (``preempt_defrag``; :func:`_moves`, before the pauses). On a
cluster of several node sizes a narrow job that started on a big node (the small ones
were busy then) splits it for as long as it runs, and a waiting job as wide as that node
either waits or spreads over other nodes at the network rate. Moving the narrow job to a
small node that holds it now costs it only its restart; its queue key does not matter
(it is not overtaken: it runs on at once). At an event, on the running jobs' residual,
machine h by machine (most GPUs first): the running jobs co-located on h alone (each
resumed at the same width and rate, ending at most ⌈restart_s/Δ⌉ slots after its run)
go best fit, longest left first, to machines with fewer GPUs than h that hold them for
the rest of their run, until h holds now the co-located shape of a waiting job that no
machine holds now. The moves are taken when, in the list schedule of the waiting jobs
(at most ``preempt_jobs``, in queue order), some job then starts now co-located and ends
sooner than without the moves, and the total with the moves (the moved jobs' ends
included) is below the one without. Only the first such machine is moved per event (the
next event looks again), and then no pause is weighed at that event; on a cluster whose
machines all have as many GPUs, nothing is weighed at all. Kept only if the
re-plan starts each moved job again now and starts one of those jobs co-located.

**Shrink in place** (``preempt_shrink``, off: measured, not kept; not live;
:func:`shrunk_run`). A pause gives the victim's whole room back, though the jobs
of S may need a part of it: the rest idles, or goes to jobs further back, while the
victim waits for its whole width again (and if it could start again at once, narrower,
the re-plan drops the pause, so S waits instead).
A shrink restarts the victim at once, narrower, on the machines it holds, in what S
leaves of its room: the faster of (a) every worker of its run that still fits on its
machine beside the PSs it keeps (distributed; as many PSs, where they were, as the kept
workers need) and (b) as many workers as fit beside one PS co-located on one of its
machines — never on a machine it did not hold, so it does not wander (the migration
that lost on the ladder moved a 32-worker job four times in 20 slots). Weighed by the
rollout: the total is the list schedule of the waiting jobs on the room less the shrunk
run, plus the shrunk run's own end − now + 1; the shrink is taken when that is lower
than both the total without and with a pause. The re-plan then holds the shrunk run's
room before it places the queue, and the shrink, like a pause, is kept only if a job
of S starts; it counts towards ``preempt_max``. Not for allreduce jobs (their ring has
its own rules, ``allreduce_shrink``); not live.

**Resize by checkpoint-restart** (``preempt_resize``). Jobs are not elastic: a run has
one constant width, so a job that started narrow (the room was short) could never use
the GPUs that free up later, and a job the per-job decision makes wait for its width
holds nothing while GPUs stand idle. Two rules, both paying the restart charge ρ above:

* *Grow* (:func:`grow`). A running job j that started before now, runs slower than its
  fastest shape (:func:`fastest_rate`) and
  has more than ⌈restart_s / Δ⌉ slots left is decided again: its resumed request (the
  work left + ρ_j) by the same per-job decision (the queue call on that one job) on the
  room with j's own room given back. If that decision starts now and ends e_new with
  e_old − e_new > ⌈restart_s / Δ⌉ slots (e_old: the end of j's run), j is paused and
  started with it in the same step: gain_j = (e_old − e_new)·Δ > c, j's own exchange.
  It is decided *after* the event's re-plan, on the room the step leaves: the running
  jobs' residual with j's room given back, minus what the step started *and* the
  tentative plans it reserved, so no decision of the step moves (the queue head's bound
  holds). Candidates go by the queue key of their resumed request (:mod:`.queue_order`),
  each on the room the ones before it left. (Deciding the candidates whose key comes
  before every waiting job's *before* the re-plan, the queue order's own priority,
  measured worse on the sweep: 0.9800 against 0.9780 of the reference on average, worst
  1.58 × the bound against 1.37.)
* *Start narrow, then grow* (:func:`_narrow_then_grow`). A reserved job i whose plan P
  starts at t > now (it waits for its width) starts now instead, in the room idle now,
  when that pays on the estimate: N, the per-job decision on the book *frozen* (every
  reservation held from now on for ever, so N fits whatever happens later), runs at
  rate r_N < r_P until t, then i grows into P's shape at rate r_P for the rest plus ρ_i:
  it ends at t + ⌈(W_i − r_N·(t − now) + ρ_i) / r_P⌉ − 1, and it is taken when that is
  more than the restart cost before P's end. The grow at t is the rule above, in the
  room the re-plan at t leaves (so it may not come: then i runs N to its end). Since
  nothing keeps P's room for it, the bet is bounded (``narrow_regret`` = κ, 2 by
  default; 0 = no bound): N is taken only if N alone ends at most κ times as long after
  now as P, e_N − now + 1 ≤ κ·(e_P − now + 1), so the job's time from now to its end is
  at most κ × what waiting gives, whether the grow comes or not.

* *Regather before the re-plan* (``preempt_regather``; :func:`_regather`). The grow is
  decided after the re-plan, so a fast machine that frees goes to the queue first. A
  running job that runs spread, slower than its fastest shape, whose resumed request's
  key is below every waiting job's (every waiting job would yield to it) is re-decided
  *before* the re-plan, by rising key, on the running jobs' book with its own room given
  back, and restarted when the new run starts now co-located and ends more than the
  restart cost sooner: SRPT on machines of unequal speed, the job with the least work
  left on the fastest machine. Only a move to co-location is taken (a wider spread grown
  before the re-plan can block short arrivals behind it).

What neither weighs: the waiting jobs the step neither started nor reserved (they held
nothing) may find a wider run in their way, and a narrow start's grow may find its room
taken by then; the average over the sweep decides whether that pays (measured:
docs/formulation.md §16, the parameter table). The live queue calls the same
:func:`replan_preempting` (``services/live_queue.preempting_step``): with the site's
``preempt_resize`` its ``mlsub replan`` starts the narrow starts and acts on a grow (a
pause whose ``for_jobs`` is empty) as on any pause, the job started again wider by the
re-plan that follows (docs/formulation.md §16, "Live").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from ...model import ClusterSnapshot, Decision, JobRequest, Mode, SlotPlan, speed
from ..params import PREEMPT_GAINS, PlacementParams
from ..program.job_lp import JobShape
from ..program.residual import FloatArray, Residual, residual_from
from ..program.widths import max_rate, widths
from .arrival import Arrival
from .late_binding import PendingJob, QueueStep, ordered
from .list_schedule import (
    arrival_of,
    earliest_requested,
    fewest_requested_slots,
    listed,
    rate_bound,
    requested_at,
    usage,
)
from .lookahead import forecast
from .queue_order import keyer

QueueCall = Callable[
    [tuple[PendingJob, ...], ClusterSnapshot, PlacementParams, Sequence[JobRequest]], QueueStep
]


@dataclass(frozen=True)
class RunningRun:
    """A running job as the preemption rule sees it: ``request`` is what its current run
    covers (after an earlier preemption: the work left then plus the charge), ``decision``
    the run (one constant shape), ``preemptions`` how often it was paused before for
    waiting jobs (what ``preempt_max`` limits; resizes are not counted)."""

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
    gain_s: float  # estimated reduction of the total completion time (``net``: with the
    # restart's cost to the paused job inside; else before it)
    cost_s: float  # what the restart adds to the paused job's own run
    net: bool = False  # the gain is the rollout's, net of the restart (``preempt_gain``)
    move: bool = False  # restarted at once on a smaller machine (``preempt_defrag``)
    restart: Decision | None = None  # a shrink (``preempt_shrink``): the narrower run it
    # restarts on at once, on machines it holds, beside the jobs it gave way to
    group: tuple[str, ...] = ()  # ``preempt_group``: the other jobs paused with it for
    # ``for_jobs`` (the pause stands only with all of them)
    regather: bool = False  # ``preempt_regather``: a resize decided before the re-plan,
    # the job started again co-located on one node (``for_jobs`` empty)


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
    co-located beside one PS on one machine, or distributed over all of them
    (:func:`..program.widths.max_rate`)."""
    return max_rate(job, widths(job, capacity), slot_seconds)


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


def victim_cost_s(
    run: RunningRun, left: float, charge: float, params: PlacementParams, slot_seconds: float
) -> float:
    """What pausing ``run`` now costs its own completion (``preempt_cost``): ``slot``, the
    most one restart may cost on the slot grid (:func:`restart_cost_s`); ``exact``, the
    whole slots its restart charge ρ adds to its run when it resumes in its current shape
    at rate r: (⌈(R + ρ)/r⌉ − ⌈R/r⌉)·Δ, R the work it has left (0 when ρ fits in the
    slack of its last slot, one slot when it does not, for ρ ≤ r)."""
    if params.preempt_cost == "slot" or params.restart_s <= 0:
        return restart_cost_s(params, slot_seconds)
    rate = plan_rate(run.decision.slots[-1], run.request, slot_seconds)
    if rate <= 0:
        return restart_cost_s(params, slot_seconds)
    extra = math.ceil((left + charge) / rate - 1e-9) - math.ceil(left / rate - 1e-9)
    return max(0, extra) * slot_seconds


@dataclass
class _Blocked:
    pending: PendingJob
    key: tuple[float, int, str]
    res: Residual  # the room it was found not to start in (after the starts ahead of it)
    # (3,) the least total room its requested width needs (_least_room; zeros: no screen)
    least: FloatArray = field(default_factory=lambda: np.zeros(3))
    found: int | None = None  # the earliest start found so far (``res`` never changes)
    scanned: int = 0  # starts before this slot were tried (and failed, unless ``found``)
    decided: Arrival | None = None  # its arrival at this event, for the rollouts

    def arrival(self, params: PlacementParams, slot_seconds: float, now: int) -> Arrival:
        """The job as decided at ``now`` (built once per event; a list schedule gives it
        its room)."""
        if self.decided is None:
            self.decided = arrival_of(self.pending.request, slot_seconds, self.res, params, now)
        return self.decided

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
                and requested_at(arr, self.res, sigma, room_left=False) is not None
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
    recent: Sequence[JobRequest] = (),
) -> tuple[Preemption, ...]:
    """The running jobs to pause at ``snapshot.now_slot`` (module docstring). The
    snapshot holds the running jobs' reservations (nothing else); ``recent``: the jobs
    that arrived lately, whose repeat the rollout counts with ``preempt_forecast``
    (module docstring, "Arrivals in the rollout"); pure."""
    now, delta = snapshot.now_slot, snapshot.slot_seconds
    if params.preempt_gain not in PREEMPT_GAINS:
        raise ValueError(f"preempt_gain {params.preempt_gain!r} is not one of {PREEMPT_GAINS}")
    if not params.preempt or not pending or not running:
        return ()
    res = residual_from(snapshot, now)
    key = keyer(snapshot.machines, delta, params.aging, params.aging_unit)
    queue = ordered(pending, snapshot, params)[: max(0, params.preempt_jobs)]
    victims: list[_Victim] | None = None
    gpus = res.capacity[:, 0]
    if params.preempt_defrag and (gpus < gpus.max(initial=0.0)).any():  # else no move fits
        victims = _victims(running, res, params, now, delta, key)
        moves = _moves(queue, victims, res, snapshot, params, key)
        if moves:
            return moves

    blocked: list[_Blocked] = []
    for p in queue:
        got = requested_at(arrival_of(p.request, delta, res, params, now), res, now)
        if got is not None:
            res = got[1]  # the re-plan starts it now: its room is taken first
        else:
            blocked.append(_Blocked(p, key(p.request), res, _least_room(p.request, delta)))
    if not blocked:
        return ()
    if victims is None:
        victims = _victims(running, res, params, now, delta, key)
    out: list[Preemption] = []
    index = snapshot.machine_index()
    rollout = params.preempt_gain == "rollout"
    paused: list[tuple[tuple[float, int, str], Arrival]] = []  # resumed at this event
    bases: dict[int, int] = {}  # the total without the pause, by forecast horizon
    reach = int(params.lookahead_max_s // delta) if params.preempt_forecast else 0
    coming: dict[int, list[tuple[tuple[float, int, str], Arrival]]] = {}

    def expected(horizon: int) -> list[tuple[tuple[float, int, str], Arrival]]:
        """The arrivals the recent past forecasts over ``horizon`` slots, keyed."""
        if horizon not in coming:
            coming[horizon] = [
                (key(j), arrival_of(j, delta, res, params, max(j.arrival_slot, now)))
                for j in forecast(recent, now, horizon)
            ]
        return coming[horizon]

    rollouts = 0
    gone: set[str] = set()  # paused at this event (with a group: before their turn)

    def starts_in(
        freed: Residual, below: tuple[float, int, str]
    ) -> tuple[list[tuple[_Blocked, int]], Residual]:
        """The blocked jobs with a key < ``below`` that start now at their requested
        width in ``freed``, in queue order, each on what the ones before it leave, and
        the room they leave. With ``preempt_heads`` the first ``reserve_depth`` of them
        that do not start hold their earliest start at that width before the later ones
        are tried, as the re-plan reserves them; the room returned is without those plans
        (they are the re-plan's, not the pause's)."""
        room = left = freed
        free = room.at(now).sum(axis=0)
        taken: list[tuple[_Blocked, int]] = []
        heads = 0
        for b in blocked:
            arr: Arrival | None = None
            if b.key < below and _may_fit(b.least, free):
                arr = arrival_of(b.pending.request, delta, room, params, now)
                got = requested_at(arr, room, now)
                if got is not None:
                    end, room, shape = got
                    # once heads are reserved in ``room``, the room passed on lacks them
                    left = left.minus(usage(arr, shape), now, end + 1) if heads else room
                    taken.append((b, end - now + 1))
                    continue
            if params.preempt_heads and heads < params.reserve_depth:
                heads += 1  # a reserved head: the jobs after it may not delay its plan
                arr = arr or arrival_of(b.pending.request, delta, room, params, now)
                _, room, _ = earliest_requested(arr, room)
        return taken, left

    for victim in victims:
        kj, run, req, _, charge = victim
        if run.decision.job_id in gone:
            continue
        if not blocked or kj <= min(b.key for b in blocked):
            break  # victims come by falling key: no waiting job may overtake the rest
        freed = _freed(res, run, index, now)
        taken, room = starts_in(freed, kj)
        group: list[_Victim] = [victim]
        if not taken and rollout and params.preempt_group:
            together = _group(victim, victims, gone, res, index, now, starts_in)
            if together is not None:
                group, freed, taken, room = together
        if not taken:
            continue
        cost = victim_cost_s(run, req.workload - charge, charge, params, delta)
        shrunk: tuple[Decision, FloatArray] | None = None
        if rollout:
            if rollouts >= params.preempt_rollouts:
                break  # the event's rollouts are spent: the rest wait for the next event
            rollouts += 1
            waiting = [(b.key, b.arrival(params, delta, now)) for b in blocked] + paused
            horizon = min(reach, max(g[1].decision.end_slot - now + 1 for g in group))
            if horizon > 0:
                waiting += expected(horizon)
            if horizon not in bases:
                whole = _list_total(waiting, res, now)
                assert whole is not None  # no limit: never cut short
                bases[horizon] = whole
            without = bases[horizon] + sum(g[1].decision.end_slot - now + 1 for g in group)
            mines = [(g[0], arrival_of(g[2], delta, res, params, now)) for g in group]
            withp = _list_total([*waiting, *mines], freed, now, without)
            gain = 0 if withp is None else without - withp
            if params.preempt_shrink and len(group) == 1:
                cut = _shrink_gain(run, req, room, freed, waiting, index, snapshot, without)
                if cut is not None and without - cut[2] > gain:
                    gain = without - cut[2]
                    shrunk = cut[0], cut[1]
            if gain <= 0:
                continue  # no gain: the total with the pause reaches the one without
        else:
            cap = run.decision.end_slot + 1  # when the victim's room frees anyway
            waits = [b.alt_start(params, delta, now, cap) - now for b, _ in taken]
            gain = sum(waits) - max(d for _, d in taken)
            if gain * delta <= cost:
                continue
        ids = tuple(g[1].decision.job_id for g in group)
        for g in group:
            left = g[2].workload - g[4]
            g_cost = cost if g is victim else victim_cost_s(g[1], left, g[4], params, delta)
            out.append(
                Preemption(
                    g[1].decision.job_id,
                    g[2],
                    g[3],
                    g[4],
                    tuple(b.pending.request.job_id for b, _ in taken),
                    gain * delta,
                    g_cost,
                    rollout,
                    restart=None if shrunk is None else shrunk[0],
                    group=tuple(i for i in ids if i != g[1].decision.job_id),
                )
            )
        gone.update(ids)
        res = room
        served = {id(b) for b, _ in taken}
        blocked = [b for b in blocked if id(b) not in served]
        if shrunk is not None:
            res = room.minus(shrunk[1], now, shrunk[0].end_slot + 1)
        elif rollout:
            paused.extend(mines)
        bases.clear()
        coming.clear()  # the forecast's arrivals are placed on the room as it is now
    return tuple(out)


def _group(
    victim: _Victim,
    victims: Sequence[_Victim],
    gone: set[str],
    res: Residual,
    index: dict[str, int],
    now: int,
    starts_in: Callable[
        [Residual, tuple[float, int, str]], tuple[list[tuple[_Blocked, int]], Residual]
    ],
) -> tuple[list[_Victim], Residual, list[tuple[_Blocked, int]], Residual] | None:
    """A pause together (``preempt_group``; module docstring): ``victim`` and the running
    jobs that share a machine with its run, added by falling key (each key above the
    waiting jobs it is paused for) until some blocked job starts now in the room they
    free together. Returns the group, the room it frees, the jobs that start in it and
    the room they leave; None when no group of at most :data:`_GROUP_MAX` partners starts
    one."""
    mine = {name for name, _ in victim[1].decision.slots[-1].workers}
    group = [victim]
    freed = _freed(res, victim[1], index, now)
    below = victim[0]
    for other in victims:
        if other is victim or other[1].decision.job_id in gone:
            continue
        if not mine.intersection(name for name, _ in other[1].decision.slots[-1].workers):
            continue
        group.append(other)
        freed = _freed(freed, other[1], index, now)
        below = min(below, other[0])
        taken, room = starts_in(freed, below)
        if taken:
            return group, freed, taken, room
        if len(group) - 1 >= _GROUP_MAX:
            break
    return None


_GROUP_MAX = 3
"""At most this many partners join a victim in a pause together (a bound on one event's
work: each partner is one more screen of the blocked jobs)."""


def _shrink_gain(
    run: RunningRun,
    req: JobRequest,
    room: Residual,
    freed: Residual,
    waiting: list[tuple[tuple[float, int, str], Arrival]],
    index: dict[str, int],
    snapshot: ClusterSnapshot,
    without: int,
) -> tuple[Decision, FloatArray, int] | None:
    """A shrink of ``run`` (``preempt_shrink``): its narrower run on the machines it holds,
    in ``room`` (its room given back less what the jobs it gives way to take), that run's
    usage and the rollout's total with it — ``waiting`` list-scheduled on ``freed`` less
    that usage, plus the shrunk run's own end − now + 1; None when no narrower run fits
    or the total reaches ``without`` (no gain)."""
    now = snapshot.now_slot
    got = shrunk_run(run, req, room, index, snapshot)
    if got is None:
        return None
    decision, use = got
    own = decision.end_slot - now + 1
    if own >= without:
        return None
    rest = _list_total(waiting, freed.minus(use, now, decision.end_slot + 1), now, without - own)
    if rest is None:
        return None
    return decision, use, rest + own


def shrunk_run(
    run: RunningRun,
    req: JobRequest,
    room: Residual,
    index: dict[str, int],
    snapshot: ClusterSnapshot,
) -> tuple[Decision, FloatArray] | None:
    """``run`` restarted now narrower on machines it holds (``preempt_shrink``, the module
    docstring's "Shrink in place"): ``req`` (its work left + the restart charge) on the
    faster of (a) every worker of its current run that still fits on its machine in
    ``room`` beside the PSs it keeps, distributed (the PSs where they are, as many as
    the kept workers need), and (b) as many workers as fit beside one PS co-located on
    one of its machines; with the usage (H, 3) of that run. None when neither keeps the
    workers the job needs, the run would not be narrower, or the job is an allreduce
    job (its ring has its own rules)."""
    if req.is_allreduce:
        return None
    now, delta = snapshot.now_slot, snapshot.slot_seconds
    names = tuple(m.name for m in snapshot.machines)
    plan = run.decision.slots[-1]
    free = room.at(now)
    alpha = np.array(req.worker.as_tuple(), dtype=np.float64)
    beta = np.array(req.ps.as_tuple(), dtype=np.float64)
    held_w = [(index[n], c) for n, c in plan.workers]
    held_p = [(index[n], c) for n, c in plan.ps]
    width = sum(c for _, c in held_w)
    options: list[tuple[float, SlotPlan]] = []

    def fits(left: FloatArray) -> int:
        need = alpha > 0
        if not need.any():
            return 10**9
        return int(np.floor(np.min(left[need] / alpha[need]) + 1e-9))

    # (a) distributed on its own machines, beside its PSs
    left = free.copy()
    for h, c in held_p:
        left[h] -= c * beta
    if (left >= -1e-9).all():
        kept = [(h, min(c, max(0, fits(left[h])))) for h, c in held_w]
        kept = [(h, c) for h, c in kept if c > 0]
        n = sum(c for _, c in kept)
        n_ps = req.ps_needed(n)
        if req.min_distributed_workers() <= n < width and n <= req.max_distributed_workers():
            ps: list[tuple[int, int]] = []
            for h, c in held_p:
                take = min(c, n_ps - sum(k for _, k in ps))
                if take > 0:
                    ps.append((h, take))
            if sum(k for _, k in ps) == n_ps:
                options.append(_rated(req, now, Mode.DISTRIBUTED, kept, ps, names, delta))
    # (b) co-located on one of its machines, beside one PS
    for h in sorted({h for h, _ in (*held_w, *held_p)}):
        n = min(req.max_workers, fits(free[h] - beta)) if (free[h] >= beta - 1e-9).all() else 0
        if n > 0 and (n < width or len(held_w) > 1):
            options.append(_rated(req, now, Mode.COLOCATED, [(h, n)], [(h, 1)], names, delta))
    options = [o for o in options if o[0] > 0]
    if not options:
        return None
    rate, best = max(options, key=lambda o: o[0])
    length = math.ceil(req.workload / rate - 1e-9)
    use = np.zeros((len(names), 3), dtype=np.float64)
    for name, c in best.workers:
        use[index[name]] += c * alpha
    for name, c in best.ps:
        use[index[name]] += c * beta
    rows = np.flatnonzero(use.any(axis=1))
    if (room.window_min(now, now + length, rows) < use[rows] - 1e-9).any():
        return None  # (the room only grows after now; checked, not assumed)
    best = replace(best, length=length)
    d = run.decision
    decision = Decision(
        job_id=d.job_id,
        policy=d.policy,
        form=d.form,
        seed=d.seed,
        slots=(best,),
        start_slot=now,
        end_slot=now + length - 1,
        work_covered=rate * length,
        arrival_slot=d.arrival_slot,
        solver=d.solver,
        solver_version=d.solver_version,
        notes=("shrunk in place: restarted narrower on its own machines for waiting jobs",),
    )
    return decision, use


def _rated(
    req: JobRequest,
    now: int,
    mode: Mode,
    workers: Sequence[tuple[int, int]],
    ps: Sequence[tuple[int, int]],
    names: tuple[str, ...],
    delta: float,
) -> tuple[float, SlotPlan]:
    plan = SlotPlan(
        now,
        mode,
        tuple((names[h], c) for h, c in sorted(workers)),
        tuple((names[h], c) for h, c in sorted(ps)),
        1,
    )
    return plan_rate(plan, req, delta), plan


_Victim = tuple[tuple[float, int, str], RunningRun, JobRequest, float, float]
"""A running job the rule may pause, move or resize: its resumed request's key, the run,
that request, the work its run did and its restart charge (:func:`resumed`)."""


def _victims(
    running: Sequence[RunningRun],
    res: Residual,
    params: PlacementParams,
    now: int,
    delta: float,
    key: Callable[[JobRequest], tuple[float, int, str]],
) -> list[_Victim]:
    """The running jobs a pause or a move may take, by falling key: started before now,
    not ended, paused fewer than ``preempt_max`` times."""
    out: list[_Victim] = []
    for run in running:
        d = run.decision
        if run.preemptions >= params.preempt_max or d.start_slot >= now or d.end_slot < now:
            continue
        out.append(_victim(run, now, res.capacity, delta, params, key))
    out.sort(key=lambda v: v[0], reverse=True)
    return out


def _victim(
    run: RunningRun,
    now: int,
    capacity: FloatArray,
    delta: float,
    params: PlacementParams,
    key: Callable[[JobRequest], tuple[float, int, str]],
) -> _Victim:
    """``run`` as a pause or a resize sees it at ``now``: its resumed request's key, the
    run, that request, the work done and the restart charge (:func:`resumed`)."""
    req, done, charge = resumed(run, now, capacity, delta, params.restart_s)
    return key(req), run, req, done, charge


def _moves(
    queue: Sequence[PendingJob],
    victims: Sequence[_Victim],
    res: Residual,
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    key: Callable[[JobRequest], tuple[float, int, str]],
) -> tuple[Preemption, ...]:
    """Moves to smaller nodes (``preempt_defrag``; module docstring), before any pause.
    On ``res`` (the running jobs alone), machine h by machine (most GPUs first): the
    running jobs co-located on h alone are placed one by one (longest left first) best
    fit — the machine with the least room left, then the lower index — on machines with
    fewer GPUs than h that hold their shape for the rest of their run from now at the same
    rate, until h holds, now, the co-located shape of a waiting job that no machine holds
    now. The moves are taken when the rollout's total — the waiting jobs (``queue``, in
    queue order) list-scheduled on the room after the moves, plus the moved jobs' ends — is
    below the one without; the first such machine's moves are returned (the next event
    looks again)."""
    now, delta = snapshot.now_slot, snapshot.slot_seconds
    index = snapshot.machine_index()
    gpu = res.capacity[:, 0]
    top = np.maximum(res.capacity.max(axis=0), 1e-9)
    slack = math.ceil(params.restart_s / delta)
    # waiting jobs whose co-located shape no machine holds now
    wants: list[tuple[PendingJob, FloatArray]] = []
    for p in queue:
        shape = JobShape.of(p.request, delta)
        need_colo = shape.alpha * shape.n_max + shape.beta
        view = res.for_job(p.request).at(now)
        if not (view >= need_colo - 1e-9).all(axis=1).any():
            wants.append((p, need_colo))
    if not wants:
        return ()
    on: dict[int, list[tuple[RunningRun, JobRequest, float, float, FloatArray, int]]] = {}
    for _, run, req, done, charge in victims:
        plan = run.decision.slots[-1]
        hosts = {n for n, _ in plan.workers} | {n for n, _ in plan.ps}
        if len(hosts) != 1 or plan.mode != Mode.COLOCATED:
            continue
        rate = plan_rate(plan, run.request, delta)
        if rate <= 0:
            continue
        span = math.ceil(req.workload / rate - 1e-9)
        if now + span - 1 > run.decision.end_slot + slack:
            continue
        w = sum(c for _, c in plan.workers)
        ps = sum(c for _, c in plan.ps)
        need = w * np.array(req.worker.as_tuple()) + ps * np.array(req.ps.as_tuple())
        on.setdefault(index[next(iter(hosts))], []).append((run, req, done, charge, need, span))
    arrivals = sorted(
        ((key(p.request), arrival_of(p.request, delta, res, params, now)) for p in queue),
        key=lambda w: w[0],
    )
    base: int | None = None
    before: dict[str, int] = {}
    for h0 in sorted(on, key=lambda h: (-gpu[h], h)):
        room = res
        moved: list[tuple[RunningRun, JobRequest, float, float, int]] = []
        served: list[str] = []
        for run, req, done, charge, need, span in sorted(on[h0], key=lambda m: -m[5]):
            rows = np.flatnonzero((gpu < gpu[h0]) & (gpu >= need[0]))
            if not len(rows):
                break
            mins = room.for_job(req).window_min(now, now + span, rows)
            ok = (mins >= need - 1e-9).all(axis=1)
            if not ok.any():
                break
            fits = rows[ok]
            left = ((mins[ok] - need) / top).sum(axis=1)
            h = int(fits[np.lexsort((fits, left))[0]])
            use = np.zeros((res.n_machines, 3))
            use[h] = need
            room = _freed(room, run, index, now).minus(use, now, now + span)
            moved.append((run, req, done, charge, span))
            here = room.at(now)[h0]
            served = [
                p.request.job_id for p, need_colo in wants if (here >= need_colo - 1e-9).all()
            ]
            if served:
                break
        if not served:
            continue
        if base is None:
            base, before = _starting_now(arrivals, res, now)
        withm, after = _starting_now(arrivals, room, now)
        # the jobs the moves start now co-located, which ended later without them
        served = sorted(j for j, e in after.items() if e < before.get(j, e + 1))
        without_moves = sum(m[0].decision.end_slot - now + 1 for m in moved)
        mine = sum(m[4] for m in moved)
        gain = base + without_moves - (withm + mine)
        if not served or gain <= 0:
            continue
        return tuple(
            Preemption(
                run.decision.job_id, req, done, charge, tuple(served), gain * delta,
                victim_cost_s(run, req.workload - charge, charge, params, delta), True, True,
            )
            for run, req, done, charge, _ in moved
        )  # fmt: skip
    return ()


def _starting_now(
    waiting: list[tuple[tuple[float, int, str], Arrival]], res: Residual, now: int
) -> tuple[int, dict[str, int]]:
    """Σ (end − now + 1) of ``waiting`` (in key order) list-scheduled on ``res``, and the
    end of each job that starts at ``now`` co-located in it."""
    total = 0
    ends: dict[str, int] = {}
    for one, _ in listed((a for _, a in waiting), res):
        total += one.end - now + 1
        if one.start == now and one.colocated:
            ends[one.job_id] = one.end
    return total, ends


def _list_total(
    waiting: list[tuple[tuple[float, int, str], Arrival]],
    res: Residual,
    now: int,
    limit: int | None = None,
) -> int | None:
    """Σ (end − now + 1) of ``waiting`` (arrivals decided at ``now``) list-scheduled in
    key order on ``res`` (:func:`.list_schedule.listed`), or None as soon as it is certain
    to reach ``limit``: the sum so far plus the least term of every job still to place
    (:func:`.list_schedule.fewest_requested_slots`, as each starts at ``now`` or later) is
    ≥ ``limit``. The same answer whenever it is below ``limit``, without placing the
    rest."""
    arrs = [a for _, a in sorted(waiting, key=lambda w: w[0])]
    floors = [fewest_requested_slots(a.shape) for a in arrs]
    rest = sum(floors)
    total = 0
    for floor, (one, _) in zip(floors, listed(arrs, res), strict=True):
        rest -= floor
        total += one.end - now + 1
        if limit is not None and total + rest >= limit:
            return None
    return total


def _least_room(job: JobRequest, slot_seconds: float) -> FloatArray:
    """(3,) the least total room ``job`` needs at its requested width, as
    :func:`.list_schedule.requested_at` places it: all N workers and a PS co-located on one
    machine (α·N + β there) or N_ex workers distributed (α·N_ex in all); the smaller of
    the two per resource."""
    shape = JobShape.of(job, slot_seconds)
    out: FloatArray = np.minimum(
        shape.alpha * shape.n_max + shape.beta, shape.alpha * shape.n_dist_max
    )
    return out


def _may_fit(least: FloatArray, free: FloatArray) -> bool:
    """Whether a job needing ``least`` (:func:`_least_room`) may start in a room whose
    total free resources now are ``free`` (3,): a screen before ``requested_at``. A total
    below ``least`` in some resource fails both of its placements, so the screen skips
    only jobs that call would reject."""
    return bool((free >= least - 1e-9).all())


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
    seeds = {r.decision.job_id: r.seed for r in running}
    # the resize candidates, listed once: what makes one (its run, its key) does not
    # depend on the book, so the regather and the grow share the list
    cands = _grow_candidates(running, snapshot, params) if params.preempt_resize else []
    gathered: tuple[Decision, ...] = ()
    moved: tuple[Preemption, ...] = ()
    if params.preempt_regather and pending and cands:
        snapshot, gathered, moved = _regather(pending, cands, snapshot, params, queue, recent)
        if moved:
            ids = {p.job_id for p in moved}
            running = [r for r in running if r.decision.job_id not in ids]
    step, chosen = _replan_pausing(pending, running, snapshot, params, queue, recent)
    if gathered:
        step = replace(step, started=(*step.started, *gathered))
        chosen = (*chosen, *moved)
    if not params.preempt_resize:
        return step, chosen
    ids = {p.job_id for p in chosen}
    waiting = (*pending, *(PendingJob(p.resumed, seeds[p.job_id]) for p in chosen))
    book = without_jobs(snapshot, ids)
    rest = [c for c in cands if c[1].decision.job_id not in ids]
    # resize, 1: grow running jobs in the room the step leaves
    step, grown = grow(step, waiting, rest, book, params, queue, recent)
    # 2: the reserved head starts narrow now when that and a grow at its start end sooner,
    # on the book as the step leaves it (the running jobs, what it started and grew)
    requests = {p.request.job_id: p.request for p in waiting}
    requests.update((p.job_id, p.resumed) for p in grown)
    taken = tuple(r for d in step.started for r in d.reservations(requests[d.job_id]))
    after = replace(book, reservations=(*book.reservations, *taken))
    step = _narrow_then_grow(step, waiting, after, params, queue, recent)
    return step, (*chosen, *grown)


def _regather(
    pending: tuple[PendingJob, ...],
    cands: Sequence[_Victim],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    queue: QueueCall,
    recent: Sequence[JobRequest],
) -> tuple[ClusterSnapshot, tuple[Decision, ...], tuple[Preemption, ...]]:
    """Regather before the re-plan (``preempt_regather``; module docstring): each running
    job that runs spread, slower than its fastest shape, and whose resumed request's key
    is below every waiting job's, re-decided on the running jobs' book with its own room
    given back, by rising key; taken when the new run starts now co-located and ends more
    than the restart cost sooner (``cands``: :func:`_grow_candidates`). Returns the book
    with the new runs, the runs and their pauses."""
    key = keyer(snapshot.machines, snapshot.slot_seconds, params.aging, params.aging_unit)
    head = min(key(p.request) for p in pending)
    spread = [c for c in cands if c[0] < head and c[1].decision.slots[-1].mode == Mode.DISTRIBUTED]
    if not spread:
        return snapshot, (), ()
    new, out, book = _grow_into(snapshot, spread, params, queue, recent, colocated=True)
    return book, tuple(new), tuple(replace(p, regather=True) for p in out)


def _grow_candidates(
    running: Sequence[RunningRun], snapshot: ClusterSnapshot, params: PlacementParams
) -> list[_Victim]:
    """The running jobs a resize may speed up, by queue key of their resumed request:
    started before now (however often paused: ``preempt_max`` limits pauses for waiting
    jobs, and each grow pays on its own and leaves the job faster), more than the restart
    cost left, slower than their fastest shape (module docstring)."""
    now, delta = snapshot.now_slot, snapshot.slot_seconds
    slots_c = math.ceil(max(0.0, params.restart_s) / delta - 1e-9)
    capacity = np.array([m.capacity.as_tuple() for m in snapshot.machines], dtype=np.float64)
    key = keyer(snapshot.machines, delta, params.aging, params.aging_unit)
    cands = []
    for run in running:
        d = run.decision
        if d.start_slot >= now:
            continue
        if d.end_slot - now <= slots_c:
            continue  # it ends within the restart cost: a restart cannot pay
        rate = plan_rate(d.slots[-1], run.request, delta)
        if rate >= fastest_rate(run.request, capacity, delta) * (1 - 1e-9):
            continue  # already in its fastest shape: no resize is faster
        cands.append(_victim(run, now, capacity, delta, params, key))
    cands.sort(key=lambda c: c[0])
    return cands


def _grow_into(
    book: ClusterSnapshot,
    cands: Sequence[_Victim],
    params: PlacementParams,
    queue: QueueCall,
    recent: Sequence[JobRequest],
    colocated: bool = False,
) -> tuple[list[Decision], list[Preemption], ClusterSnapshot]:
    """Each candidate, in order, re-decided on ``book`` with its own room given back; the
    grown runs, their pauses and the book with them (``colocated``: only a new run
    co-located on one machine is taken)."""
    now, delta = book.now_slot, book.slot_seconds
    cost = restart_cost_s(params, delta)
    started: list[Decision] = []
    out: list[Preemption] = []
    if not cands:
        return started, out, book
    idle = residual_from(book, now).at(now)
    for _, run, req, done, charge in cands:
        alpha = np.array(run.request.worker.as_tuple())
        if not (idle >= alpha - 1e-9).all(axis=1).any():
            continue  # no idle room for one more worker: no shape is faster now
        job_id = run.decision.job_id
        room = without_jobs(book, {job_id})
        one = queue((PendingJob(req, run.seed),), room, params, recent)
        new = next((d for d in one.started if d.job_id == job_id), None)
        if new is None or (colocated and new.slots[0].mode != Mode.COLOCATED):
            continue
        gain = (run.decision.end_slot - new.end_slot) * delta
        if gain <= cost:
            continue
        out.append(Preemption(job_id, req, done, charge, (), gain, cost))
        started.append(new)
        book = replace(room, reservations=(*room.reservations, *new.reservations(req)))
        idle = residual_from(book, now).at(now)
    return started, out, book


_FOREVER = 10**8


def _narrow_then_grow(
    step: QueueStep,
    waiting: Sequence[PendingJob],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    queue: QueueCall,
    recent: Sequence[JobRequest],
) -> QueueStep:
    """``snapshot``: the book after the step (running, started, grown), without its
    tentative plans. A reserved job i whose plan P starts at t > now starts now instead, in the room
    idle now (decided by the per-job decision on the book frozen: every reservation held
    from now on forever, so its start now fits whatever happens), when a run N at N's
    rate until t and then P's shape for the rest plus the restart charge ends more than
    the restart cost before P (module docstring); the grow at t is then the rule's."""
    now, delta = snapshot.now_slot, snapshot.slot_seconds
    later = [d for d in step.planned if d.start_slot > now and len(d.slots) == 1]
    if not later:
        return step
    cost = restart_cost_s(params, delta)
    capacity = np.array([m.capacity.as_tuple() for m in snapshot.machines], dtype=np.float64)
    by_id = {p.request.job_id: p for p in waiting}
    started, planned = list(step.started), list(step.planned)
    book = list(snapshot.reservations)  # everything but the tentative plans
    for d in later:
        p = by_id[d.job_id]
        req = p.request
        held = [
            r
            for x in planned
            if x.job_id != d.job_id
            for r in x.reservations(by_id[x.job_id].request)
        ]
        rows = (*book, *held)
        frozen = replace(
            snapshot,
            reservations=tuple(
                replace(r, start_slot=min(r.start_slot, now), end_slot=now + _FOREVER)
                for r in rows
                if r.end_slot > now
            ),
        )
        if not _may_pay(req, d, frozen, params, capacity, cost):
            continue  # no narrow run in the idle room can pass the tests below
        one = queue((PendingJob(req, p.seed),), frozen, params, recent)
        n = next((x for x in one.started if x.job_id == d.job_id), None)
        if n is None or len(n.slots) != 1:
            continue
        r_n = plan_rate(n.slots[0], req, delta)
        r_p = plan_rate(d.slots[0], req, delta)
        if r_n >= r_p * (1 - 1e-9) or r_n <= 0:
            continue
        if 0 < params.narrow_regret * (d.end_slot - now + 1) < n.end_slot - now + 1:
            continue  # should the grow never come, N alone would end too late
        est = _grown_end(req, d, r_n, r_p, capacity, params, now, delta)
        if est is None or (d.end_slot - est) * delta <= cost:
            continue
        started.append(n)
        book.extend(n.reservations(req))
        planned = [x for x in planned if x.job_id != d.job_id]
    if len(started) == len(step.started):
        return step
    return replace(step, started=tuple(started), planned=tuple(planned))


def _may_pay(
    req: JobRequest,
    plan: Decision,
    frozen: ClusterSnapshot,
    params: PlacementParams,
    capacity: FloatArray,
    cost: float,
) -> bool:
    """A screen of :func:`_narrow_then_grow` before its per-job decision: False only when
    no run N in the room idle now can pass its tests, read at N's best rate, an upper
    bound r̄ ≥ r_N of any constant shape there (``list_schedule.rate_bound``): N alone ends
    no sooner than now + ⌈V/r̄⌉ − 1 (the ``narrow_regret`` test), and the estimated end
    after the grow falls as r_N rises (the gain test). An allreduce job is not screened."""
    if req.is_allreduce:
        return True
    now, delta = frozen.now_slot, frozen.slot_seconds
    res = residual_from(frozen, now)
    best = rate_bound(arrival_of(req, delta, res, params, now), res.at(now))
    if best <= 0:
        return False
    horizon = plan.end_slot - now + 1
    if 0 < params.narrow_regret * horizon < math.ceil(req.workload / best - 1e-9):
        return False
    r_p = plan_rate(plan.slots[0], req, delta)
    grown = min(best, r_p)
    est = _grown_end(req, plan, grown, r_p, capacity, params, now, delta) if r_p > 0 else None
    return est is None or (plan.end_slot - est) * delta > cost


def _grown_end(
    req: JobRequest,
    plan: Decision,
    r_n: float,
    r_p: float,
    capacity: FloatArray,
    params: PlacementParams,
    now: int,
    slot_seconds: float,
) -> int | None:
    """The estimated end of a job run narrow at r_n from ``now`` until its plan's start t
    and then in its plan's shape at r_p with the rest plus its restart charge ρ:
    t + ⌈(V − r_n·(t − now) + ρ)/r_p⌉ − 1 (falling as r_n rises); None when the narrow
    run alone covers V by t (then it is no narrow start to grow)."""
    by_t = r_n * (plan.start_slot - now)
    if by_t >= req.workload:
        return None
    rho = restart_charge(req, capacity, slot_seconds, params.restart_s)
    return plan.start_slot + math.ceil((req.workload - by_t + rho) / r_p - 1e-9) - 1


def _replan_pausing(
    pending: tuple[PendingJob, ...],
    running: Sequence[RunningRun],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    queue: QueueCall,
    recent: Sequence[JobRequest],
) -> tuple[QueueStep, tuple[Preemption, ...]]:
    """The re-plan with the preemptions of :func:`choose` that pay (module docstring)."""
    chosen = choose(pending, running, snapshot, params, recent)
    seeds = {r.decision.job_id: r.seed for r in running}
    for _ in range(2):
        if not chosen:
            break
        ids = {p.job_id for p in chosen}
        extra = tuple(PendingJob(p.resumed, seeds[p.job_id]) for p in chosen if not p.restart)
        # a shrink's narrower run holds its room before the queue is placed around it
        shrunk = tuple(p.restart for p in chosen if p.restart is not None)
        book = without_jobs(snapshot, ids)
        if shrunk:
            requests = {p.job_id: p.resumed for p in chosen}
            held = tuple(r for d in shrunk for r in d.reservations(requests[d.job_id]))
            book = replace(book, reservations=(*book.reservations, *held))
        step = queue((*pending, *extra), book, params, recent)
        now_started = {d.job_id for d in step.started}
        if shrunk:
            step = replace(step, started=(*step.started, *shrunk))
        colocated = {d.job_id for d in step.started if d.slots[0].mode == Mode.COLOCATED}
        used = (
            _room_used(chosen, step, (*pending, *extra), snapshot, ids, params)
            if params.preempt_room
            else set()
        )
        wasted = {
            p.job_id
            for p in chosen
            if (not now_started.intersection(p.for_jobs) and p.job_id not in used)
            or (p.move and (p.job_id not in now_started or not colocated & set(p.for_jobs)))
            or (p.job_id in now_started and not params.preempt_migrate and not p.move)
        }
        # a pause together stands or falls as one
        wasted |= {p.job_id for p in chosen if wasted.intersection(p.group)}
        if not wasted:
            return step, chosen
        chosen = tuple(p for p in chosen if p.job_id not in wasted)
    return queue(pending, snapshot, params, recent), ()


def _room_used(
    chosen: Sequence[Preemption],
    step: QueueStep,
    waiting: Sequence[PendingJob],
    snapshot: ClusterSnapshot,
    paused: set[str],
    params: PlacementParams,
) -> set[str]:
    """The paused jobs in whose room ``step`` starts, now, jobs ahead of them in the queue
    (``preempt_room``): on a machine the paused job holds now, the jobs the step starts
    now whose queue key is below the paused job's resumed key (the jobs a pause may be
    for: none overtakes it otherwise) use more of some resource than the machine has free
    with every paused job still on it. Pure."""
    now = snapshot.now_slot
    free = residual_from(snapshot, now).at(now)
    index = snapshot.machine_index()
    key = keyer(snapshot.machines, snapshot.slot_seconds, params.aging, params.aging_unit)
    requests = {p.request.job_id: p.request for p in waiting}
    starts = [d for d in step.started if d.job_id not in paused and d.start_slot == now]
    held: dict[str, set[int]] = {}  # the machines each paused job holds now
    for r in snapshot.reservations:
        if r.job_id in paused and r.start_slot <= now < r.end_slot:
            held.setdefault(r.job_id, set()).add(index[r.machine])
    placed = []  # each start's queue key and what it uses now, per machine
    for d in starts:
        use = np.zeros_like(free)
        for r in d.reservations(requests[d.job_id]):
            if r.start_slot <= now < r.end_slot:
                use[index[r.machine]] += r.usage.as_tuple()
        placed.append((key(requests[d.job_id]), use))
    out: set[str] = set()
    for p in chosen:
        below = key(p.resumed)
        use = sum((u for k, u in placed if k < below), np.zeros_like(free))
        if any((use[i] > free[i] + 1e-9).any() for i in held.get(p.job_id, ())):
            out.add(p.job_id)
    return out


def grow(
    step: QueueStep,
    waiting: Sequence[PendingJob],
    cands: Sequence[_Victim],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    queue: QueueCall,
    recent: Sequence[JobRequest] = (),
) -> tuple[QueueStep, tuple[Preemption, ...]]:
    """Resize by checkpoint-restart (module docstring, ``preempt_resize``): ``step`` with
    the grown runs added to its started decisions, and the pauses they take (each
    ``for_jobs`` empty: the room is for the job itself). ``waiting``: the step's waiting
    jobs (their requests give its decisions' usage); ``cands``: the candidates
    (:func:`_grow_candidates`, by key); ``snapshot``: the running jobs' reservations.
    Pure."""
    if not cands:
        return step, ()
    requests = {p.request.job_id: p.request for p in waiting}
    given = tuple(
        r for d in (*step.started, *step.planned) for r in d.reservations(requests[d.job_id])
    )
    book = replace(snapshot, reservations=(*snapshot.reservations, *given))
    new, out, _ = _grow_into(book, cands, params, queue, recent)
    if not out:
        return step, ()
    return replace(step, started=(*step.started, *new)), tuple(out)
