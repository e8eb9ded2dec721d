"""``mlsub reconcile``: bring every open decision up to date with what Slurm did.

Open decisions are those ``submitting``, ``submitted`` or ``running`` (``planned`` ones were
never meant to reach Slurm by themselves), and, for repair, ``submit-failed`` ones without a
Slurm job id from the last :data:`REPAIR_WINDOW_S`. For each, the job is looked up

* by its Slurm job id when the decision has one, else
* by the decision tag in the job's comment (``sbatch/tag.py``, the exact tag as a whole
  token: ``find_tags``) of a job Slurm says belongs to the decision's Slurm user
  (``DecisionSummary.job_owner``; tags are public in squeue, so a copied tag adopts
  nothing): a ``submitting`` decision whose process died before it could store the id, or
  a ``submit-failed`` one whose job turned up after all,

first in ``squeue`` (what the controller still lists), then in accounting (``sacct``,
when slurmdbd is configured). What was found moves the decision along its states with
Slurm's own times: ``submitted`` (submit time), ``running`` (start time, nodes),
``completed``/``failed``/``cancelled`` (end time, exit code).

A ``submitting`` decision with no job anywhere is marked ``submit-failed`` only when its
submission is over: its submitting process (recorded with it, ``services/process_id.py``)
is gone from this host. For a submission over SSH it must also be older than
``REMOTE_SETTLE_S`` (or ``stale_after_s`` if shorter): its sbatch on the login host may
outlive a dropped connection. A process still alive is a submission in progress, however
long its sbatch takes. From another host the process cannot be checked: there (and for
decisions recorded without it), the decision's age is the only evidence, and it must
exceed ``stale_after_s`` (default an hour, far beyond any bounded sbatch or SSH wait).
Should the job appear later all the same, the repair above moves it on. A submitted job
found nowhere is reported and left as it is (its reservation still ends at its predicted
end + grace).

Every step is a compare-and-set (``store.transition(..., expected=...)``): a decision that
another process moved meanwhile (its own ``submit`` recording the job id, a neighbour's
reconcile) is left as that process made it, and the update says so; a step to a state the
decision already reached is a no-op. So concurrent ``submit`` and ``reconcile`` calls never
fail each other.

:func:`plan_updates` is pure (decisions + statuses + liveness + now -> steps);
:func:`reconcile` is the wiring.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from ..config import DEFAULT_STALE_AFTER_S
from ..errors import NotFoundError, StoreError
from ..sbatch.tag import find_tags
from ..slurm.jobs import JobStatus, JobStatusReader
from ..slurm.transient import Blips
from ..storage import DecisionState, DecisionStore, DecisionSummary, HistoryFilter
from ..storage.states import TERMINAL, can_move
from .clock import Clock
from .kept_env import drop_kept_environment
from .live_queue import tag_of
from .process_id import REMOTE_SETTLE_S, ProcessId, alive
from .viewer import Viewer

S = DecisionState
#: States ``reconcile`` looks at.
OPEN_FOR_SLURM = (S.SUBMITTING, S.SUBMITTED, S.RUNNING, S.QUEUED, S.STARTING, S.PREEMPTING)
#: ``submit-failed`` decisions this recent (and without a job id) are looked up by their tag,
#: so that one whose job appeared after all is repaired.
REPAIR_WINDOW_S = 86400.0


@dataclass(frozen=True)
class Step:
    """One transition to record."""

    state: DecisionState
    at: datetime
    detail: str
    slurm_job_id: str | None = None


@dataclass(frozen=True)
class Update:
    """What reconcile found for one decision and the steps it takes."""

    decision_id: int
    before: DecisionState
    steps: tuple[Step, ...]
    slurm_job_id: str | None
    found_in: str  # "squeue", "sacct" or ""
    note: str = ""
    now: DecisionState | None = None
    """The state after the steps were applied (``None`` before): differs from
    :attr:`after` when another process moved the decision first."""

    @property
    def after(self) -> DecisionState:
        if self.now is not None:
            return self.now
        return self.steps[-1].state if self.steps else self.before

    def to_json(self) -> dict[str, object]:
        return {
            "decision_id": self.decision_id,
            "before": self.before.value,
            "after": self.after.value,
            "slurm_job_id": self.slurm_job_id,
            "found_in": self.found_in or None,
            "steps": [
                {"state": s.state.value, "at": s.at.isoformat(), "detail": s.detail}
                for s in self.steps
            ],
            "note": self.note,
        }


@dataclass(frozen=True)
class ReconcileReport:
    """``mlsub reconcile``: the cluster, one :class:`Update` per open decision looked at
    (what Slurm said and the states it moved through), and notes (e.g. re-plan starts
    finished or replaced jobs cancelled)."""

    cluster_name: str
    decisions: tuple[Update, ...]
    notes: tuple[str, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "cluster_name": self.cluster_name,
            "decisions": [u.to_json() for u in self.decisions],
            "notes": list(self.notes),
        }

    def noting(self, *more: str) -> ReconcileReport:
        """This report with ``more`` notes after its own."""
        return replace(self, notes=(*self.notes, *more))


def plan_updates(
    decisions: Iterable[DecisionSummary],
    tags: Mapping[int, str],
    statuses: Mapping[str, JobStatus],
    *,
    now: datetime,
    stale_after_s: float = DEFAULT_STALE_AFTER_S,
    liveness: Mapping[int, bool | None] | None = None,
) -> list[Update]:
    """The transitions that bring ``decisions`` in line with ``statuses`` (pure).

    ``tags`` maps a decision id to its tag text; ``statuses`` maps Slurm job ids to what
    Slurm says (squeue entries override sacct entries for the same job). ``liveness`` maps
    a ``submitting`` decision's id to whether its submitting process is alive (``None`` or
    missing: cannot tell from here)."""
    by_tag: dict[str, list[JobStatus]] = {}
    for found in statuses.values():
        for text in (found.comment, found.admin_comment):
            for tag in find_tags(text):
                by_tag.setdefault(str(tag), []).append(found)
    alive_of = liveness or {}
    out = []
    for d in decisions:
        status: JobStatus | None = statuses.get(d.slurm_job_id) if d.slurm_job_id else None
        if d.state == S.STARTING:
            # a re-plan submitted the new layout's script: a job of this user with the tag
            # that is not the held one (which it cancels once the new one is recorded)
            status = next(
                (
                    j
                    for j in by_tag.get(tags.get(d.decision_id, ""), ())
                    if j.job_id != d.slurm_job_id
                    and not j.held
                    and j.phase != "cancelled"
                    and (not j.user or j.user == d.job_owner)
                ),
                status,
            )
        if status is None and d.state in (S.SUBMITTING, S.SUBMIT_FAILED):
            # only a job Slurm says is the decision's user's: a copied tag adopts nothing
            status = next(
                (
                    j
                    for j in by_tag.get(tags.get(d.decision_id, ""), ())
                    if not j.user or j.user == d.job_owner
                ),
                None,
            )
        if d.state == S.PREEMPTING and status is not None:
            out.append(_preempting(d, status, now, alive_of.get(d.decision_id)))
            continue
        out.append(_update(d, status, now, stale_after_s, alive_of.get(d.decision_id)))
    return out


def _preempting(
    d: DecisionSummary, status: JobStatus, now: datetime, process_alive: bool | None
) -> Update:
    """A decision a re-plan is preempting (docs/formulation.md §16, "Live"): requeued and
    held in Slurm → ``queued`` (it waits with its resumed request); still running once
    the re-plan that preempts it is gone (it stopped before the requeue) → ``running``;
    ended → as Slurm says; else (the re-plan may still be acting) left as it is."""
    job = status.job_id
    if status.held:
        step = Step(S.QUEUED, now, f"reconcile: job {job} requeued held by a preemption", job)
        return Update(d.decision_id, d.state, (step,), job, status.source)
    if status.phase == "running":
        if process_alive is False:
            step = Step(
                S.RUNNING,
                now,
                f"reconcile: job {job} still runs and the re-plan that was preempting it is "
                "gone: not preempted",
            )
            return Update(d.decision_id, d.state, (step,), job, status.source)
        return Update(d.decision_id, d.state, (), job, status.source, "being preempted")
    final = {"completed": S.COMPLETED, "failed": S.FAILED, "cancelled": S.CANCELLED}.get(
        status.phase
    )
    if final is None:  # pending without a hold (requeued by someone else): not ours to say
        return Update(d.decision_id, d.state, (), job, status.source, f"job {job} pending")
    exit_code = f", exit code {status.exit_code}" if status.exit_code else ""
    step = Step(final, status.end or now, f"slurm: job {job} {status.state}{exit_code}")
    return Update(d.decision_id, d.state, (step,), job, status.source)


def _update(
    d: DecisionSummary,
    status: JobStatus | None,
    now: datetime,
    stale_after_s: float,
    process_alive: bool | None,
) -> Update:
    if status is None:
        if d.state == S.SUBMIT_FAILED:
            return Update(d.decision_id, d.state, (), None, "", "")
        if d.state == S.SUBMITTING:
            return _no_job_yet(d, now, stale_after_s, process_alive)
        return Update(
            d.decision_id,
            d.state,
            (),
            d.slurm_job_id,
            "",
            f"job {d.slurm_job_id} is in neither squeue nor accounting",
        )
    steps: list[Step] = []
    state = d.state
    job = status.job_id
    if status.held and state in (S.SUBMITTING, S.SUBMIT_FAILED):
        at = status.submit or d.created_at
        steps.append(Step(S.QUEUED, at, f"reconcile: found held job {job} by its tag", job))
        return Update(d.decision_id, d.state, tuple(steps), job, status.source)
    if status.held and state in (S.QUEUED, S.STARTING):
        note = (
            ""
            if state == S.QUEUED
            else f"job {job} is still held: the next `mlsub replan` starts it on the "
            "layout this decision names"
        )
        return Update(d.decision_id, d.state, (), job, status.source, note)
    if state in (S.SUBMITTING, S.SUBMIT_FAILED):
        at = status.submit or d.created_at
        how = "by its tag" if state == S.SUBMITTING else "by its tag after all (repaired)"
        steps.append(Step(S.SUBMITTED, at, f"reconcile: found job {job} {how}", job))
        state = S.SUBMITTED
    elif state in (S.QUEUED, S.STARTING) and status.phase != "cancelled":
        how = (
            "released outside mlsub: it runs on the layout of its held script"
            if state == S.QUEUED
            else ("re-submitted by a re-plan" if job != d.slurm_job_id else "released by a re-plan")
        )
        steps.append(Step(S.SUBMITTED, status.submit or d.created_at, f"reconcile: job {job} "
                          f"{how}", job))  # fmt: skip
        state = S.SUBMITTED
    phase = status.phase
    nodes = ",".join(status.nodes)
    if phase in ("running", "completed", "failed") and state == S.SUBMITTED and status.start:
        steps.append(Step(S.RUNNING, status.start, f"slurm: job {job} running on {nodes}"))
        state = S.RUNNING
    final = {"completed": S.COMPLETED, "failed": S.FAILED, "cancelled": S.CANCELLED}.get(phase)
    if final is not None and can_move(state, final):
        exit_code = f", exit code {status.exit_code}" if status.exit_code else ""
        detail = f"slurm: job {job} {status.state}{exit_code}" + (f" on {nodes}" if nodes else "")
        steps.append(Step(final, status.end or now, detail))
    return Update(d.decision_id, d.state, tuple(steps), job, status.source)


def _no_job_yet(
    d: DecisionSummary, now: datetime, stale_after_s: float, process_alive: bool | None
) -> Update:
    """A ``submitting`` decision whose job is nowhere: in progress, or over and failed."""
    who = ProcessId.parse(d.submitter)
    if process_alive:
        note = f"still submitting ({who} on {d.host} is running)"
        return Update(d.decision_id, d.state, (), None, "", note)
    if process_alive is None and (now - d.created_at).total_seconds() < stale_after_s:
        by = f"{who} on {d.host}" if who else f"a process on {d.host} (not recorded)"
        note = (
            f"still submitting, as far as can be told from here (by {by}; stale after "
            f"{stale_after_s:g} s)"
        )
        return Update(d.decision_id, d.state, (), None, "", note)
    age = (now - d.created_at).total_seconds()
    settle = min(REMOTE_SETTLE_S, stale_after_s)
    if process_alive is False and who is not None and who.remote and age < settle:
        note = (
            f"still submitting, maybe: {who} on {d.host} is gone, but its sbatch over SSH "
            f"may still reach Slurm (settles after {settle:g} s)"
        )
        return Update(d.decision_id, d.state, (), None, "", note)
    why = (
        f"its submitting process ({who} on {d.host}) is gone"
        if process_alive is False
        else f"it is older than {stale_after_s:g} s"
    )
    step = Step(
        S.SUBMIT_FAILED,
        now,
        f"reconcile: no Slurm job carries this decision's tag and {why}: the submission "
        "stopped before sbatch reached Slurm",
    )
    return Update(d.decision_id, d.state, (step,), None, "")


def reconcile(
    *,
    store: DecisionStore,
    reader: JobStatusReader,
    clock: Clock,
    cluster_name: str,
    viewer: Viewer,
    stale_after_s: float = DEFAULT_STALE_AFTER_S,
    decision_ids: Iterable[int] = (),
    accounting: bool = True,
    host: str | None = None,
    process_alive: Callable[[ProcessId, bool], bool | None] = lambda p, same: alive(
        p, same_host=same
    ),
) -> ReconcileReport:
    """Look up every open decision ``viewer`` may manage and record what Slurm did.

    ``accounting=False`` asks only ``squeue`` (cheap: ``submit`` does this before it
    plans, so jobs that ended early give their reservations back). ``host`` is this
    machine's name (default: the host name), to tell which submitting processes can be
    checked. Returns the updates (applied; see :attr:`Update.now`) and notes (e.g.
    accounting not available) as a :class:`ReconcileReport`."""
    wanted = set(decision_ids)
    now = clock.now()
    user = None if viewer.is_admin else viewer.user
    candidates = [
        s
        for state in OPEN_FOR_SLURM
        for s in store.history(HistoryFilter(user=user, state=state, cluster=cluster_name))
    ] + [
        s
        for s in store.history(
            HistoryFilter(
                user=user,
                state=S.SUBMIT_FAILED,
                cluster=cluster_name,
                since=now - timedelta(seconds=REPAIR_WINDOW_S),
            )
        )
        if s.slurm_job_id is None
    ]
    open_ = [s for s in candidates if not wanted or s.decision_id in wanted]
    if not open_:
        return ReconcileReport(cluster_name, ())
    tags = {s.decision_id: str(tag_of(cluster_name, s)) for s in open_}
    statuses: dict[str, JobStatus] = {}
    queue = reader.queue()
    queued_tags = {str(t) for j in queue.values() for t in find_tags(j.comment)}
    missing = [
        s
        for s in open_
        if not (s.slurm_job_id and s.slurm_job_id in queue)
        and tags[s.decision_id] not in queued_tags
    ]
    notes: tuple[str, ...] = ()
    if missing and accounting:
        since = min(s.created_at for s in missing) - timedelta(days=1)  # any time zone
        report = reader.accounting(since=since)
        statuses.update(report.jobs)
        notes = report.notes
    statuses.update(queue)  # the controller's view is the newer one
    here = host or socket.gethostname()
    liveness: dict[int, bool | None] = {}
    for s in open_:
        who = ProcessId.parse(s.submitter) if s.state in (S.SUBMITTING, S.PREEMPTING) else None
        if who is not None:
            liveness[s.decision_id] = process_alive(who, s.host == here)
    updates = plan_updates(
        open_, tags, statuses, now=clock.now(), stale_after_s=stale_after_s, liveness=liveness
    )
    # a submit-failed decision looked up for repair is reported only when it was repaired
    shown = [u for u in updates if u.steps or u.before != S.SUBMIT_FAILED]
    applied = [_apply(store, u) for u in shown]
    for u in applied:  # a job that ended: its kept env (queued, or preemptible) is not needed
        if u.before != S.SUBMIT_FAILED and u.after in TERMINAL:
            with contextlib.suppress(StoreError, NotFoundError):
                record = store.get(u.decision_id)
                drop_kept_environment(record.launch, record.summary.job_owner)
    return ReconcileReport(cluster_name, tuple(applied), tuple(notes))


def _apply(store: DecisionStore, u: Update) -> Update:
    """Record ``u``'s steps, each a compare-and-set on the state before it."""
    expected = u.before
    state = u.before
    for step in u.steps:
        moved = store.transition(
            u.decision_id,
            step.state,
            step.at,
            step.detail,
            slurm_job_id=step.slurm_job_id,
            expected=expected,
        )
        state = moved.summary.state
        if moved.reason == "changed":
            note = f"moved to {state} by another process meanwhile; left as it is"
            return replace(u, now=state, note="; ".join(x for x in (u.note, note) if x))
        expected = state
    return replace(u, now=state)


def wait_for(
    decision_id: int,
    *,
    poll: Callable[[], DecisionState],
    sleep: Callable[[float], None],
    every_s: float = 2.0,
    blips: Blips | None = None,
) -> DecisionState:
    """Call ``poll`` (a reconcile of this decision, returning its state) every ``every_s``
    seconds until the decision is in a terminal state; return that state. A transient
    Slurm failure of one poll (a socket timeout under load) is tried again at the next
    turn, up to ``blips.limit`` in a row (``slurm/transient.py``); any other ends the
    wait with its error."""
    tolerant = blips or Blips()
    while True:
        state = tolerant.attempt(poll)
        if state is not None and state in TERMINAL:
            return state
        sleep(every_s)
