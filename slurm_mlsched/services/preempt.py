"""Checkpoint-restart preemption on the live queue (docs/formulation.md §16, "Live").

The replay decides preemption with a pure rule (``placement/yu_rr/preemption.py``); the
live queue calls the very same rule (``live_queue.preempting_step``) on the same inputs,
built here from the store and Slurm: the running mlsub jobs of the cluster with their
decisions (:func:`candidates`, :func:`running_run`: the work each has covered is counted
from the start Slurm gives and its rate), and the waiting queue. This module then acts on
each job the rule chose (:func:`act`):

1. the re-plan has recorded it ``preempting`` under the planning lock (it still
   reserves: Slurm still runs it) with the request it will wait with;
2. its checkpoint signal (the job's own ``#SBATCH --signal=SIG@SECONDS``,
   ``files/checkpoint_signal.py``) is sent with ``scancel --signal=SIG`` (``--batch``
   with ``B:``), as the job's owner;
3. a bounded wait of the job's own warning time (capped by the site's
   ``preempt_wait_max_s``) lets it write its checkpoint; a job that ends meanwhile is
   left to reconcile (it ended as Slurm says);
4. ``scontrol requeuehold JOBID``, as the job's owner, and a bounded wait until Slurm
   shows it pending and held; then ``queued`` (the store swaps in the resumed request),
   and the queue's next step starts it again like any queued job (the held job released,
   or the new layout submitted and the held one cancelled).

Every failure leaves the store as Slurm is: a signal or requeue that failed while the
job still runs puts it back to ``running``; a requeue Slurm did not confirm in time
stays ``preempting`` (still reserving), and ``mlsub reconcile`` records ``queued`` once
squeue shows the job held, or ``running`` once the acting process is gone and the job
still runs.

Only a job that consents is preempted: its script has a ``--signal`` line, it can be
submitted again (its launch is kept), Slurm vouches for it (its exact tag, its owner),
this process may act for its owner; the rule pauses it for waiting jobs only if it was
paused so fewer than ``preempt_max`` times.

With the site's ``preempt_resize`` the same rule also resizes (docs/formulation.md §16,
"Live"): a *grow* is a pause of a running job that consents (its ``for_jobs`` empty),
acted on as any pause, after which the queue's next step starts it again wider in the
room it and the idle nodes free; its ``preempting`` transition reads
``replan: resized …`` (:data:`~..storage.records.RESIZE_DETAIL`), so it does not count
towards ``preempt_max``.

With the site's ``preempt_regather`` (beside ``preempt_resize``) the rule also
*regathers* (docs/formulation.md §16, "Regather before the re-plan"): a running job that
consents, runs spread over nodes slower than its fastest shape and whose work left puts
it ahead of every waiting job is paused (its ``for_jobs`` empty, a resize: not counted
towards ``preempt_max``) when, decided before the queue is placed, it starts again at
once co-located on one node and ends more than the restart cost sooner; the queue's next
step, in which it is the head, starts it there. Its ``preempting`` transition reads
``replan: resized to start again co-located on one node …``.

With the site's ``preempt_defrag`` the rule also moves (docs/formulation.md §16, "Moves to
a smaller node"): a *move* is a pause of a running job that consents, co-located on a
node, chosen when a node with fewer GPUs holds it now and the node it leaves then holds a
waiting job co-located; acted on as any pause (it counts towards ``preempt_max``, as in
the replay), after which the queue's next step starts it again at once on the smaller
node and the waiting job on the node it left. Its ``preempting`` transition reads
``replan: moved to a smaller node …`` (:data:`~..storage.records.MOVE_DETAIL`).
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Protocol

from ..errors import InvalidTransitionError, MlschedError, RemoteError, SlurmError, StoreError
from ..files.checkpoint_signal import CheckpointSignal
from ..model import ClusterSnapshot, JobRequest
from ..placement.yu_rr.preemption import Preemption, RunningRun
from ..sbatch.tag import find_tags
from ..slurm.jobs import JobStatus
from ..slurm.nodes import NodeStateSource
from ..storage import DecisionRecord, DecisionState, DecisionStore, PlanningSession
from ..storage.records import MOVE_DETAIL, RESIZE_DETAIL
from .clock import Clock
from .live_queue import consent_signal, tag_of

S = DecisionState

#: The longest wait for a job's checkpoint when the site sets none (seconds).
DEFAULT_WAIT_MAX_S = 120.0
#: How long Slurm may take to show a requeued job pending and held (seconds).
REQUEUE_CONFIRM_S = 30.0


@dataclass(frozen=True)
class PreemptSettings:
    """The site's preemption settings (``preempt``, ``preempt_wait_max_s``,
    ``preempt_resize``, ``preempt_defrag``, ``preempt_regather``, ``restart_s``) and the
    poll."""

    wait_max_s: float = DEFAULT_WAIT_MAX_S
    confirm_s: float = REQUEUE_CONFIRM_S
    poll_s: float = 1.0
    resize: bool = False  # the site's ``preempt_resize``
    defrag: bool = False  # the site's ``preempt_defrag``: moves to a smaller node
    regather: bool = False  # the site's ``preempt_regather`` (with ``resize``): a spread
    # running job ahead of the queue restarted co-located before the queue is placed
    restart_s: float | None = None  # the site's ``restart_s``, the cost a pause or resize
    # must beat (None: the decision parameters' own, ``PlacementParams.restart_s``)


class Preempter(Protocol):
    """The Slurm side of preempting a running job (``SlurmStarter``; tests pass fakes)."""

    def may_start(self, owner: str) -> bool: ...

    def jobs(self) -> Mapping[str, JobStatus]:
        """Every job the controller lists now, by job id."""
        ...

    def signal(self, job_id: str, signal: CheckpointSignal, owner: str) -> None:
        """Send ``signal`` to job ``job_id`` as ``owner``."""
        ...

    def requeue_hold(self, job_id: str, owner: str) -> None:
        """``scontrol requeuehold job_id`` as ``owner``."""
        ...


@dataclass(frozen=True)
class LivePreemption:
    """What a re-plan needs to preempt: the Slurm side, the settings, the sleep."""

    slurm: Preempter
    settings: PreemptSettings = PreemptSettings()
    sleep: Callable[[float], None] = time.sleep


@dataclass(frozen=True)
class Candidate:
    """A running mlsub job that may be preempted: its decision, what Slurm says of it,
    and its checkpoint signal."""

    record: DecisionRecord
    status: JobStatus
    signal: CheckpointSignal


def candidates(
    records: Iterable[DecisionRecord],
    statuses: Mapping[str, JobStatus],
    cluster_name: str,
    may_act: Callable[[str], bool],
) -> tuple[Candidate, ...]:
    """The running decisions that consent to preemption and that this process may
    preempt (module docstring), oldest first (pure)."""
    out = []
    for r in records:
        job = r.summary.slurm_job_id
        status = statuses.get(job) if job else None
        if r.state not in (S.SUBMITTED, S.RUNNING) or status is None:
            continue
        if status.phase != "running" or status.state != "RUNNING" or status.start is None:
            continue
        signal = consent_signal(r)
        if signal is None:
            continue  # (how often it was paused is the rule's to weigh: ``preempt_max``)
        tag = str(tag_of(cluster_name, r.summary))
        if tag not in {str(t) for t in find_tags(status.comment)}:
            continue
        if not status.user or status.user != r.summary.job_owner:
            continue
        if may_act(r.summary.job_owner):
            out.append(Candidate(r, status, signal))
    return tuple(out)


def run_key(decision_id: int) -> str:
    """The key of a running decision in a step: its reservations' job id."""
    return f"mlsub-{decision_id}"


def running_run(c: Candidate, snapshot: ClusterSnapshot) -> RunningRun | None:
    """``c`` as the rule sees a running job, on ``snapshot``'s grid: its request (arrival
    re-based, as a queued job's), its seed, its decision shifted so that its run starts
    in the slot Slurm started it in (the work it covered by now is its rate × the slots
    since then), and how often it was paused for waiting jobs. None when it cannot be put
    on this grid (another Δ) or runs on nodes the snapshot does not have."""
    r = c.record
    delta = snapshot.slot_seconds
    assert c.status.start is not None  # candidates() keeps started jobs only
    if r.snapshot.slot_seconds != delta:
        return None
    names = {m.name for m in snapshot.machines}
    if any(n.node not in names for n in r.decision.placement):
        return None
    started = math.floor((c.status.start - snapshot.epoch).total_seconds() / delta)
    key = run_key(r.decision_id)
    decision = replace(r.decision.shifted(started - r.decision.start_slot), job_id=key)
    arrived = r.snapshot.slot_start(r.request.arrival_slot)
    arrival = math.floor((arrived - snapshot.epoch).total_seconds() / delta)
    request = replace(r.request, job_id=key, arrival_slot=arrival)
    return RunningRun(request, r.seed, decision, r.pauses)


def resumed_request(record: DecisionRecord, p: Preemption) -> JobRequest:
    """The request ``record`` waits with once requeued, on its own snapshot's grid and
    under its own job id: its request with the workload the rule gave it (the work its
    run has not covered + the restart charge)."""
    return replace(record.request, workload=p.resumed.workload)


@dataclass(frozen=True)
class Chosen:
    """A preemption recorded ``preempting``, to act on after the commit."""

    record: DecisionRecord
    signal: CheckpointSignal
    preemption: Preemption
    for_decisions: tuple[int, ...]


@dataclass(frozen=True)
class Preempted:
    """What a re-plan did to one running job it preempted."""

    decision_id: int
    user: str
    slurm_job_id: str
    action: str  # "requeued", "ended" (it ended by itself meanwhile), "pending" or "failed"
    signal: str
    waited_s: float
    work_done: float  # mini-batches its run covered
    work_left: float  # mini-batches it waits with (the charge included)
    for_decisions: tuple[int, ...]  # the queued decisions it makes room for
    gain_s: float  # with ``net``: the queue's total completion time saved, the restart
    # cost inside; else the gain the restart cost was weighed against
    cost_s: float
    note: str = ""
    net: bool = False  # the gain is the rollout's, net of the restart (``preempt_gain``)
    move: bool = False  # a move to a node with fewer GPUs (the site's ``preempt_defrag``)
    regather: bool = False  # a spread job restarted on one node before the queue is
    # placed (the site's ``preempt_regather``; a resize: nothing waits for it)

    def to_json(self) -> dict[str, object]:
        out = asdict(self)
        out["for_decisions"] = list(self.for_decisions)
        return out


def act(
    store: DecisionStore,
    preempter: Preempter,
    chosen: Chosen,
    *,
    clock: Clock,
    sleep: Callable[[float], None],
    settings: PreemptSettings,
) -> Preempted:
    """Signal, wait, requeue held, record (module docstring, steps 2–4). Every wait is a
    bounded number of polls."""
    record = chosen.record
    job = record.summary.slurm_job_id or ""
    owner = record.summary.job_owner
    wait = max(0.0, min(float(chosen.signal.warning_s), settings.wait_max_s))

    def report(action: str, waited: float, note: str = "") -> Preempted:
        p = chosen.preemption
        return Preempted(
            record.decision_id,
            record.summary.user,
            job,
            action,
            chosen.signal.signal,
            waited,
            p.work_done,
            p.resumed.workload,
            chosen.for_decisions,
            p.gain_s,
            p.cost_s,
            note,
            p.net,
            p.move,
            p.regather,
        )

    try:
        preempter.signal(job, chosen.signal, owner)
    except (SlurmError, RemoteError) as err:
        _back_to_running(store, record.decision_id, clock, f"signal {chosen.signal.signal}", err)
        return report("failed", 0.0, f"scancel --signal failed: {err.message}; it runs on")
    waited, status = _wait_checkpoint(preempter, job, wait, settings, sleep)
    if status is None or status.phase != "running":
        return report("ended", waited, "it ended during its checkpoint time: not requeued")
    try:
        preempter.requeue_hold(job, owner)
    except (SlurmError, RemoteError) as err:
        now = _status(preempter, job)
        if now is not None and now.phase == "running":
            _back_to_running(store, record.decision_id, clock, "scontrol requeuehold", err)
            return report("failed", waited, f"requeuehold failed: {err.message}; it runs on")
        return report("failed", waited, f"requeuehold failed: {err.message}")
    held = _wait_held(preempter, job, settings, sleep)
    if held is None:
        return report(
            "pending",
            waited,
            f"Slurm did not show it held within {settings.confirm_s:g} s: it stays "
            "'preempting'; `mlsub reconcile` records 'queued' once squeue shows it held",
        )
    p = chosen.preemption
    detail = (
        f"replan: checkpointed (signal {chosen.signal.signal}, {waited:g} s) and requeued "
        f"held ({held.reason or 'held'}); waits with {p.resumed.workload:.6g} mini-batches "
        f"left ({p.charge:.6g} of them the restart charge) for decision(s) "
        f"{', '.join(map(str, chosen.for_decisions)) or '—'}"
    )
    with contextlib.suppress(StoreError, InvalidTransitionError):
        store.transition(record.decision_id, S.QUEUED, clock.now(), detail, expected=S.PREEMPTING)
    return report("requeued", waited)


def _status(preempter: Preempter, job: str) -> JobStatus | None:
    try:
        return preempter.jobs().get(job)
    except (SlurmError, RemoteError):
        return None


def _wait_checkpoint(
    preempter: Preempter,
    job: str,
    wait_s: float,
    settings: PreemptSettings,
    sleep: Callable[[float], None],
) -> tuple[float, JobStatus | None]:
    """Wait ``wait_s`` (its checkpoint time) in polls; stop early when the job ends.
    Returns the seconds waited and the job's last status (None: Slurm lists it no more)."""
    step = max(settings.poll_s, 0.05)
    polls = math.ceil(wait_s / step) if wait_s > 0 else 0
    waited = 0.0
    status: JobStatus | None = None
    unknown = True
    for _ in range(polls):
        sleep(step)
        waited += step
        try:
            status = preempter.jobs().get(job)
            unknown = False
        except (SlurmError, RemoteError):
            continue  # a blip: the next poll asks again
        if status is None or status.phase != "running":
            return waited, status
    if polls == 0 or unknown:
        status = _status(preempter, job)
    return waited, status


def _wait_held(
    preempter: Preempter, job: str, settings: PreemptSettings, sleep: Callable[[float], None]
) -> JobStatus | None:
    step = max(settings.poll_s, 0.05)
    for _ in range(max(1, math.ceil(settings.confirm_s / step))):
        status = _status(preempter, job)
        if status is not None and status.held:
            return status
        sleep(step)
    return None


def wait_room_freed(
    source: NodeStateSource,
    job_ids: Collection[str],
    *,
    clock: Clock,
    settings: PreemptSettings,
    sleep: Callable[[float], None],
) -> bool:
    """Wait (bounded: ``settings.confirm_s``) until the node state no longer shows the
    requeued jobs holding resources (Slurm lists a requeued job on its nodes while they
    complete it), so that the re-plan after the preemptions sees the room they freed.
    False when the time ran out (the re-plan then plans around them, and a later one
    starts what it could not)."""
    step = max(settings.poll_s, 0.05)
    wanted = set(job_ids)
    for _ in range(max(1, math.ceil(settings.confirm_s / step))):
        try:
            jobs = source.read(clock.now()).jobs
        except (SlurmError, RemoteError):
            jobs = None  # a blip: ask again
        if jobs is not None and not any(
            j.job_id.split("+")[0] in wanted and j.holds_resources for j in jobs
        ):
            return True
        sleep(step)
    return False


def _back_to_running(
    store: DecisionStore, decision_id: int, clock: Clock, what: str, err: MlschedError
) -> None:
    with contextlib.suppress(StoreError, InvalidTransitionError):
        store.transition(
            decision_id,
            S.RUNNING,
            clock.now(),
            f"replan: not preempted ({what} failed: {err.message}); Slurm still runs it",
            expected=S.PREEMPTING,
        )


def count_for(p: Preemption, ids: Mapping[str, int]) -> tuple[int, ...]:
    """The decision ids of the queued jobs (step keys ``q<id>``) ``p`` makes room for."""
    return tuple(ids[k] for k in p.for_jobs if k in ids)


def weighed(p: Preemption) -> str:
    """What a pause for waiting jobs was weighed by, in words (its ``preempting``
    transition, ``mlsub queue``)."""
    if p.net:
        return (
            f"the queue completes {p.gain_s:g} s sooner in total, its restart cost "
            f"{p.cost_s:g} s included"
        )
    return f"gain {p.gain_s:g} s > restart cost {p.cost_s:g} s"


def record_preemptions(
    tx: PlanningSession,
    chosen: Sequence[Preemption],
    by_run: Mapping[str, Candidate],
    ids: Mapping[str, int],
    *,
    clock: Clock,
    process: str | None,
) -> list[Chosen]:
    """Record each chosen preemption ``preempting`` (inside the planning lock)."""
    out = []
    now = clock.now()
    for p in chosen:
        c = by_run[p.job_id]
        for_ids = count_for(p, ids)
        if c.record.state not in (S.SUBMITTED, S.RUNNING):
            continue
        if p.for_jobs:
            what = (
                f"{MOVE_DETAIL} (it starts again at once on a node with fewer GPUs) so that "
                "decision(s)"
                if p.move
                else "replan: preempted for decision(s)"
            )
            more = " start co-located on the node it leaves" if p.move else ""
            why = f"{what} {', '.join(map(str, for_ids)) or '—'}{more} ({weighed(p)})"
        elif p.regather:  # a regather: the job starts again on one node, ahead of the queue
            why = (
                f"{RESIZE_DETAIL} to start again co-located on one node before the queue is "
                f"placed, its work left ahead of every waiting job's (ends {p.gain_s:g} s "
                f"sooner > restart cost {p.cost_s:g} s)"
            )
        else:  # a grow: the job itself starts again wider
            why = (
                f"{RESIZE_DETAIL} to start again wider (ends {p.gain_s:g} s sooner > "
                f"restart cost {p.cost_s:g} s)"
            )
        detail = f"{why}; checkpoint signal {c.signal.signal}, then requeue held"
        try:
            stored = tx.preempt(
                c.record.decision_id,
                resumed=resumed_request(c.record, p),
                at=now,
                detail=detail,
                process=process,
            )
        except InvalidTransitionError:
            continue  # it moved on since it was read (it ended): nothing to pause
        out.append(Chosen(stored, c.signal, p, for_ids))
    return out
