"""The decision store interface and its contract.

Every implementation (today :class:`~.sqlalchemy_store.SqlDecisionStore` on SQLite and
PostgreSQL) passes ``tests/storage/test_store_contract.py``, which checks each point below.

Contract
--------
1. **Snapshots.** Every method returns frozen dataclasses from :mod:`.records` (never ORM
   rows or live objects); mutating the database later does not change them.
2. **Exact round trip.** ``get(record(new).decision_id)`` returns the request, snapshot,
   parameters and decision equal to ``new``'s (floats bit for bit), the snapshot digest
   ``sha256(codec.dumps(encode_snapshot(snapshot)))``, and one ``planned`` transition.
3. **Serialized planning.** ``with store.planning(cluster) as tx:`` holds a lock on
   ``cluster`` from entry to exit: no two ``planning`` blocks on one cluster overlap, in
   any number of processes. ``tx.reservations`` sees every decision committed before the
   block began; ``tx.record`` (a decision starting ``planned`` or ``submitting``) and
   ``tx.attach_script`` (its rendered script, once its id is known) are committed when the
   block exits normally and rolled back when it raises; ``tx.summaries(ids)`` reads
   decisions of ``cluster`` inside the lock. Blocks on different clusters may run at once
   (PostgreSQL) or one after the other (SQLite locks the whole file).
4. **Reservations.** ``reservations(cluster, now, epoch=, slot_seconds=)`` returns, on the
   slot grid of ``epoch`` and ``slot_seconds`` (start floored, end ceiled), the usage of
   every decision of ``cluster`` whose state reserves (planned, submitting, submitted,
   running, starting, preempting; not ``queued``: a waiting job holds nothing) and that
   has not ended more than ``grace_s`` ago. Usage that ended by ``now`` is left out; a
   decision that is past its predicted end but inside the grace holds the resources of its
   last slot until end + grace (see :func:`.records.held`). Terminal decisions
   (completed, failed, cancelled, submit-failed, released) reserve nothing.
5. **Transitions.** ``transition`` is one compare-and-set in one transaction (the row is
   locked while it is read and written). It appends to the history and changes the state
   only along :data:`.states.ALLOWED`. Asking for a state the decision already reached or
   passed (:func:`.states.reached`) changes nothing and is not an error
   (``Moved.applied`` false, reason ``"reached"``); with ``expected``, a decision no
   longer in that state is left alone (reason ``"changed"``: someone moved it first).
   Anything else raises :class:`~slurm_mlsched.errors.InvalidTransitionError` and changes
   nothing. A ``preempting`` decision that becomes ``queued`` takes the resumed request
   :meth:`PlanningSession.preempt` kept as its request; leaving ``preempting`` for any
   other state drops it. A no-op still records a Slurm job id the decision did not have yet. History
   is never rewritten.
6. **Listing.** ``history(filter)`` returns summaries in creation order (oldest first),
   matching every given field of the filter; ``limit`` keeps the newest ones.
7. **Errors.** An unknown id raises :class:`~slurm_mlsched.errors.NotFoundError`; a
   database failure raises :class:`~slurm_mlsched.errors.StoreError` (exit code 7).
"""

from __future__ import annotations

from collections.abc import Collection
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Protocol

from ..model import ClusterSnapshot, Decision, JobRequest, Reservation
from ..model.calibration import ProfileFit
from ..sbatch.launch import Launch
from .records import (
    DecisionRecord,
    DecisionSummary,
    HistoryFilter,
    Moved,
    NewDecision,
    NewReplayRun,
    ReplayRun,
)
from .states import DecisionState


class PlanningSession(Protocol):
    """What a caller may do while it holds a cluster's planning lock."""

    def reservations(
        self, now: datetime, *, epoch: datetime, slot_seconds: float
    ) -> tuple[Reservation, ...]: ...

    def record(self, new: NewDecision) -> DecisionRecord: ...

    def attach_script(
        self, decision_id: int, script: str, launch: Launch | None = None
    ) -> None: ...

    def summaries(self, decision_ids: Collection[int]) -> tuple[DecisionSummary, ...]: ...

    def profile_fits(self) -> dict[str, ProfileFit]:
        """The speed-profile fits in force on the cluster, by model name (issue 20)."""
        ...

    def queued(self) -> tuple[DecisionRecord, ...]:
        """The cluster's ``queued`` decisions (that the caller may see), oldest first."""
        ...

    def set_tentative(
        self,
        decision_id: int,
        *,
        request: JobRequest,
        snapshot: ClusterSnapshot,
        decision: Decision,
    ) -> None:
        """Keep a ``queued`` decision's tentative plan (a re-plan reserved it as the head):
        its plan columns become ``decision`` on ``snapshot``; it still reserves nothing and
        stays ``queued`` (no transition). A decision no longer queued is left alone."""
        ...

    def start(
        self,
        decision_id: int,
        *,
        request: JobRequest,
        snapshot: ClusterSnapshot,
        decision: Decision,
        script: str,
        at: datetime,
        detail: str,
        process: str | None = None,
    ) -> DecisionRecord:
        """A re-plan starts a ``queued`` decision: its plan becomes ``decision`` (taken
        against ``snapshot``), its script ``script``, it reserves that layout from now on
        (any earlier layout's reservations end now) and is ``starting``; ``process`` is the
        re-plan's identity (``services/process_id.py``), so that no other process finishes
        the start while it may still act. Raises InvalidTransitionError when it is no
        longer queued."""
        ...

    def preempt(
        self,
        decision_id: int,
        *,
        resumed: JobRequest,
        at: datetime,
        detail: str,
        process: str | None = None,
    ) -> DecisionRecord:
        """A re-plan pauses a ``submitted`` or ``running`` decision (checkpoint-restart,
        docs/formulation.md §16): it becomes ``preempting`` (it still reserves: Slurm runs
        it until it is requeued) and keeps ``resumed`` (the request it waits with, on its
        snapshot's grid), which becomes its request when it moves on to ``queued``
        (:meth:`DecisionStore.transition`); ``process``: the re-plan acting on it. Raises
        InvalidTransitionError when it is in another state."""
        ...


class DecisionStore(Protocol):
    """Persisted placement decisions, their state history, and replay runs."""

    grace_s: float

    def planning(self, cluster: str) -> AbstractContextManager[PlanningSession]: ...

    def viewing(self, cluster: str) -> AbstractContextManager[PlanningSession]:
        """The reads of a planning block, in one snapshot, without taking its lock."""
        ...

    def reservations(
        self, cluster: str, now: datetime, *, epoch: datetime, slot_seconds: float
    ) -> tuple[Reservation, ...]: ...

    def get(self, decision_id: int) -> DecisionRecord: ...

    def history(self, where: HistoryFilter = HistoryFilter()) -> tuple[DecisionSummary, ...]: ...

    def transition(
        self,
        decision_id: int,
        state: DecisionState,
        at: datetime,
        detail: str = "",
        *,
        slurm_job_id: str | None = None,
        expected: DecisionState | None = None,
    ) -> Moved: ...

    def add_replay_run(self, run: NewReplayRun) -> ReplayRun: ...

    def replay_runs(self) -> tuple[ReplayRun, ...]: ...

    def close(self) -> None: ...
