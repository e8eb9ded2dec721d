"""The typed results of the decision-store use cases (``services/decisions.py``,
``services/db.py``) as the CLI receives them, each with its one ``to_json()``: the
documented ``--json`` shapes of ``history``, ``show``, ``export``, ``release``, ``explain``
and ``db current`` / ``db upgrade`` (pinned by ``tests/golden/json/decisions``).

They wrap the store's own typed records (:class:`~slurm_mlsched.storage.DecisionSummary`,
:class:`~slurm_mlsched.storage.DecisionRecord`) rather than copying them, so a table reads
the same attributes the JSON is built from.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from ..model.decision import RoundingTrial, placement_json
from ..storage import DecisionRecord, DecisionSummary, codec

if TYPE_CHECKING:
    from ..sim.queue_estimate import JobEstimate, QueueEstimate
    from .plan import SlotRun


def _iso(moment: datetime) -> str:
    return moment.isoformat()


@dataclass(frozen=True)
class DecisionRow:
    """One decision as ``mlsub history`` lists it (and ``release`` answers)."""

    summary: DecisionSummary

    def to_json(self) -> dict[str, object]:
        s = self.summary
        return {
            "decision_id": s.decision_id,
            "cluster": s.cluster,
            "created_at": _iso(s.created_at),
            "user": s.user,
            "host": s.host,
            "job_id": s.job_id,
            "job_name": s.job_name,
            "policy": s.policy,
            "form": s.form,
            "mode": s.mode,
            "state": s.state.value,
            "start": _iso(s.start),
            "end": _iso(s.end),
            "start_slot": s.start_slot,
            "end_slot": s.end_slot,
            "placement": placement_json(s.placement),
            "slurm_job_id": s.slurm_job_id,
        }


@dataclass(frozen=True)
class DecisionView:
    """One decision in full as ``mlsub show`` prints it; with ``full`` (``mlsub export``)
    also the solver's inputs and output as the store encodes them (request, snapshot,
    decision), enough to re-solve it elsewhere."""

    record: DecisionRecord
    full: bool = False

    @property
    def row(self) -> DecisionRow:
        return DecisionRow(self.record.summary)

    @property
    def slot_runs(self) -> tuple[SlotRun, ...]:
        """The schedule as runs of identical slots (more than one: the allocation changes
        over time, elastic form), as ``plan`` shows it."""
        from .plan import slot_runs

        return slot_runs(self.record.decision.slots, self.record.snapshot)

    def to_json(self) -> dict[str, object]:
        r = self.record
        d, snap = r.decision, r.snapshot
        out: dict[str, object] = {
            **self.row.to_json(),
            "earlier_slurm_job_ids": list(r.earlier_job_ids),
            "seed": r.seed,
            "params": codec.encode_params(r.params),
            "solver": d.solver,
            "solver_version": d.solver_version,
            "packages": dict(r.packages),
            "lp_deadline_slot": d.lp_deadline,
            "lp_value": d.lp_value,
            "trials": d.trials,
            "kept_trial": d.kept_trial,
            "kept_because": d.kept_because,
            "repair_actions": list(d.repair_actions),
            "slots": [codec.encode_slot_plan(p) for p in d.slots],
            "snapshot_sha256": r.snapshot_sha256,
            "cluster_snapshot": {
                "nodes": len(snap.machines),
                "reservations": len(snap.reservations),
                "slot_seconds": snap.slot_seconds,
                "epoch": _iso(snap.epoch),
                "now_slot": snap.now_slot,
            },
            "script": r.script,
            "transitions": [
                {"state": t.state.value, "at": _iso(t.at), "detail": t.detail}
                for t in r.transitions
            ],
        }
        if self.full:
            out["request"] = codec.encode_request(r.request)
            out["snapshot"] = codec.encode_snapshot(snap)
            out["decision"] = codec.encode_decision(d)
        return out


@dataclass(frozen=True)
class SchemaState:
    """``mlsub db current``: the store's schema revision (None: empty) and this mlsub's."""

    url: str
    current: str | None
    head: str

    @property
    def up_to_date(self) -> bool:
        return self.current == self.head

    def to_json(self) -> dict[str, object]:
        return {
            "url": self.url,
            "current": self.current,
            "head": self.head,
            "up_to_date": self.up_to_date,
        }


@dataclass(frozen=True)
class SchemaUpgrade:
    """``mlsub db upgrade``: the revision before (None: empty) and after."""

    url: str
    before: str | None
    after: str | None
    head: str

    def to_json(self) -> dict[str, object]:
        return asdict(self)


# --- explain ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Alternative:
    """The chosen decision, or a what-if re-solve on the stored inputs, with its predicted
    completion (``completion_slots`` = end slot − arrival + 1)."""

    kind: str
    policy: str
    form: str
    mode: str
    workers: int
    ps: int
    start_slot: int
    end_slot: int
    start: datetime
    end: datetime
    completion_slots: int

    def to_json(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "policy": self.policy,
            "form": self.form,
            "mode": self.mode,
            "workers": self.workers,
            "ps": self.ps,
            "start_slot": self.start_slot,
            "end_slot": self.end_slot,
            "start": _iso(self.start),
            "end": _iso(self.end),
            "completion_slots": self.completion_slots,
        }


@dataclass(frozen=True)
class FailedAlternative:
    """A what-if re-solve that could not be built (reported, not raised)."""

    kind: str
    error: str

    def to_json(self) -> dict[str, object]:
        return {"kind": self.kind, "error": self.error}


@dataclass(frozen=True)
class TrialOutcome:
    """One randomized-rounding trial as the policy recorded it (``Decision.rounding``):
    before repair its capacity violations, the share of the work done by the LP deadline
    and, when it placed the job, its start, end (``end``: the end slot's end as a time;
    ``completion_slots`` from the arrival) and mode; after repair its end and workers.
    ``kept`` marks the trial the policy kept, ``kept_because`` its reason."""

    trial: RoundingTrial
    end: datetime | None
    completion_slots: int | None
    kept: bool
    kept_because: str = ""

    @property
    def kind(self) -> str:
        return f"rounding trial {self.trial.index}"

    @property
    def mode(self) -> str:
        return "colocated" if self.trial.colocated else "distributed"

    def to_json(self) -> dict[str, object]:
        t = self.trial
        out: dict[str, object] = {
            "kind": self.kind,
            "trial": t.index,  # the index alone (kept_trial names the same)
            "violations": t.violations,
            "work_fraction": t.work_fraction,
        }
        if t.end_slot is not None and self.end is not None:
            out.update(
                end_slot=t.end_slot,
                end=_iso(self.end),
                completion_slots=self.completion_slots,
                workers=t.workers or 0,
                start_slot=t.start_slot,
                mode=self.mode,
            )
        if t.repaired_end_slot is not None:
            out["repaired_end_slot"] = t.repaired_end_slot
            out["repaired_workers"] = t.repaired_workers or 0
        out["kept"] = self.kept
        if self.kept:
            out["kept_because"] = self.kept_because
        return out


AlternativeRow = Alternative | FailedAlternative | TrialOutcome


@dataclass(frozen=True)
class BindingResource:
    """A node of the start slot and its tightest resource after the decision: the share of
    its capacity held by reservations plus this job."""

    node: str
    resource: str
    share: float

    def to_json(self) -> dict[str, object]:
        return asdict(self)


@dataclass(frozen=True)
class FieldDiff:
    """A decision field the re-solve did not reproduce (values as the store encodes them)."""

    field: str
    stored: object
    resolved: object

    def to_json(self) -> dict[str, object]:
        return {"field": self.field, "stored": self.stored, "resolved": self.resolved}


@dataclass(frozen=True)
class Resolve:
    """``place()`` run again on the stored request, snapshot, policy and parameters."""

    reproduced: bool
    diff: tuple[FieldDiff, ...] = ()
    resolve_error: str | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "reproduced": self.reproduced,
            "diff": [d.to_json() for d in self.diff],
            "resolve_error": self.resolve_error,
        }


@dataclass(frozen=True)
class QueuePlace:
    """Where a queued decision stands now: its position (0: starts at the next re-plan),
    what it waits for, its estimated start, and the queue's plan ÷ lower bound
    (``bound``; None and ``bound_reason`` when it could not be made)."""

    position: int
    reason: str
    estimated_start: datetime | None
    estimate: JobEstimate | None = None
    bound: QueueEstimate | None = None
    bound_reason: str = ""

    def to_json(self) -> dict[str, object]:
        from ..sim.queue_estimate import bound_json

        start = None if self.estimated_start is None else _iso(self.estimated_start)
        return {
            "position": self.position,
            "reason": self.reason,
            "estimated_start": start,
            "estimate": None if self.estimate is None else self.estimate.to_json(),
            "plan_vs_bound": bound_json(self.bound, self.bound_reason),
        }


@dataclass(frozen=True)
class Explanation:
    """``mlsub explain``: why the decision is what it is, what it was chosen among, and
    whether a re-solve from its stored inputs reproduces it.

    ``queue`` is set for a queued decision whose place the live cluster could tell;
    ``queue_unknown`` when it could not (the JSON then has ``"queue": null``)."""

    decision_id: int
    job_id: str
    policy: str
    form: str
    seed: int
    mode: str
    why: tuple[str, ...]
    lp_deadline_slot: int | None
    lp_deadline: datetime | None
    lp_value: float | None
    start_slot: int
    end_slot: int
    trials: int
    kept_trial: int | None
    kept_because: str
    repair_actions: tuple[str, ...]
    binding: tuple[BindingResource, ...]
    alternatives: tuple[AlternativeRow, ...]
    snapshot_sha256: str
    snapshot_digest_ok: bool
    resolved: Resolve
    queue: QueuePlace | None = None
    queue_unknown: bool = False
    would_pause: Mapping[str, object] | None = None
    """A running decision where the site preempts: what the next re-plan would do to it
    (``replan.WouldPause.to_json``), when it would pause it."""

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {
            "decision_id": self.decision_id,
            "job_id": self.job_id,
            "policy": self.policy,
            "form": self.form,
            "seed": self.seed,
            "mode": self.mode,
            "why": list(self.why),
            "lp_deadline_slot": self.lp_deadline_slot,
            "lp_deadline": None if self.lp_deadline is None else _iso(self.lp_deadline),
            "lp_value": self.lp_value,
            "start_slot": self.start_slot,
            "end_slot": self.end_slot,
            "trials": self.trials,
            "kept_trial": self.kept_trial,
            "kept_because": self.kept_because,
            "repair_actions": list(self.repair_actions),
            "binding": [b.to_json() for b in self.binding],
            "alternatives": [a.to_json() for a in self.alternatives],
            "snapshot_sha256": self.snapshot_sha256,
            "snapshot_digest_ok": self.snapshot_digest_ok,
            **self.resolved.to_json(),
        }
        if self.queue is not None:
            out["queue"] = self.queue.to_json()
        elif self.queue_unknown:
            out["queue"] = None
        if self.would_pause is not None:
            out["would_pause"] = dict(self.would_pause)
        return out
