"""``mlsub reconcile``: bring every open decision up to date with what Slurm did.

Open decisions are those ``submitting``, ``submitted`` or ``running`` (``planned`` ones were
never meant to reach Slurm by themselves). For each, the job is looked up

* by its Slurm job id when the decision has one, else
* by the decision tag in the job's comment (``sbatch/tag.py``): a ``submitting`` decision
  whose process died before it could store the id,

first in ``squeue`` (what the controller still lists), then in accounting (``sacct``,
when slurmdbd is configured). What was found moves the decision along its states with
Slurm's own times: ``submitted`` (submit time), ``running`` (start time, nodes),
``completed``/``failed``/``cancelled`` (end time, exit code). A ``submitting`` decision
with no job anywhere, older than ``stale_after_s`` (longer than any sbatch call), never
reached Slurm: it becomes ``submit-failed``. A submitted job found nowhere is reported and
left as it is (its reservation still ends at its predicted end + grace).

:func:`plan_updates` is pure (decisions + statuses + now -> steps); :func:`reconcile` is the
wiring.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from ..slurm.jobs import JobStatus, JobStatusReader
from ..storage import DecisionState, DecisionStore, DecisionSummary, HistoryFilter
from ..storage.states import TERMINAL, can_move
from .clock import Clock
from .decisions import Viewer
from .submit import tag_of

S = DecisionState
#: States ``reconcile`` looks at.
OPEN_FOR_SLURM = (S.SUBMITTING, S.SUBMITTED, S.RUNNING)
#: A ``submitting`` decision younger than this may still be inside its sbatch call.
DEFAULT_STALE_AFTER_S = 120.0


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

    @property
    def after(self) -> DecisionState:
        return self.steps[-1].state if self.steps else self.before

    def as_dict(self) -> dict[str, Any]:
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


def plan_updates(
    decisions: Iterable[DecisionSummary],
    tags: Mapping[int, str],
    statuses: Mapping[str, JobStatus],
    *,
    now: datetime,
    stale_after_s: float = DEFAULT_STALE_AFTER_S,
) -> list[Update]:
    """The transitions that bring ``decisions`` in line with ``statuses`` (pure).

    ``tags`` maps a decision id to its tag text; ``statuses`` maps Slurm job ids to what
    Slurm says (squeue entries override sacct entries for the same job)."""
    by_tag: dict[str, JobStatus] = {}
    for found in statuses.values():
        for text in (found.comment, found.admin_comment):
            for tag in tags.values():
                if tag in text:
                    by_tag.setdefault(tag, found)
    out = []
    for d in decisions:
        status: JobStatus | None = statuses.get(d.slurm_job_id) if d.slurm_job_id else None
        if status is None and d.state == S.SUBMITTING:
            status = by_tag.get(tags.get(d.decision_id, ""))
        out.append(_update(d, status, now, stale_after_s))
    return out


def _update(
    d: DecisionSummary, status: JobStatus | None, now: datetime, stale_after_s: float
) -> Update:
    if status is None:
        if d.state == S.SUBMITTING:
            if (now - d.created_at).total_seconds() < stale_after_s:
                return Update(d.decision_id, d.state, (), None, "", "still submitting (too recent)")
            step = Step(
                S.SUBMIT_FAILED,
                now,
                "reconcile: no Slurm job carries this decision's tag; the submission was "
                "interrupted before sbatch reached Slurm",
            )
            return Update(d.decision_id, d.state, (step,), None, "")
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
    if state == S.SUBMITTING:
        at = status.submit or d.created_at
        steps.append(Step(S.SUBMITTED, at, f"reconcile: found job {job} by its tag", job))
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
) -> tuple[list[Update], tuple[str, ...]]:
    """Look up every open decision ``viewer`` may manage and record what Slurm did.

    ``accounting=False`` asks only ``squeue`` (cheap: ``submit`` does this before it
    plans, so jobs that ended early give their reservations back). Returns the updates
    (applied) and notes (e.g. accounting not available)."""
    wanted = set(decision_ids)
    open_ = [
        s
        for state in OPEN_FOR_SLURM
        for s in store.history(
            HistoryFilter(
                user=None if viewer.is_admin else viewer.user,
                state=state,
                cluster=cluster_name,
            )
        )
        if not wanted or s.decision_id in wanted
    ]
    if not open_:
        return [], ()
    tags = {s.decision_id: str(tag_of(cluster_name, s)) for s in open_}
    statuses: dict[str, JobStatus] = {}
    queue = reader.queue()
    missing = [
        s
        for s in open_
        if not (s.slurm_job_id and s.slurm_job_id in queue)
        and not any(tags[s.decision_id] in j.comment for j in queue.values())
    ]
    notes: tuple[str, ...] = ()
    if missing and accounting:
        since = min(s.created_at for s in missing) - timedelta(days=1)  # any time zone
        report = reader.accounting(since=since)
        statuses.update(report.jobs)
        notes = report.notes
    statuses.update(queue)  # the controller's view is the newer one
    now = clock.now()
    updates = plan_updates(open_, tags, statuses, now=now, stale_after_s=stale_after_s)
    for u in updates:
        for step in u.steps:
            store.transition(
                u.decision_id, step.state, step.at, step.detail, slurm_job_id=step.slurm_job_id
            )
    return updates, notes


def wait_for(
    decision_id: int,
    *,
    poll: Callable[[], DecisionState],
    sleep: Callable[[float], None],
    every_s: float = 2.0,
) -> DecisionState:
    """Call ``poll`` (a reconcile of this decision, returning its state) every ``every_s``
    seconds until the decision is in a terminal state; return that state."""
    while True:
        state = poll()
        if state in TERMINAL:
            return state
        sleep(every_s)
