"""What the decision store hands out and takes in: frozen snapshots, never ORM rows."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ..model import ClusterSnapshot, Decision, JobRequest, NodeCount, Reservation, Resources
from ..placement.params import PlacementParams
from ..sbatch.launch import Launch
from .states import DecisionState

#: How the ``preempting`` transition of a resize begins (``services/preempt``): a pause
#: of the job to start it again wider, not for waiting jobs.
RESIZE_DETAIL = "replan: resized"
#: How a move's ``preempting`` transition begins (the site's ``preempt_defrag``; counted
#: as a pause for waiting jobs, as the replay counts it).
MOVE_DETAIL = "replan: moved to a smaller node"


@dataclass(frozen=True)
class Transition:
    """One entry of a decision's append-only state history."""

    state: DecisionState
    at: datetime
    detail: str = ""


@dataclass(frozen=True)
class NewDecision:
    """A decision to record: the solver's inputs and output, and who asked."""

    request: JobRequest
    snapshot: ClusterSnapshot
    params: PlacementParams
    decision: Decision
    user: str
    host: str
    created_at: datetime
    packages: tuple[tuple[str, str], ...] = ()
    script: str | None = None
    state: DecisionState = DecisionState.PLANNED
    """The first state: ``planned`` (``plan --reserve``) or ``submitting`` (``submit``)."""
    submitter: str | None = None
    """Who is submitting it (``submit``): the process on ``host`` that runs sbatch, as
    ``services/process_id.py`` writes it, so that ``reconcile`` can tell a submission still
    in progress from one whose process is gone."""
    slurm_user: str | None = None
    """The Slurm user its job will run as (the local user, or the SSH user of a remote
    submission): a job carrying its tag counts as its job only when Slurm says it belongs
    to this user."""
    holds: bool = True
    """Whether it reserves its layout: false for a job submitted held to wait in the queue
    (late binding: its layout is tentative and holds nothing until a re-plan starts it)."""
    launch: Launch | None = None
    """How to render and submit it again (a queued job; ``sbatch/launch.py``)."""

    @property
    def start(self) -> datetime:
        return self.snapshot.slot_start(self.decision.start_slot)

    @property
    def end(self) -> datetime:
        return self.snapshot.slot_start(self.decision.end_slot + 1)


@dataclass(frozen=True)
class DecisionSummary:
    """The columns of one decision that listings need (cheap to read)."""

    decision_id: int
    cluster: str
    created_at: datetime
    user: str
    host: str
    job_id: str
    job_name: str
    policy: str
    form: str
    mode: str
    state: DecisionState
    start: datetime
    end: datetime
    start_slot: int
    end_slot: int
    placement: tuple[NodeCount, ...]
    slurm_job_id: str | None
    submitter: str | None = None
    slurm_user: str | None = None

    @property
    def job_owner(self) -> str:
        """Whom the decision's Slurm job must belong to."""
        return self.slurm_user or self.user


@dataclass(frozen=True)
class Moved:
    """What one :meth:`~.interface.DecisionStore.transition` did.

    ``applied`` is false when nothing changed: the decision had already reached or passed
    the state asked for (``reason`` = ``"reached"``), or it was no longer in the state the
    caller expected (``reason`` = ``"changed"``: another process moved it first).
    ``summary`` is the decision as it is after the call."""

    summary: DecisionSummary
    applied: bool
    reason: str = ""


@dataclass(frozen=True)
class DecisionRecord:
    """A whole stored decision: its summary, every solver input, and its history."""

    summary: DecisionSummary
    request: JobRequest
    snapshot: ClusterSnapshot
    snapshot_sha256: str
    params: PlacementParams
    decision: Decision
    seed: int
    packages: tuple[tuple[str, str], ...]
    script: str | None
    transitions: tuple[Transition, ...]
    launch: Launch | None = None
    earlier_job_ids: tuple[str, ...] = ()
    """Slurm job ids the decision had before its current one (a queued job submitted
    again on the layout its re-plan chose), oldest first."""
    resumed_request: JobRequest | None = None
    """While ``preempting``: the request it waits with once requeued (the work its run has
    not covered plus the restart charge; on :attr:`snapshot`'s grid). It becomes
    :attr:`request` when the decision becomes ``queued`` (revision 0007)."""

    @property
    def preemptions(self) -> int:
        """How often it was preempted and requeued (``preempting`` → ``queued``), for
        waiting jobs or to be resized."""
        return len(self._requeues())

    @property
    def pauses(self) -> int:
        """How often it was paused for waiting jobs (the requeues that were not resizes:
        what ``preempt_max`` limits, docs/formulation.md §16)."""
        return sum(1 for t in self._requeues() if not t.detail.startswith(RESIZE_DETAIL))

    def _requeues(self) -> list[Transition]:
        """The ``preempting`` transitions that were followed by ``queued``."""
        return [
            a
            for a, b in itertools.pairwise(self.transitions)
            if a.state == DecisionState.PREEMPTING and b.state == DecisionState.QUEUED
        ]

    @property
    def decision_id(self) -> int:
        return self.summary.decision_id

    @property
    def state(self) -> DecisionState:
        return self.summary.state


@dataclass(frozen=True)
class HistoryFilter:
    """Which decisions a listing returns (every field optional; all must match)."""

    user: str | None = None
    since: datetime | None = None
    state: DecisionState | None = None
    cluster: str | None = None
    limit: int | None = None
    until: datetime | None = None  # created before


@dataclass(frozen=True)
class ReportRow:
    """One decision as ``mlsub report`` reads it in bulk: its summary, its plan and request
    (canonical JSON, decoded by the report only where needed), the times of its state
    changes ``(state, at)`` in order, and its earlier Slurm job ids."""

    summary: DecisionSummary
    decision_json: str
    request_json: str
    earlier_job_ids: tuple[str, ...]
    solver: str
    trials: int
    lp_value: float | None
    transitions: tuple[tuple[str, datetime], ...]


@dataclass(frozen=True)
class TimedReservation:
    """A stored reservation in wall time: usage of ``machine`` over [start, end)."""

    decision_id: int
    machine: str
    start: datetime
    end: datetime
    usage: Resources


@dataclass(frozen=True)
class NewReplayRun:
    """A replay run to record: its configuration and one result mapping per policy."""

    created_at: datetime
    user: str
    trace: str
    config: Mapping[str, Any]
    results: Mapping[str, Mapping[str, Any]]


@dataclass(frozen=True)
class ReplayRun:
    run_id: int
    created_at: datetime
    user: str
    trace: str
    config: Mapping[str, Any]
    results: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def to_slots(r: TimedReservation, epoch: datetime, slot_seconds: float) -> Reservation:
    """``r`` on the slot grid of a snapshot: start floored, end ceiled (never narrower)."""
    step = timedelta(seconds=slot_seconds)
    start = (r.start - epoch) // step
    end = -((epoch - r.end) // step)
    return Reservation(r.machine, start, max(end, start + 1), r.usage, f"mlsub-{r.decision_id}")


def held(
    rows: tuple[TimedReservation, ...], decision_end: datetime, now: datetime, grace_s: float
) -> tuple[TimedReservation, ...]:
    """What one open decision holds at ``now`` (its rows ending at or before ``now`` are
    dropped). While it runs past its predicted end (``decision_end <= now < decision_end +
    grace``) the rows that end with it are held on until ``decision_end + grace``."""
    grace_end = decision_end + timedelta(seconds=grace_s)
    if now >= grace_end:
        return ()
    out = []
    for r in rows:
        end = grace_end if (r.end == decision_end and now >= decision_end) else r.end
        if end > now:
            out.append(TimedReservation(r.decision_id, r.machine, r.start, end, r.usage))
    return tuple(out)
