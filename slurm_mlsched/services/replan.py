"""``mlsub replan``: late binding on the live cluster — the queue re-planned at every event.

A job that cannot start when it is submitted waits *held* in Slurm (``sbatch --hold``;
``squeue`` shows it pending, reason ``JobHeldUser``, its comment the decision tag) and its
decision is ``queued``: it holds nothing. At every event — a submission, a release, a
job's end (slurmctld's ``EpilogSlurmctld``, ``plugins/epilog_slurmctld.sh``) and a periodic
safety net — :func:`replan` re-plans the queue with the very function the replay uses
(:func:`~slurm_mlsched.placement.yu_rr.late_binding.replan_queue` through the policy's queue
form, ``registry.get_queue``): the waiting jobs in queue order (smallest service first,
aged) against the running jobs and the store's reservations, which never move. What can
start now starts:

1. under the cluster's planning lock (one store lock: concurrent re-plans from any host
   take turns), each job that starts is recorded ``starting`` with the layout chosen now
   and its new script (:meth:`PlanningSession.start`); it reserves from then on;
2. after the commit, in Slurm: if the new script is the held job's (the layout did not
   change) the held job is released (``scontrol release``); otherwise the new script is
   submitted (as the job's user, from its working directory, with the environment of its
   submission, ``sbatch/launch.py``), the decision becomes ``submitted`` with the new id
   (the held id is kept in its earlier ids), and only then the held job is cancelled;
3. the decision becomes ``submitted``.

So no job is released or submitted before its decision names the layout it runs on, and a
decision is started once (a second re-plan finds it ``starting``, not ``queued``). A
re-plan that stops between 1 and 3 leaves a ``starting`` decision: ``mlsub reconcile``
records what Slurm shows (the held job released, or the new job by its tag), and the next
re-plan (or ``mlsub reconcile``) finishes a start that did not happen
(:func:`finish_starts`).

Who may start what: a process starts the queued jobs of its own Slurm user; root (the
epilog's ``mlsub replan``) starts everyone's. Others' queued jobs are left out of its
re-plan (they hold nothing, so leaving them out never double-books).
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from ..errors import (
    InputError,
    InvalidTransitionError,
    MlschedError,
    NotFoundError,
    RemoteError,
    SlurmError,
    StoreError,
)
from ..files.checkpoint_signal import CheckpointSignal, checkpoint_signal
from ..files.sbatch_lines import parse_sbatch_lines, sort_lines
from ..model import ClusterSnapshot, Decision, JobRequest, Reservation
from ..model.gpu_speed import GpuSpeeds
from ..model.narrowing import NodeFilter
from ..placement.yu_rr.late_binding import QueueStep
from ..placement.yu_rr.preemption import Preemption, without_jobs
from ..placement.yu_rr.queue_order import keyer
from ..sbatch.launch import Launch
from ..sbatch.render import RenderedScript, render_sbatch
from ..sbatch.tag import find_tags
from ..sim.queue_estimate import (
    JobEstimate,
    QueuedJob,
    QueueEstimate,
    bound_json,
    combined,
    estimate_queue,
)
from ..slurm.jobs import JobStatus
from ..slurm.nodes import NodeState
from ..storage import DecisionRecord, DecisionState, DecisionStore, PlanningSession
from .clock import Clock
from .cluster_state import ClusterState
from .kept_env import drop_kept_environment, owned_file
from .live_queue import (
    LiveWiring,
    QueueEntry,
    in_queue_order,
    preempting_step,
    queue_step,
    rebased,
    stored_and_running,
    tag_of,
)
from .preempt import (
    Candidate,
    Chosen,
    LivePreemption,
    Preempted,
    Preempter,
    PreemptSettings,
    act,
    candidates,
    count_for,
    record_preemptions,
    run_key,
    running_run,
    wait_room_freed,
    weighed,
)
from .process_id import ProcessId, alive, boot_id

S = DecisionState


class JobStarter(Protocol):
    """The Slurm side of starting a queued job (``SlurmStarter``; tests pass fakes)."""

    def release(self, job_id: str) -> None:
        """Release the held job ``job_id``."""
        ...

    def cancel(self, job_id: str) -> None:
        """Cancel job ``job_id`` (a held job replaced by a new submission)."""
        ...

    def submit(self, script: str, launch: Launch, owner: str) -> str:
        """Submit ``script`` as ``owner`` from ``launch.workdir`` with the environment kept
        in ``launch.env_file``; return the new job id."""
        ...

    def may_start(self, owner: str) -> bool:
        """Whether this process may start ``owner``'s jobs (its own user, or root)."""
        ...

    def held_jobs(self) -> Sequence[JobStatus]:
        """The held jobs Slurm lists now."""
        ...

    def update_release(self, job_id: str, nodes: Sequence[str], tasks: int) -> None:
        """Set held job ``job_id`` (one component) to ``nodes`` and ``tasks``, release it."""
        ...

    def begin_now(self, job_id: str, owner: str) -> None:
        """Make a released job that was requeued eligible now (Slurm puts a requeued job's
        begin time two minutes after the requeue). Changed only once it is released: on
        a held job it would change the reason squeue gives for the hold."""
        ...


@dataclass(frozen=True)
class Started:
    """One queued job this re-plan started."""

    decision_id: int
    user: str
    slurm_job_id: str | None
    action: str  # "released", "updated" (a plugin job), "resubmitted" or "failed"
    placement: str  # compact: node1:2w+1ps,node2:2w
    note: str = ""

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class Waiting:
    """A queued job left waiting, in queue order."""

    decision_id: int
    user: str
    job_name: str
    slurm_job_id: str | None
    position: int
    estimated_start: datetime | None  # the estimate's start (``mlsub queue``), else the
    # tentative plan's start when one was made (``mlsub replan``)
    reason: str
    estimate: JobEstimate | None = None  # ``mlsub queue``: sim/queue_estimate.py

    def to_json(self) -> dict[str, object]:
        start = self.estimated_start
        return {
            **{k: v for k, v in asdict(self).items() if k != "estimate"},
            "estimated_start": None if start is None else start.isoformat(),
            "estimate": None if self.estimate is None else self.estimate.to_json(),
        }


@dataclass(frozen=True)
class ReplanReport:
    cluster_name: str
    started: tuple[Started, ...]
    waiting: tuple[Waiting, ...]
    skipped: tuple[int, ...] = ()  # queued decisions of other users this process may not start
    notes: tuple[str, ...] = ()
    preempted: tuple[Preempted, ...] = ()  # running jobs checkpointed and requeued (§16)

    def to_json(self) -> dict[str, object]:
        return {
            "cluster_name": self.cluster_name,
            "started": [s.to_json() for s in self.started],
            "waiting": [w.to_json() for w in self.waiting],
            "skipped": list(self.skipped),
            "notes": list(self.notes),
            "preempted": [p.to_json() for p in self.preempted],
        }


def compact_placement(decision: Decision) -> str:
    """``node1:2w+1ps,node2:2w`` (the per-node counts of the decision's first slot)."""
    per: dict[str, list[str]] = {}
    for c in decision.placement:
        per.setdefault(c.node, []).append(f"{c.count}{'w' if c.role.value == 'worker' else 'ps'}")
    return ",".join(f"{node}:{'+'.join(parts)}" for node, parts in per.items())


# --- the pure part: one queue step over the stored queued decisions ------------------------------


def reasons(
    step: QueueStep, entries: Sequence[QueueEntry], snapshot: ClusterSnapshot
) -> list[Waiting]:
    """The waiting jobs in queue order, with the tentative start of those the step planned."""
    planned = {d.job_id: d for d in step.planned}
    rejected = {k: e for k, e in step.rejected}
    started = {d.job_id for d in step.started}
    out: list[Waiting] = []
    position = 0
    for e in in_queue_order(entries, snapshot):
        if e.key in started or e.record is None:
            continue
        position += 1
        plan = planned.get(e.key)
        if e.key in rejected:
            why = f"cannot be placed: {rejected[e.key].message}"
        elif plan is not None:
            why = (
                f"reserved: the first job(s) in the queue; planned to start at "
                f"{snapshot.slot_start(plan.start_slot):%H:%M} UTC on {compact_placement(plan)}"
            )
        else:
            why = "waiting for resources held by running jobs or jobs ahead in the queue"
        out.append(
            Waiting(
                e.record.decision_id,
                e.record.summary.user,
                e.record.summary.job_name,
                e.record.summary.slurm_job_id,
                position,
                None if plan is None else snapshot.slot_start(plan.start_slot),
                why,
            )
        )
    return out


# --- the wiring ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Start:
    record: DecisionRecord  # as recorded ``starting``
    held_job: str | None
    how: str  # "release", "resubmit" or "update" (a plugin job: set its nodes, release it)


def replan(
    wiring: LiveWiring,
    starter: JobStarter,
    *,
    owner: Callable[[DecisionRecord], str] = lambda r: r.summary.job_owner,
    preempt: LivePreemption | None = None,
) -> ReplanReport:
    """Re-plan the cluster's queue and start what can start now (module docstring).

    ``preempt`` (the site's ``preempt`` setting, docs/formulation.md §16 "Live"): the
    step may first pause running jobs that consent (``services/preempt.py``); those are
    recorded ``preempting``, signalled, requeued held and recorded ``queued``, and then
    the queue is re-planned once more without preemption, which starts the jobs they made
    room for (and later, like any queued job, the paused ones). With the site's
    ``preempt_resize`` the step may also start a waiting job narrow, and pause a running
    one to start it again wider (a grow, decided on the job's own nodes rules, also where
    nothing waits: :func:`_preempt_group`)."""
    notes: list[str] = []
    now = wiring.clock.now()
    held = {j.job_id: j for j in starter.held_jobs()}  # one squeue for the whole re-plan
    if wiring.refresh is not None:
        wiring.refresh()
        # only after a reconcile: a start whose Slurm action happened is submitted by now
        notes.extend(finish_starts(wiring.store, starter, wiring.cluster_name, now, held=held))
    notes.extend(cancel_replaced(wiring.store, starter, wiring.cluster_name, held=held))
    state = wiring.source.read(now)
    runs = _preemptible(wiring, preempt.slurm) if preempt is not None else ()
    starts: list[_Start] = []
    waiting: list[Waiting] = []
    skipped: list[int] = []
    chosen: list[Chosen] = []
    with wiring.store.planning(wiring.cluster_name) as tx:
        queued = tx.queued()
        # every queued job takes its place in the step (they hold nothing); this process
        # starts only those whose held job Slurm says is theirs (verified_owner)
        startable = {
            r.decision_id
            for r in queued
            if starter.may_start(owner(r)) and verified_owner(r, held, wiring.cluster_name)
        }
        skipped = [r.decision_id for r in queued if r.decision_id not in startable]
        seen: set[str] = set()  # where-keys of the groups re-planned
        planned: list[Reservation] = []  # the tentative plans of the groups before
        for group in policy_groups(queued):
            partition, narrowing = where_allowed(group[0])
            seen.add(where_key(group[0]))
            cluster = held_too(
                stored_and_running(
                    tx,
                    state,
                    now,
                    wiring.slot_seconds,
                    wiring.cluster_name,
                    partition=partition,
                    narrowing=narrowing,
                    gpu_speed=wiring.gpu_speed,
                ),  # with the starts of the groups before
                planned,
            )
            entries = [rebased(r, cluster.snapshot) for r in group]
            taken: QueueStep | None = None
            if preempt is not None and (runs or preempt.settings.resize):
                paused, taken = _preempt_group(
                    tx, wiring, entries, runs, cluster, startable, chosen, preempt.settings,
                    where=where_key(group[0]),
                )  # fmt: skip
                if paused:
                    continue  # re-planned below, once they are requeued
            step, by_key = queue_step(entries, cluster.snapshot)
            if taken is not None:  # with resize: the step with its narrow starts
                step = taken
            waiting.extend(reasons(step, entries, cluster.snapshot))
            for d in step.started:
                entry = by_key[d.job_id]
                if entry.record is not None and entry.record.decision_id in startable:
                    starts.append(_record_start(tx, entry, d, cluster, now, process=wiring.process))
            for d in step.planned:  # the reserved head(s): their plan is the next step's
                _keep_tentative(tx, by_key[d.job_id], d, cluster.snapshot)
                planned.extend(d.reservations(by_key[d.job_id].request))
        if preempt is not None and preempt.settings.resize:
            # the running jobs no queued group shares nodes rules with: nothing waits
            # where they may run, but a job's end there is room they may grow into
            for where, group_runs in _by_where(runs).items():
                if where in seen:
                    continue
                partition, narrowing = where_allowed(group_runs[0].record)
                bare = stored_and_running(
                    tx, state, now, wiring.slot_seconds, wiring.cluster_name,
                    partition=partition, narrowing=narrowing, gpu_speed=wiring.gpu_speed,
                )  # fmt: skip
                cluster = held_too(bare, planned)
                base = rebased(group_runs[0].record, cluster.snapshot)
                _preempt_group(
                    tx, wiring, [], group_runs, cluster, startable, chosen, preempt.settings,
                    where=where, base=base,
                )  # fmt: skip
    started = tuple(_act(wiring.store, starter, s, now) for s in starts)
    report = ReplanReport(
        wiring.cluster_name, started, tuple(waiting), tuple(skipped), tuple(notes)
    )
    if not chosen:
        return report
    assert preempt is not None  # only a preempting re-plan chooses
    done = tuple(
        act(
            wiring.store,
            preempt.slurm,
            c,
            clock=wiring.clock,
            sleep=preempt.sleep,
            settings=preempt.settings,
        )
        for c in chosen
    )
    requeued = [p.slurm_job_id for p in done if p.action == "requeued"]
    if requeued and not wait_room_freed(
        wiring.source,
        requeued,
        clock=wiring.clock,
        settings=preempt.settings,
        sleep=preempt.sleep,
    ):
        notes.append(
            f"job(s) {', '.join(requeued)} still held their nodes after "
            f"{preempt.settings.confirm_s:g} s: the next re-plan starts what waits for them"
        )
    again = replan(wiring, starter, owner=owner)  # the room they freed, without preemption
    return ReplanReport(
        wiring.cluster_name,
        (*started, *again.started),
        again.waiting,
        again.skipped,
        (*notes, *again.notes),
        done,
    )


def _preemptible(wiring: LiveWiring, slurm: Preempter) -> tuple[Candidate, ...]:
    """The running decisions of the cluster that consent to preemption and that this
    process may preempt, read before the lock."""
    return preemptible(wiring.store, wiring.cluster_name, slurm, slurm.may_start)


def preemptible(
    store: DecisionStore,
    cluster_name: str,
    slurm: Preempter,
    may_act: Callable[[str], bool],
) -> tuple[Candidate, ...]:
    """The running decisions of ``cluster_name`` that consent to preemption and whose
    owner ``may_act`` says a re-plan may act for (``services/preempt.candidates``)."""
    from ..storage import HistoryFilter

    jobs = slurm.jobs()
    records = []
    for state in (S.SUBMITTED, S.RUNNING):
        for s in store.history(HistoryFilter(state=state, cluster=cluster_name)):
            status = jobs.get(s.slurm_job_id or "")
            if status is not None and status.phase == "running":
                records.append(store.get(s.decision_id))
    return candidates(records, jobs, cluster_name, may_act)


@dataclass(frozen=True)
class GroupPauses:
    """What the preemption rule does for one node group (:func:`group_pauses`)."""

    step: QueueStep | None
    """The step to take: with ``paused``, the step taken with those pauses (the paused
    jobs wait in it under their run keys), None when it was taken with a grow that is not
    kept (the re-plan after the pauses then decides); without, with resize, the step with
    its narrow starts; None: the plain step."""
    paused: tuple[Preemption, ...]
    by_run: dict[str, Candidate]  # the candidates by run key (``preempt.run_key``)
    by_key: dict[str, QueueEntry]  # the group's entries by step key

    def paused_decisions(self) -> dict[str, int]:
        """The decision id of each paused job, by run key."""
        return {p.job_id: self.by_run[p.job_id].record.decision_id for p in self.paused}


def group_pauses(
    entries: Sequence[QueueEntry],
    runs: Sequence[Candidate],
    cluster: ClusterState,
    settings: PreemptSettings,
    *,
    where: str,
    taken: Collection[int] = (),
    startable: Callable[[int], bool] = lambda _id: True,
    base: QueueEntry | None = None,
) -> GroupPauses:
    """The replay's preemption rule over this group (``live_queue.preempting_step``), pure:
    the running candidates not in ``taken`` (decision ids already paused at this event),
    the pauses it keeps and the step to take. A grow is kept only for a job whose own
    nodes rules (``where``: :func:`where_key`) are the group's, so it is decided on the
    nodes it may use; the pauses are kept only when each one made for waiting jobs is for
    at least one that ``startable`` says this process may start (else the step was taken
    with pauses that will not happen, and the plain step is the one to take). ``base``:
    the parameters when ``entries`` is empty (``live_queue.preempting_step``)."""
    by_run: dict[str, Candidate] = {}
    running = []
    for c in runs:
        if c.record.decision_id in taken:
            continue
        run = running_run(c, cluster.snapshot)
        if run is not None:
            by_run[run_key(c.record.decision_id)] = c
            running.append(run)
    by_key = {e.key: e for e in entries}
    if not running and not settings.resize:
        return GroupPauses(None, (), by_run, by_key)
    step, by_key, paused = preempting_step(
        entries,
        running,
        cluster.snapshot,
        resize=settings.resize,
        defrag=settings.defrag,
        regather=settings.regather,
        base=base,
        restart_s=settings.restart_s,
    )
    if not paused:  # with resize, the step holds its narrow starts
        return GroupPauses(step if settings.resize else None, (), by_run, by_key)
    kept = tuple(p for p in paused if p.for_jobs or where_key(by_run[p.job_id].record) == where)
    ids = decision_ids(by_key)
    fine = all(
        not p.for_jobs or any(k in ids and startable(ids[k]) for k in p.for_jobs) for p in kept
    )
    if not kept or not fine:  # nothing pays, or it is for jobs this process may not start
        return GroupPauses(None, (), by_run, by_key)  # (the step was taken with them)
    # a grow left out: the step was taken with it, so it is not the step after ``kept``
    return GroupPauses(step if len(kept) == len(paused) else None, kept, by_run, by_key)


def decision_ids(by_key: Mapping[str, QueueEntry]) -> dict[str, int]:
    """The decision id of each stored entry, by step key."""
    return {k: e.record.decision_id for k, e in by_key.items() if e.record is not None}


def _preempt_group(
    tx: PlanningSession,
    wiring: LiveWiring,
    entries: Sequence[QueueEntry],
    runs: Sequence[Candidate],
    cluster: ClusterState,
    startable: set[int],
    chosen: list[Chosen],
    settings: PreemptSettings,
    *,
    where: str,
    base: QueueEntry | None = None,
) -> tuple[bool, QueueStep | None]:
    """:func:`group_pauses` over this group, recorded: when it pauses jobs, record them
    ``preempting`` (appended to ``chosen``) and say so; else change nothing, and with
    resize give back the step (its narrow starts) for the caller to take."""
    got = group_pauses(
        entries, runs, cluster, settings, where=where, base=base,
        taken={c.record.decision_id for c in chosen}, startable=startable.__contains__,
    )  # fmt: skip
    if not got.paused:
        return False, got.step
    recorded = record_preemptions(
        tx, got.paused, got.by_run, decision_ids(got.by_key), clock=wiring.clock,
        process=wiring.process,
    )  # fmt: skip
    chosen.extend(recorded)
    return bool(recorded), None


def held_too(cluster: ClusterState, planned: Sequence[Reservation]) -> ClusterState:
    """``cluster`` with ``planned`` on its nodes: the tentative plans of the groups stepped
    before it (and, for :func:`queue_view`, which records nothing, their starts): a later
    group's jobs may not delay them, as a group's own later jobs may not delay its
    reserved ones (docs/formulation.md §14.1; Slurm's backfill protects the expected
    start of every higher-priority job, whatever its partition)."""
    names = {m.name for m in cluster.snapshot.machines}
    mine = tuple(r for r in planned if r.machine in names)
    if not mine:
        return cluster
    return replace(cluster, snapshot=cluster.snapshot.with_reservations(mine))


def where_key(record: DecisionRecord) -> str:
    """The nodes rules of a decision (:func:`where_allowed`) as one comparable key."""
    partition, narrowing = where_allowed(record)
    return json.dumps([partition, narrowing.to_json()], sort_keys=True)


def _by_where(runs: Sequence[Candidate]) -> dict[str, list[Candidate]]:
    """The running candidates by their nodes rules, each group oldest first."""
    out: dict[str, list[Candidate]] = {}
    for c in sorted(runs, key=lambda c: c.record.decision_id):
        out.setdefault(where_key(c.record), []).append(c)
    return out


def policy_groups(queued: Sequence[DecisionRecord]) -> list[list[DecisionRecord]]:
    """The queued decisions by policy and by the nodes they may use (``--partition`` and
    the script's ``#SBATCH`` node filter: :func:`where_allowed`), the group of the oldest
    decision first: each group is re-planned with its policy's queue form on the nodes it
    may use, against the starts of the groups before."""
    groups: dict[tuple[str, str], list[DecisionRecord]] = {}
    for r in queued:  # oldest first
        groups.setdefault((r.decision.policy, where_key(r)), []).append(r)
    return list(groups.values())


def where_allowed(record: DecisionRecord) -> tuple[str | None, NodeFilter]:
    """The partition and the ``#SBATCH`` node filter a queued decision was submitted with:
    kept in its launch record, or, for a job the cli_filter plugin placed (no launch; its
    stored script is the user's own), read again from that script's ``#SBATCH`` lines."""
    launch = record.launch
    if launch is not None:
        return launch.spec.partition, NodeFilter.from_json(launch.narrowing)
    source = f"decision {record.decision_id}'s script"
    try:
        header = sort_lines(parse_sbatch_lines(record.script or "", source), source)
    except InputError:  # it was read at submission; a row edited since narrows nothing
        return None, NodeFilter()
    return header.job_values.get("partition"), header.narrowing


def verified_owner(
    record: DecisionRecord, held: Mapping[str, JobStatus], cluster_name: str
) -> bool:
    """Whether Slurm vouches for the queued decision's held job: it is held by its user
    (not by an admin), carries the decision's exact tag, and belongs to the decision's
    user. The store's columns alone are not trusted: a user may edit their own row, and
    root's re-plan acts as the job's owner."""
    job = record.summary.slurm_job_id
    status = held.get(job) if job else None
    if status is None or status.reason == "JobHeldAdmin":
        return False
    tag = str(tag_of(cluster_name, record.summary))
    if tag not in {str(t) for t in find_tags(status.comment)}:
        return False
    return bool(status.user) and status.user == record.summary.job_owner


def _record_start(
    tx: PlanningSession,
    entry: QueueEntry,
    decision: Decision,
    cluster: ClusterState,
    now: datetime,
    *,
    process: str | None = None,
) -> _Start:
    record = entry.record
    assert record is not None  # only stored decisions are started by a re-plan
    request = replace(entry.request, job_id=record.request.job_id)
    chosen = replace(decision, job_id=record.request.job_id)
    where = f"replan: starts now on {compact_placement(chosen)}: "
    if record.launch is None:  # the user's own sbatch (the cli_filter plugin's plan mode)
        text = record.script or ""
        how, detail = "update", where + UPDATE_MARK
    else:
        text = render_for(chosen, request, cluster, record.launch).text
        how = "release" if record.script == text else "resubmit"
        detail = where + (
            RELEASE_MARK
            if how == "release"
            else f"{RESUBMIT_MARK} (the held job's: {_held_layout(record)})"
        )
    stored = tx.start(
        record.decision_id,
        request=request,
        snapshot=cluster.snapshot,
        decision=chosen,
        script=text,
        at=now,
        detail=detail,
        process=process,
    )
    return _Start(stored, record.summary.slurm_job_id, how)


def _keep_tentative(
    tx: PlanningSession, entry: QueueEntry, decision: Decision, snapshot: ClusterSnapshot
) -> None:
    """Store a reserved job's tentative plan (it holds nothing; the next step keeps it if it
    still fits and ends earlier than a new one, and ``mlsub show`` gives it as the
    estimate)."""
    record = entry.record
    if record is None:
        return
    request = replace(entry.request, job_id=record.request.job_id)
    tx.set_tentative(
        record.decision_id,
        request=request,
        snapshot=snapshot,
        decision=replace(decision, job_id=record.request.job_id),
    )


def render_for(
    decision: Decision, request: JobRequest, cluster: ClusterState, launch: Launch
) -> RenderedScript:
    addresses = {n.record.name: n.record.address or n.record.name for n in cluster.nodes}
    types = {n.record.name: n.record.gpu_type for n in cluster.nodes}
    return render_sbatch(decision, request, addresses, launch.script_spec(), types)


def _act(store: DecisionStore, starter: JobStarter, start: _Start, now: datetime) -> Started:
    """Step 2–3 for one recorded start: release, update and release, or resubmit; then
    record ``submitted``."""
    record = start.record
    placement = compact_placement(record.decision)
    user = record.summary.user
    script = record.script or ""
    try:
        if start.how == "release" and start.held_job is not None:
            starter.release(start.held_job)
            _submitted(store, record.decision_id, start.held_job, now, "replan: released held job")
            if record.preemptions:  # requeued by a preemption: no two-minute wait
                with contextlib.suppress(SlurmError, RemoteError):
                    starter.begin_now(start.held_job, record.summary.job_owner)
            _drop_unless_preemptible(record)
            return Started(record.decision_id, user, start.held_job, "released", placement)
        if start.how == "update" or record.launch is None:
            if start.held_job is None:
                raise SlurmError(f"decision {record.decision_id} has no held Slurm job yet")
            nodes = tuple(dict.fromkeys(c.node for c in record.decision.placement))
            tasks = sum(c.count for c in record.decision.placement)
            starter.update_release(start.held_job, nodes, tasks)
            detail = f"replan: set held job {start.held_job} to {','.join(nodes)} and released it"
            _submitted(store, record.decision_id, start.held_job, now, detail)
            return Started(record.decision_id, user, start.held_job, "updated", placement)
        new_id = starter.submit(script, record.launch, record.summary.job_owner)
    except (SlurmError, RemoteError, OSError, KeyError, ValueError) as err:
        said = err.message if isinstance(err, MlschedError) else f"{type(err).__name__}: {err}"
        return Started(
            record.decision_id,
            user,
            start.held_job,
            "failed",
            placement,
            f"{said}; it stays 'starting' and the next `mlsub replan` or `mlsub reconcile` "
            f"tries again (after {START_GIVE_UP_S / 3600:g} h it goes back to the queue)",
        )
    detail = f"replan: submitted job {new_id} on the new layout"
    _submitted(store, record.decision_id, new_id, now, detail)
    note = ""
    if start.held_job is not None:
        try:
            starter.cancel(start.held_job)
        except (SlurmError, RemoteError) as err:
            note = f"held job {start.held_job} not cancelled ({err.message}); it stays held"
    _drop_unless_preemptible(record)
    return Started(record.decision_id, user, new_id, "resubmitted", placement, note)


def _drop_unless_preemptible(record: DecisionRecord) -> None:
    """A started job's kept environment is not needed any more, unless it may be
    preempted (its ``--signal``): a later re-plan may submit it again; reconcile removes
    it when the decision ends."""
    if checkpoint_signal(record.script) is None:
        drop_kept_environment(record.launch, record.summary.job_owner)


def _submitted(
    store: DecisionStore, decision_id: int, job_id: str, now: datetime, detail: str
) -> None:
    """Record ``submitted``; if the store cannot be written now, reconcile records it from
    Slurm later (the job carries the tag)."""
    with contextlib.suppress(StoreError, InvalidTransitionError):
        store.transition(
            decision_id, S.SUBMITTED, now, detail, slurm_job_id=job_id, expected=S.STARTING
        )


def finish_starts(
    store: DecisionStore,
    starter: JobStarter,
    cluster_name: str,
    now: datetime,
    *,
    held: Mapping[str, JobStatus] | None = None,
) -> list[str]:
    """Finish the starts a stopped re-plan left (``starting`` decisions whose Slurm action
    did not happen: reconcile found their held job still held and no new job). Run after a
    reconcile of the cluster, so that those whose action did happen are ``submitted``."""
    from ..storage import HistoryFilter

    notes = []
    for s in store.history(HistoryFilter(state=S.STARTING, cluster=cluster_name)):
        if not starter.may_start(s.job_owner):
            continue
        if held is None:  # asked once, and only when there is a start to finish
            held = {j.job_id: j for j in starter.held_jobs()}
        record = store.get(s.decision_id)
        if not verified_owner(record, held, cluster_name):
            continue  # its held job is gone, or Slurm does not vouch for the row
        since = next((t.at for t in reversed(record.transitions) if t.state == S.STARTING), now)
        age = (now - since).total_seconds()
        if still_acting(s.submitter, age) and age < START_GIVE_UP_S:
            continue  # its re-plan may still be releasing or submitting it
        if age >= START_GIVE_UP_S:
            notes.append(_give_up(store, record, now, age))
            continue
        done = _act(store, starter, _Start(record, s.slurm_job_id, _how(record)), now)
        notes.append(
            f"decision {s.decision_id}: finished the start a stopped re-plan left "
            f"({done.action}{': ' + done.note if done.note else ''})"
        )
    return notes


#: A start that has not happened this long after its re-plan recorded it goes back to the
#: queue (its reservation has lapsed by then; a new re-plan chooses again).
START_GIVE_UP_S = 3600.0
#: A start recorded by a re-plan on another host is finished only after this long (its
#: process cannot be checked from here; every Slurm call of a start is bounded by 60 s).
START_SETTLE_S = 300.0


def still_acting(process: str | None, age_s: float = 0.0) -> bool:
    """Whether the re-plan that recorded a start (``process``) may still act on it: alive
    on this host, or on another host and recorded less than ``START_SETTLE_S`` ago."""
    who = ProcessId.parse(process)
    if who is None:
        return False
    state = alive(who, same_host=who.boot is not None and who.boot == boot_id())
    return state is True or (state is None and age_s < START_SETTLE_S)


def _give_up(store: DecisionStore, record: DecisionRecord, now: datetime, age: float) -> str:
    with contextlib.suppress(StoreError, InvalidTransitionError):
        store.transition(
            record.decision_id,
            S.QUEUED,
            now,
            f"replan: the start recorded {age / 60:.0f} min ago never happened; back in the "
            "queue (a re-plan chooses its layout again)",
            expected=S.STARTING,
        )
    return f"decision {record.decision_id}: its start never happened; back in the queue"


def cancel_replaced(
    store: DecisionStore,
    starter: JobStarter,
    cluster_name: str,
    *,
    held: Mapping[str, JobStatus] | None = None,
) -> list[str]:
    """Cancel held jobs that a decision replaced: a re-plan that stopped after submitting
    a queued job's new layout and before cancelling its held job leaves the held one
    (reconcile records the new one by its tag, and the held id among the earlier ids).
    Only a held job whose exact tag is one of this store's decisions, whose id is one of
    that decision's earlier ids, of a user this process may act for."""
    notes = []
    jobs = starter.held_jobs() if held is None else list(held.values())
    for job in jobs:
        for tag in find_tags(job.comment):
            try:
                record = store.get(tag.decision_id)
            except (NotFoundError, StoreError):
                continue  # not this store's (or not visible to this role)
            s = record.summary
            if str(tag_of(cluster_name, s)) != str(tag) or s.slurm_job_id == job.job_id:
                continue
            if job.job_id not in record.earlier_job_ids or not starter.may_start(s.job_owner):
                continue
            try:
                starter.cancel(job.job_id)
            except (SlurmError, RemoteError) as err:
                notes.append(f"held job {job.job_id} (replaced) not cancelled: {err.message}")
                continue
            notes.append(
                f"decision {s.decision_id}: cancelled held job {job.job_id}, replaced by job "
                f"{s.slurm_job_id} (a re-plan had stopped before cancelling it)"
            )
    return notes


#: How the ``starting`` transition says which action its re-plan took (read back by
#: :func:`finish_starts`: the held job's script is gone from the row once it is started).
RELEASE_MARK = "the held job's script, release it"
RESUBMIT_MARK = "a new script, submit it and cancel the held job"
UPDATE_MARK = "the user's own job, set its nodes and release it"


def _held_layout(record: DecisionRecord) -> str:
    """The held job's layout: the node lines of its script (the decision's plan columns
    may hold a later tentative plan)."""
    nodes = [
        line.split("--nodelist=", 1)[1].split()[0]
        for line in (record.script or "").splitlines()
        if line.startswith("#SBATCH --nodelist=")
    ]
    return ",".join(nodes) or "unknown"


def _how(record: DecisionRecord) -> str:
    """The action the ``starting`` transition recorded (``release``, ``update`` or
    ``resubmit``)."""
    for t in reversed(record.transitions):
        if t.state == S.STARTING:
            if t.detail.endswith(RELEASE_MARK):
                return "release"
            if t.detail.endswith(UPDATE_MARK):
                return "update"
            return "resubmit"
    return "update" if record.launch is None else "resubmit"


# --- Slurm ---------------------------------------------------------------------------------------


class SlurmStarter:
    """Starts queued jobs through the local Slurm commands."""

    def __init__(self, slurm: Any, *, timeout: float = 60.0, euid: int | None = None) -> None:
        self.slurm = slurm
        self.timeout = timeout
        self.euid = os.geteuid() if euid is None else euid

    def may_start(self, owner: str) -> bool:
        if self.euid == 0:
            return True
        import pwd

        return pwd.getpwuid(self.euid).pw_name == owner

    def release(self, job_id: str) -> None:
        self.slurm.run(["scontrol", "release", job_id], timeout=self.timeout)

    def cancel(self, job_id: str) -> None:
        self.slurm.run(["scancel", job_id], timeout=self.timeout)

    def update_release(self, job_id: str, nodes: Sequence[str], tasks: int) -> None:
        self.slurm.run(
            [
                "scontrol",
                "update",
                f"JobId={job_id}",
                f"ReqNodeList={','.join(nodes)}",
                f"NumNodes={len(nodes)}",
                f"NumTasks={tasks}",
            ],
            timeout=self.timeout,
        )
        self.release(job_id)

    def held_jobs(self) -> Sequence[JobStatus]:
        return [j for j in self.jobs().values() if j.held]

    def jobs(self) -> Mapping[str, JobStatus]:
        from ..slurm.jobs import JobStatusReader

        return JobStatusReader(self.slurm).queue()

    def signal(self, job_id: str, signal: CheckpointSignal, owner: str) -> None:
        argv = ["scancel", *signal.scancel_args(), job_id]
        self.slurm.run(as_owner(argv, owner, self.euid), timeout=self.timeout)

    def requeue_hold(self, job_id: str, owner: str) -> None:
        argv = ["scontrol", "requeuehold", job_id]
        self.slurm.run(as_owner(argv, owner, self.euid), timeout=self.timeout)

    def begin_now(self, job_id: str, owner: str) -> None:
        argv = ["scontrol", "update", f"JobId={job_id}", "StartTime=now"]
        self.slurm.run(as_owner(argv, owner, self.euid), timeout=self.timeout)

    def submit(self, script: str, launch: Launch, owner: str) -> str:
        from ..slurm.parse import parse_sbatch_parsable

        argv = sbatch_argv(launch, owner, self.euid)
        out = self.slurm.run(argv, input=script, timeout=self.timeout)
        return str(parse_sbatch_parsable(out).job_id)


def sbatch_inputs(env_file: Path) -> list[str]:
    """The ``SBATCH_*`` entries (``NAME=value``) of a kept environment (NUL-separated)."""
    try:
        entries = env_file.read_bytes().split(b"\0")
    except OSError:
        return []
    out = []
    for raw in entries:
        text = raw.decode("utf-8", "replace")
        name, sep, _ = text.partition("=")
        if sep and name.startswith("SBATCH_") and name.isidentifier():
            out.append(text)
    return out


def sbatch_argv(launch: Launch, owner: str, euid: int) -> list[str]:
    """``sbatch`` of a queued job's new script: as ``owner`` (through ``setpriv`` when
    this process is root and the owner is someone else), from its working directory, with
    its kept environment (``--export-file``: the job gets exactly that environment, as it
    would have got its submitter's)."""

    argv = ["sbatch", "--parsable"]
    if not any(line.startswith("--chdir=") for line in launch.spec.sbatch_job):
        argv.append(f"--chdir={launch.workdir}")  # else the script's own --chdir, as at first
    kept = owned_file(launch.env_file, owner)
    if kept is not None:
        argv.append(f"--export-file={kept}")  # read by sbatch, as the owner
        # sbatch's own input variables (SBATCH_ACCOUNT, SBATCH_QOS, ...) as the first
        # sbatch saw them: options, not secrets, so they may stand in the argument list
        options = sbatch_inputs(kept)
        if options:
            argv = ["env", *options, *argv]
    else:
        # the kept environment is gone (or not the owner's): the job gets none of this
        # process's either, only what Slurm sets
        argv.append("--export=NONE")
    return as_owner(argv, owner, euid)


def as_owner(argv: list[str], owner: str, euid: int) -> list[str]:
    """``argv`` run as ``owner``: through ``setpriv`` when this process is root and the
    owner is someone else (Slurm then sees the owner act on their own job: a hold the
    owner sets is the owner's, ``JobHeldUser``), unchanged otherwise."""
    import pwd

    if euid == 0 and owner != "root":
        who = pwd.getpwnam(owner)
        return [
            "setpriv",
            f"--reuid={who.pw_uid}",
            f"--regid={who.pw_gid}",
            "--init-groups",
            "--",
            *argv,
        ]
    return argv


@dataclass(frozen=True)
class WouldPause:
    """A running job the next preempting re-plan would pause (``mlsub queue`` where the
    site's ``preempt`` is on, docs/formulation.md §16 "Live"): checkpointed, requeued held
    and started again by a later step (at once, for a resize, a move or a regather)."""

    decision_id: int
    user: str
    job_name: str
    slurm_job_id: str | None
    kind: str  # "pause" (for waiting jobs), "move", "resize" (a grow) or "regather"
    for_decisions: tuple[int, ...]  # the queued decisions it makes room for
    gain_s: float  # as ``Preempted.gain_s``
    cost_s: float
    estimated_restart: datetime | None  # None: no estimate could be made
    reason: str

    def to_json(self) -> dict[str, object]:
        restart = self.estimated_restart
        return {
            **asdict(self),
            "for_decisions": list(self.for_decisions),
            "estimated_restart": None if restart is None else restart.isoformat(),
        }


def pause_kind(p: Preemption) -> str:
    """What a preemption is, in one word (:class:`WouldPause`)."""
    if p.move:
        return "move"
    if p.regather:
        return "regather"
    return "pause" if p.for_jobs else "resize"


def pause_reason(p: Preemption, for_ids: Sequence[int]) -> str:
    """Why the rule would pause it, in words (``mlsub queue``)."""
    ids = ", ".join(map(str, for_ids)) or "—"
    kind = pause_kind(p)
    if kind == "move":
        return f"moves to a node with fewer GPUs so that decision(s) {ids} start ({weighed(p)})"
    if kind == "regather":
        return f"starts again co-located on one node (ends {p.gain_s:g} s sooner)"
    if kind == "resize":
        return f"starts again wider (ends {p.gain_s:g} s sooner)"
    return f"paused for decision(s) {ids} ({weighed(p)})"


@dataclass(frozen=True)
class ViewPreemption:
    """The site's preemption as ``mlsub queue`` weighs it: the running jobs that consent
    (:func:`preemptible`, every owner's: the re-plan that preempts is root's) and the
    settings."""

    runs: tuple[Candidate, ...]
    settings: PreemptSettings


@dataclass(frozen=True)
class QueueView:
    """``mlsub queue``: the queued jobs in queue order (what a re-plan now would do, not
    committed): who would start now and, for the others, the estimated start and why."""

    cluster_name: str
    now: datetime
    would_start: tuple[Waiting, ...]
    waiting: tuple[Waiting, ...]
    bound: QueueEstimate | None = None
    """The estimate of the whole queue (every user's jobs): plan ÷ lower bound, busy share
    (docs/formulation.md §14.9); None when it could not be made (``bound_reason``)."""
    bound_reason: str = ""
    step_s: float | None = None
    """How long the re-plan steps took (seconds; None when not timed, ``queue_view``'s
    ``timer``): not in the JSON, a figure of the run rather than of the queue."""
    would_pause: tuple[WouldPause, ...] = ()
    """Where the site preempts: the running jobs the next re-plan would pause."""
    preempting: bool = False
    """Whether the view weighed the site's preemption (its ``preempt`` setting)."""

    def to_json(self) -> dict[str, object]:
        return {
            "cluster_name": self.cluster_name,
            "now": self.now.isoformat(),
            "would_start": [w.to_json() for w in self.would_start],
            "waiting": [w.to_json() for w in self.waiting],
            "preempting": self.preempting,
            "would_pause": [p.to_json() for p in self.would_pause],
            "plan_vs_bound": bound_json(self.bound, self.bound_reason),
        }


def estimate_step(
    step: QueueStep,
    entries: Sequence[QueueEntry],
    cluster: ClusterState,
    *,
    paused: Sequence[JobRequest] = (),
) -> tuple[QueueEstimate | None, str]:
    """The estimate of the queue one step left (sim/queue_estimate.py): the step's
    decisions as they are, the other entries list scheduled in queue order; running jobs
    without an end (no time limit) as unknown ends. ``paused``: the resumed requests of
    the running jobs the step was taken with pausing (under their run keys; ``cluster``
    without their reservations): they wait too. None and why when it cannot be made."""
    snapshot = cluster.snapshot
    decided = {d.job_id: d for d in (*step.started, *step.planned)}
    rejected = {k: f"cannot be placed: {e.message}" for k, e in step.rejected}
    waiting = [
        QueuedJob(e.request, decided.get(e.key), rejected.get(e.key, ""))
        for e in in_queue_order(entries, snapshot)
    ]
    params = entries[0].params if entries else None
    if paused and params is not None:
        key = keyer(snapshot.machines, snapshot.slot_seconds, params.aging, params.aging_unit)
        more = [QueuedJob(r, decided.get(r.job_id)) for r in paused]
        waiting = sorted([*waiting, *more], key=lambda q: key(q.request))  # stable
    unknown = {j.job_id for j in cluster.jobs if j.end_time is None}
    try:
        return estimate_queue(
            waiting, snapshot, cluster.now, params=params, unknown_ends=unknown
        ), ""
    except (ValueError, MlschedError) as err:  # a snapshot the estimate cannot read
        said = err.message if isinstance(err, MlschedError) else str(err)
        return None, f"no estimate could be made: {said}"


def with_estimate(row: Waiting, bound: QueueEstimate | None) -> Waiting:
    """``row`` with its job's estimate (its start as the estimated start)."""
    if bound is None:
        return row
    est = bound.by_job().get(f"q{row.decision_id}")
    if est is None:
        return row
    reason = row.reason if est.known else f"{row.reason}; no estimate: {est.reason}"
    return replace(row, estimated_start=est.start, estimate=est, reason=reason)


def queue_view(
    store: DecisionStore,
    state: NodeState,
    *,
    clock: Clock,
    cluster_name: str,
    slot_seconds: float,
    user: str | None,
    timer: Callable[[], float] | None = None,
    preempt: ViewPreemption | None = None,
    gpu_speed: GpuSpeeds = (),
) -> QueueView:
    """One re-plan step over every queued job, read in one store snapshot without the
    planning lock (nothing is recorded, started or paused); ``user``: only that user's
    rows (and the pauses of their running jobs or for their queued ones). The groups of
    :func:`policy_groups` are stepped as :func:`replan` steps them, each on the nodes it
    may use and around the would-be starts of the groups before. ``preempt`` (the site's
    ``preempt`` on): each group's step is the preempting re-plan's, as root's ``mlsub
    replan`` would take it (pauses for any user's queued jobs): the jobs it would pause
    are listed with their estimated restart, wait in the estimate with their work left,
    and hold nothing in the later groups' steps. ``gpu_speed``: the site's speed table,
    as the re-plan reads it. ``timer`` (seconds, monotonic): when given, the steps are
    timed (``QueueView.step_s``; the estimate is not counted), as ``mlsub metrics``
    reports them."""
    now = clock.now()
    waiting: list[Waiting] = []
    starting: list[Waiting] = []
    pausing: list[WouldPause] = []
    taken: list[Reservation] = []  # what the groups before would start, and their plans
    gone: dict[str, int] = {}  # run key -> decision id of the jobs the groups before pause
    estimates: list[QueueEstimate] = []  # one per node group
    whys: list[str] = []  # why a group's estimate could not be made
    step_s = 0.0
    seen: set[str] = set()

    def clocked() -> float:
        return timer() if timer is not None else 0.0

    with store.viewing(cluster_name) as tx:

        def cluster_for(partition: str | None, narrowing: NodeFilter) -> ClusterState:
            """The nodes a group may use, with what the groups before would start and plan,
            without what they would pause."""
            cluster = held_too(
                stored_and_running(
                    tx, state, now, slot_seconds, cluster_name,
                    partition=partition, narrowing=narrowing, gpu_speed=gpu_speed,
                ),
                taken,
            )  # fmt: skip
            if not gone:
                return cluster
            return replace(cluster, snapshot=without_jobs(cluster.snapshot, set(gone)))

        groups = policy_groups(tx.queued())
        mine = {r.decision_id for g in groups for r in g if user in (None, r.summary.user)}
        for group in groups or [[]]:
            partition, narrowing = where_allowed(group[0]) if group else (None, NodeFilter())
            where = where_key(group[0]) if group else ""
            seen.add(where)
            cluster = cluster_for(partition, narrowing)
            snapshot = cluster.snapshot
            entries = [rebased(r, snapshot) for r in group]

            began = clocked()
            got = _view_step(entries, cluster, preempt, where=where, taken=set(gone.values()))
            step_s += clocked() - began
            step, by_key = got.step, got.by_key
            assert step is not None  # _view_step gives the step to take
            requests = {k: e.request for k, e in by_key.items()}
            requests.update((p.job_id, p.resumed) for p in got.paused)
            after = cluster
            if got.paused:
                gone.update(got.paused_decisions())
                after = replace(cluster, snapshot=without_jobs(snapshot, set(gone)))
            resumed = [p.resumed for p in got.paused]
            estimate, why = estimate_step(step, entries, after, paused=resumed)
            if estimate is not None:
                estimates.append(estimate)
            else:
                whys.append(why)
            ids = decision_ids(by_key)
            pausing += _would_pause(got, ids, step, estimate, snapshot, now, user, mine)
            for_pause = {k: p for p in got.paused for k in p.for_jobs}
            rows = reasons(step, entries, snapshot)
            waiting += [with_estimate(w, estimate) for w in rows if user in (None, w.user)]
            for d in step.planned:  # a later group may not delay them (:func:`held_too`)
                taken.extend(d.reservations(requests[d.job_id]))
            for d in step.started:
                taken.extend(d.reservations(requests[d.job_id]))
                entry = by_key.get(d.job_id)
                record = None if entry is None else entry.record
                if record is None or user not in (None, record.summary.user):
                    continue  # a paused job started again at once: its row says so
                how = f"can start now on {compact_placement(d)}: the next re-plan starts it"
                p = for_pause.get(d.job_id)
                if p is not None:
                    how += f" once it has paused decision {gone[p.job_id]} ({pause_kind(p)})"
                row = Waiting(
                    record.decision_id,
                    record.summary.user,
                    record.summary.job_name,
                    record.summary.slurm_job_id,
                    0,
                    snapshot.slot_start(d.start_slot),
                    how,
                )
                starting.append(with_estimate(row, estimate))
        if preempt is not None and preempt.settings.resize:
            # the running jobs no queued group shares nodes rules with: a grow only
            for where, group_runs in _by_where(preempt.runs).items():
                if where in seen:
                    continue
                cluster = cluster_for(*where_allowed(group_runs[0].record))
                base = rebased(group_runs[0].record, cluster.snapshot)
                began = clocked()
                got = group_pauses(
                    [], group_runs, cluster, preempt.settings, where=where, base=base,
                    taken=set(gone.values()),
                )  # fmt: skip
                step_s += clocked() - began
                if got.step is None or not got.paused:
                    continue
                gone.update(got.paused_decisions())
                pausing += _would_pause(got, {}, got.step, None, cluster.snapshot, now, user, mine)
                resumed_of = {p.job_id: p.resumed for p in got.paused}
                for d in got.step.started:  # the grown runs: a later group may not delay them
                    if d.job_id in resumed_of:
                        taken.extend(d.reservations(resumed_of[d.job_id]))
    bound = combined(estimates) if estimates and not whys else None
    why = "; ".join(whys)
    took = step_s if timer is not None else None
    return QueueView(
        cluster_name, now, tuple(starting), tuple(waiting), bound, why, took,
        tuple(pausing), preempt is not None,
    )  # fmt: skip


def _view_step(
    entries: Sequence[QueueEntry],
    cluster: ClusterState,
    preempt: ViewPreemption | None,
    *,
    where: str,
    taken: Collection[int],
) -> GroupPauses:
    """A group's step in :func:`queue_view`: the preempting re-plan's where the site
    preempts (:func:`group_pauses`, for any user's queued jobs), else the plain step."""
    if preempt is not None and entries and (preempt.runs or preempt.settings.resize):
        got = group_pauses(
            entries, preempt.runs, cluster, preempt.settings, where=where, taken=taken
        )
        if got.step is not None:
            return got
        if got.paused:  # the step the re-plan takes once they are paused: they wait in it
            book = without_jobs(cluster.snapshot, {p.job_id for p in got.paused})
            first = entries[0]
            more = [
                QueueEntry(p.resumed, got.by_run[p.job_id].record.seed, first.params,
                           policy=first.params_policy)
                for p in got.paused
            ]  # fmt: skip
            step, _ = queue_step([*entries, *more], book)
            return replace(got, step=step)
    step, by_key = queue_step(entries, cluster.snapshot)
    return GroupPauses(step, (), {}, by_key)


def _would_pause(
    got: GroupPauses,
    ids: Mapping[str, int],
    step: QueueStep,
    estimate: QueueEstimate | None,
    snapshot: ClusterSnapshot,
    now: datetime,
    user: str | None,
    mine: Collection[int],
) -> list[WouldPause]:
    """The rows of the jobs ``got`` pauses: those of ``user`` (None: every user's), or
    for one of ``mine`` (the decision ids of ``user``'s queued jobs), with the restart
    the step gives them (at once for a resize, a move, a regather) or the estimate's."""
    decided = {d.job_id: d for d in (*step.started, *step.planned)}
    by_job = estimate.by_job() if estimate is not None else {}
    out = []
    for p in got.paused:
        record = got.by_run[p.job_id].record
        for_ids = count_for(p, ids)
        if user not in (None, record.summary.user) and not set(for_ids) & set(mine):
            continue
        d = decided.get(p.job_id)
        est = by_job.get(p.job_id)
        restart = (
            max(now, snapshot.slot_start(d.start_slot))
            if d is not None
            else (est.start if est is not None else None)
        )
        out.append(
            WouldPause(
                record.decision_id,
                record.summary.user,
                record.summary.job_name,
                record.summary.slurm_job_id,
                pause_kind(p),
                for_ids,
                p.gain_s,
                p.cost_s,
                restart,
                pause_reason(p, for_ids),
            )
        )
    return out
