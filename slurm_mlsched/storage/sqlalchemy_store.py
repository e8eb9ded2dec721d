"""The SQLAlchemy implementation of :class:`~.interface.DecisionStore` (SQLite, PostgreSQL).

One session per call (or per ``planning`` block); rows are turned into frozen records
before the session closes. Serialization per cluster (contract point 3): SQLite starts
every transaction with ``BEGIN IMMEDIATE`` (:mod:`.database`), so the first statement of a
``planning`` block already holds the file's write lock; PostgreSQL locks the cluster's row
of ``cluster_locks`` with ``SELECT … FOR UPDATE`` (inserting it first if needed). Either
waits in line: as long as the lock changes hands (:mod:`.database`, "Waiting in line").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, TypeVar

from sqlalchemy import Engine, Select, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, selectinload

from ..errors import InvalidTransitionError, NotFoundError, StoreError
from ..model import ClusterSnapshot, Decision, JobRequest, NodeCount, Reservation, Resources, Role
from ..model.calibration import FitRow, ProfileFit
from ..model.decision import placement_json
from ..sbatch.launch import Launch
from . import codec
from .database import READ_ONLY_OPTION, db_errors, lock_in_line
from .models import (
    ClusterLockRow,
    DecisionRow,
    ProfileFitRow,
    ReplayResultRow,
    ReplayRunRow,
    ReservationRow,
    TransitionRow,
    open_decisions,
    open_reservations,
)
from .records import (
    DecisionRecord,
    DecisionSummary,
    HistoryFilter,
    Moved,
    NewDecision,
    NewReplayRun,
    ReplayRun,
    ReportRow,
    TimedReservation,
    Transition,
    held,
    to_slots,
)
from .states import RESERVING, DecisionState, can_move, reached


class SqlDecisionStore:
    """A decision store on one SQLAlchemy engine (see the interface's contract)."""

    def __init__(self, engine: Engine, url: str, *, grace_s: float, busy_timeout_s: float) -> None:
        self._engine = engine
        self._busy_timeout_s = busy_timeout_s
        self._reader = engine.execution_options(**{READ_ONLY_OPTION: True})
        self._url = url
        self.grace_s = grace_s

    # --- planning -------------------------------------------------------------------------

    @contextmanager
    def planning(self, cluster: str) -> Iterator[SqlPlanningSession]:
        with db_errors(self._url), Session(self._engine) as session, session.begin():
            self._lock(session, cluster)
            yield SqlPlanningSession(session, cluster, self.grace_s)

    @contextmanager
    def viewing(self, cluster: str) -> Iterator[SqlPlanningSession]:
        """A planning block's reads without its lock (``mlsub cluster``): one consistent
        snapshot of the store that neither waits for a planner nor makes one wait, and that
        works on a read-only store. Recording in it is a programming error."""
        with db_errors(self._url), Session(self._reader) as session, session.begin():
            yield SqlPlanningSession(session, cluster, self.grace_s)

    def _lock(self, session: Session, cluster: str) -> None:
        dialect = session.get_bind().dialect.name
        insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
        lock = (
            insert(ClusterLockRow).values(cluster=cluster).on_conflict_do_nothing(),
            select(ClusterLockRow).where(ClusterLockRow.cluster == cluster).with_for_update(),
        )
        if dialect != "postgresql":  # SQLite: BEGIN IMMEDIATE already waited for the file
            for statement in lock:
                session.execute(statement)
            return
        holder = text("SELECT xmax::text FROM cluster_locks WHERE cluster = :c").bindparams(
            c=cluster
        )
        lock_in_line(session, lock, holder, self._url, self._busy_timeout_s)

    def reservations(
        self, cluster: str, now: datetime, *, epoch: datetime, slot_seconds: float
    ) -> tuple[Reservation, ...]:
        with db_errors(self._url), Session(self._reader) as session:
            return _reservations(session, cluster, now, self.grace_s, epoch, slot_seconds)

    # --- reading ----------------------------------------------------------------------------

    def get(self, decision_id: int) -> DecisionRecord:
        with db_errors(self._url), Session(self._reader) as session:
            row = session.get(
                DecisionRow, decision_id, options=[selectinload(DecisionRow.transitions)]
            )
            if row is None:
                raise NotFoundError(
                    f"no decision {decision_id}",
                    hint="list decisions with: mlsub history",
                    context={"decision_id": decision_id},
                )
            return _record(row)

    def history(self, where: HistoryFilter = HistoryFilter()) -> tuple[DecisionSummary, ...]:
        query = _filtered(select(DecisionRow), where).order_by(DecisionRow.id.desc())
        if where.limit is not None:
            query = query.limit(where.limit)
        with db_errors(self._url), Session(self._reader) as session:
            rows = session.scalars(query).all()
            return tuple(_summary(row) for row in reversed(rows))

    # --- writing ------------------------------------------------------------------------------

    def transition(
        self,
        decision_id: int,
        state: DecisionState,
        at: datetime,
        detail: str = "",
        *,
        slurm_job_id: str | None = None,
        expected: DecisionState | None = None,
    ) -> Moved:
        with db_errors(self._url), Session(self._engine) as session, session.begin():
            row = session.get(DecisionRow, decision_id, with_for_update=True)
            if row is None:
                raise NotFoundError(f"no decision {decision_id}", context={"id": decision_id})
            current = DecisionState(row.state)
            if expected is not None and current != expected and not reached(current, state):
                return Moved(_summary(row), False, "changed")
            if reached(current, state):
                if slurm_job_id is not None and row.slurm_job_id is None:
                    row.slurm_job_id = slurm_job_id
                    session.flush()
                return Moved(_summary(row), False, "reached")
            if not can_move(current, state):
                raise InvalidTransitionError(
                    f"decision {decision_id} is {current}; it cannot become {state}",
                    hint=f"see its history: mlsub show {decision_id}",
                    context={"decision_id": decision_id, "state": str(current)},
                )
            _leave_preempting(row, current, state)
            row.state, row.state_changed_at, row.state_detail = state.value, at, detail
            if slurm_job_id is not None:
                if row.slurm_job_id is not None and row.slurm_job_id != slurm_job_id:
                    earlier = codec.loads(row.earlier_job_ids_json or "[]")
                    row.earlier_job_ids_json = codec.dumps([*earlier, row.slurm_job_id])
                row.slurm_job_id = slurm_job_id
            session.add(TransitionRow(decision_id=row.id, state=state.value, at=at, detail=detail))
            session.flush()
            return Moved(_summary(row), True)

    def add_profile_fits(
        self,
        cluster: str,
        fits: Sequence[FitRow],
        *,
        at: datetime,
        by: str,
    ) -> tuple[ProfileFit, ...]:
        """Record fits ``(model, scope, factor, samples, error_before, error_after)`` in
        one transaction; each row's id is its version."""
        with db_errors(self._url), Session(self._engine) as session, session.begin():
            rows = [
                ProfileFitRow(
                    cluster=cluster,
                    model=model,
                    scope=scope,
                    created_at=at,
                    created_by=by,
                    factor=factor,
                    samples=samples,
                    error_before=before,
                    error_after=after,
                )
                for model, scope, factor, samples, before, after in fits
            ]
            session.add_all(rows)
            session.flush()
            return tuple(_fit(r) for r in rows)

    def profile_fits(self, cluster: str) -> dict[str, ProfileFit]:
        with db_errors(self._url), Session(self._reader) as session:
            return _profile_fits(session, cluster)

    def report_rows(self, where: HistoryFilter) -> tuple[ReportRow, ...]:
        """What ``mlsub report`` draws of each decision matching ``where``: its summary,
        plan, request and the times of its state changes, in three queries (no ORM
        objects per row: 100,000 decisions read in seconds)."""
        d = DecisionRow
        query = select(
            d.id, d.cluster, d.created_at, d.user, d.host, d.job_id, d.job_name, d.policy,
            d.form, d.mode, d.state, d.start_at, d.end_at, d.start_slot, d.end_slot,
            d.placement_json, d.slurm_job_id, d.submitter, d.slurm_user, d.decision_json,
            d.request_json, d.earlier_job_ids_json, d.solver, d.trials, d.lp_value,
        )  # fmt: skip
        query = _filtered(query, where).order_by(d.id)
        with db_errors(self._url), Session(self._reader) as session:
            rows = list(session.execute(query))
            times: dict[int, list[tuple[str, datetime]]] = defaultdict(list)
            ids = [r.id for r in rows]
            for chunk in range(0, len(ids), 20000):
                part = ids[chunk : chunk + 20000]
                t = TransitionRow
                found = session.execute(
                    select(t.decision_id, t.state, t.at)
                    .where(t.decision_id.in_(part))
                    .order_by(t.decision_id, t.id)
                )
                for decision_id, state, at in found:
                    times[decision_id].append((state, at))
        return tuple(
            ReportRow(
                summary=_summary(r),
                decision_json=r.decision_json,
                request_json=r.request_json,
                earlier_job_ids=tuple(codec.loads(r.earlier_job_ids_json or "[]")),
                solver=r.solver,
                trials=r.trials,
                lp_value=r.lp_value,
                transitions=tuple(times.get(r.id, ())),
            )
            for r in rows
        )

    def add_replay_run(self, run: NewReplayRun) -> ReplayRun:
        with db_errors(self._url), Session(self._engine) as session, session.begin():
            row = ReplayRunRow(
                created_at=run.created_at,
                user=run.user,
                trace=run.trace,
                config_json=codec.dumps(dict(run.config)),
            )
            row.results = [
                ReplayResultRow(policy=policy, metrics_json=codec.dumps(dict(metrics)))
                for policy, metrics in sorted(run.results.items())
            ]
            session.add(row)
            session.flush()
            return _replay(row)

    def replay_runs(self) -> tuple[ReplayRun, ...]:
        query = select(ReplayRunRow).options(selectinload(ReplayRunRow.results))
        with db_errors(self._url), Session(self._reader) as session:
            return tuple(_replay(r) for r in session.scalars(query.order_by(ReplayRunRow.id)))

    def close(self) -> None:
        self._engine.dispose()


class SqlPlanningSession:
    """The inside of one ``planning`` block: reads and writes in the locked transaction."""

    def __init__(self, session: Session, cluster: str, grace_s: float) -> None:
        self._session = session
        self._cluster = cluster
        self._grace_s = grace_s
        self._rows: dict[int, DecisionRow] = {}

    def reservations(
        self, now: datetime, *, epoch: datetime, slot_seconds: float
    ) -> tuple[Reservation, ...]:
        return _reservations(self._session, self._cluster, now, self._grace_s, epoch, slot_seconds)

    def record(self, new: NewDecision) -> DecisionRecord:
        if new.state not in (DecisionState.PLANNED, DecisionState.SUBMITTING):
            raise ValueError(f"a new decision starts planned or submitting, not {new.state}")
        row = _new_row(new, self._cluster)
        self._session.add(row)
        self._session.flush()
        self._rows[row.id] = row
        return _record(row)

    def attach_script(self, decision_id: int, script: str, launch: Launch | None = None) -> None:
        row = self._rows.get(decision_id)
        if row is None:
            raise ValueError(f"decision {decision_id} was not recorded in this planning block")
        row.script = script
        if launch is not None:
            row.launch_json = codec.dumps(launch.to_json())
        self._session.flush()

    def profile_fits(self) -> dict[str, ProfileFit]:
        return _profile_fits(self._session, self._cluster)

    def queued(self) -> tuple[DecisionRecord, ...]:
        query = (
            select(DecisionRow)
            .where(
                DecisionRow.cluster == self._cluster,
                DecisionRow.state == DecisionState.QUEUED.value,
            )
            .options(selectinload(DecisionRow.transitions))
            .order_by(DecisionRow.id)
        )
        return tuple(_record(row) for row in self._session.scalars(query))

    def set_tentative(
        self,
        decision_id: int,
        *,
        request: JobRequest,
        snapshot: ClusterSnapshot,
        decision: Decision,
    ) -> None:
        row = self._session.get(DecisionRow, decision_id, with_for_update=True)
        if row is None or row.state != DecisionState.QUEUED.value:
            return  # moved on meanwhile: nothing to keep
        _set_plan(row, request, snapshot, decision)
        self._session.flush()

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
        row = self._session.get(DecisionRow, decision_id, with_for_update=True)
        if row is None or row.cluster != self._cluster:
            raise NotFoundError(f"no decision {decision_id} on this cluster")
        if row.state != DecisionState.QUEUED.value:
            raise InvalidTransitionError(
                f"decision {decision_id} is {row.state}; only a queued one is started",
                context={"decision_id": decision_id, "state": row.state},
            )
        _set_plan(row, request, snapshot, decision)
        row.script = script
        if process is not None:
            row.submitter = process
        for old in row.reservations:  # an earlier layout (never deleted: history) holds
            old.end_at = old.start_at  # nothing from now on
        row.reservations.extend(_reservation_rows(request, snapshot, decision))
        row.state, row.state_changed_at, row.state_detail = DecisionState.STARTING.value, at, detail
        row.transitions.append(TransitionRow(state=row.state, at=at, detail=detail))
        self._session.flush()
        return _record(row)

    def preempt(
        self,
        decision_id: int,
        *,
        resumed: JobRequest,
        at: datetime,
        detail: str,
        process: str | None = None,
    ) -> DecisionRecord:
        row = self._session.get(DecisionRow, decision_id, with_for_update=True)
        if row is None or row.cluster != self._cluster:
            raise NotFoundError(f"no decision {decision_id} on this cluster")
        current = DecisionState(row.state)
        if not can_move(current, DecisionState.PREEMPTING):
            raise InvalidTransitionError(
                f"decision {decision_id} is {row.state}; only a submitted or running one is "
                "preempted",
                context={"decision_id": decision_id, "state": row.state},
            )
        row.resumed_request_json = codec.dumps(codec.encode_request(resumed))
        if process is not None:
            row.submitter = process
        row.state, row.state_changed_at = DecisionState.PREEMPTING.value, at
        row.state_detail = detail
        row.transitions.append(TransitionRow(state=row.state, at=at, detail=detail))
        self._session.flush()
        return _record(row)

    def summaries(self, decision_ids: Collection[int]) -> tuple[DecisionSummary, ...]:
        if not decision_ids:
            return ()
        # through the view: on PostgreSQL with row-level security a user must still see
        # the other users' open decisions whose jobs run on the nodes (migration 0004)
        v = open_decisions.c
        query = (
            select(open_decisions)
            .where(v.cluster == self._cluster, v.id.in_(sorted(decision_ids)))
            .order_by(v.id)
        )
        return tuple(_summary(row) for row in self._session.execute(query))


# --- rows <-> records --------------------------------------------------------------------------


def _reservations(
    session: Session,
    cluster: str,
    now: datetime,
    grace_s: float,
    epoch: datetime,
    slot_seconds: float,
) -> tuple[Reservation, ...]:
    # every user's open reservations, through the view (migration 0004): on PostgreSQL
    # with row-level security the tables show a user only their own decisions
    v = open_reservations.c
    query = (
        select(open_reservations)
        .where(
            v.cluster == cluster,
            v.state.in_([s.value for s in RESERVING]),
            v.decision_end_at > now - timedelta(seconds=grace_s),
        )
        .order_by(v.decision_id, v.id)
    )
    by_decision: dict[int, list[TimedReservation]] = defaultdict(list)
    ends: dict[int, datetime] = {}
    for r in session.execute(query):
        decision_id = r.decision_id
        ends[decision_id] = r.decision_end_at
        usage = Resources(r.gpu, r.cpu, r.mem)
        by_decision[decision_id].append(
            TimedReservation(decision_id, r.node, r.start_at, r.end_at, usage)
        )
    out: list[Reservation] = []
    for decision_id, rows in by_decision.items():
        for timed in held(tuple(rows), ends[decision_id], now, grace_s):
            out.append(to_slots(timed, epoch, slot_seconds))
    return tuple(out)


def _leave_preempting(row: DecisionRow, current: DecisionState, state: DecisionState) -> None:
    """A ``preempting`` decision that becomes ``queued`` waits with its resumed request
    (the work left + the restart charge); one that runs on or ends keeps its request."""
    if current != DecisionState.PREEMPTING:
        return
    if state == DecisionState.QUEUED and row.resumed_request_json is not None:
        row.request_json = row.resumed_request_json
    row.resumed_request_json = None


def _set_plan(row: DecisionRow, request: JobRequest, snap: ClusterSnapshot, d: Decision) -> None:
    """The columns that hold one plan of the decision (its first, or a re-plan's)."""
    snapshot_json = codec.dumps(codec.encode_snapshot(snap))
    row.job_id, row.job_name = request.job_id, request.name
    row.policy, row.form, row.mode, row.seed = d.policy, d.form.value, d.mode.value, d.seed
    row.request_json = codec.dumps(codec.encode_request(request))
    row.snapshot_json = snapshot_json
    row.snapshot_sha256 = codec.digest(snapshot_json)
    row.decision_json = codec.dumps(codec.encode_decision(d))
    row.placement_json = codec.dumps(placement_json(d.placement))
    row.solver, row.solver_version = d.solver, d.solver_version
    row.lp_deadline_slot, row.lp_value, row.trials = d.lp_deadline, d.lp_value, d.trials
    row.repair_actions_json = codec.dumps(list(d.repair_actions))
    row.start_slot, row.end_slot = d.start_slot, d.end_slot
    row.start_at = snap.slot_start(d.start_slot)
    row.end_at = snap.slot_start(d.end_slot + 1)


def _reservation_rows(
    request: JobRequest, snap: ClusterSnapshot, d: Decision
) -> list[ReservationRow]:
    return [
        ReservationRow(
            node=r.machine,
            start_at=snap.slot_start(r.start_slot),
            end_at=snap.slot_start(r.end_slot),
            gpu=r.usage.gpu,
            cpu=r.usage.cpu,
            mem=r.usage.mem,
        )
        for r in d.reservations(request)
    ]


_Q = TypeVar("_Q", bound=Select)  # type: ignore[type-arg]  # any select of decisions


def _filtered(query: _Q, where: HistoryFilter) -> _Q:
    """``query`` on decisions restricted by every field ``where`` sets (not its limit)."""
    d = DecisionRow
    if where.user is not None:
        query = query.where(d.user == where.user)
    if where.since is not None:
        query = query.where(d.created_at >= where.since)
    if where.until is not None:
        query = query.where(d.created_at < where.until)
    if where.state is not None:
        query = query.where(d.state == where.state.value)
    if where.cluster is not None:
        query = query.where(d.cluster == where.cluster)
    return query


def _profile_fits(session: Session, cluster: str) -> dict[str, ProfileFit]:
    """The fit in force per model and scope (``fit_key``): the newest row of each (a reset
    has factor 1)."""
    query = select(ProfileFitRow).where(ProfileFitRow.cluster == cluster)
    out: dict[str, ProfileFit] = {}
    for row in session.scalars(query.order_by(ProfileFitRow.id)):
        fit = _fit(row)
        out[fit.key] = fit
    return out


def _fit(row: ProfileFitRow) -> ProfileFit:
    return ProfileFit(
        version=row.id,
        cluster=row.cluster,
        model=row.model,
        factor=row.factor,
        samples=row.samples,
        error_before=row.error_before,
        error_after=row.error_after,
        scope=row.scope or "",
    )


def _new_row(new: NewDecision, cluster: str) -> DecisionRow:
    row = DecisionRow(
        cluster=cluster,
        created_at=new.created_at,
        user=new.user,
        host=new.host,
        params_json=codec.dumps(codec.encode_params(new.params)),
        packages_json=codec.dumps([[k, v] for k, v in new.packages]),
        launch_json=None if new.launch is None else codec.dumps(new.launch.to_json()),
        script=new.script,
        slurm_job_id=None,
        state=new.state.value,
        state_changed_at=new.created_at,
        state_detail="",
        submitter=new.submitter,
        slurm_user=new.slurm_user,
    )
    _set_plan(row, new.request, new.snapshot, new.decision)
    row.reservations = (
        _reservation_rows(new.request, new.snapshot, new.decision) if new.holds else []
    )
    row.transitions = [TransitionRow(state=new.state.value, at=new.created_at, detail="")]
    return row


def _summary(row: Any) -> DecisionSummary:
    """From a ``DecisionRow`` or a row of the ``open_decisions`` view (same names)."""
    placement = tuple(
        NodeCount(p["node"], Role(p["role"]), p["count"]) for p in codec.loads(row.placement_json)
    )
    return DecisionSummary(
        decision_id=row.id,
        cluster=row.cluster,
        created_at=row.created_at,
        user=row.user,
        host=row.host,
        job_id=row.job_id,
        job_name=row.job_name,
        policy=row.policy,
        form=row.form,
        mode=row.mode,
        state=DecisionState(row.state),
        start=row.start_at,
        end=row.end_at,
        start_slot=row.start_slot,
        end_slot=row.end_slot,
        placement=placement,
        slurm_job_id=row.slurm_job_id,
        submitter=row.submitter,
        slurm_user=row.slurm_user,
    )


def _record(row: DecisionRow) -> DecisionRecord:
    try:
        return DecisionRecord(
            summary=_summary(row),
            request=codec.decode_request(codec.loads(row.request_json)),
            snapshot=codec.decode_snapshot(codec.loads(row.snapshot_json)),
            snapshot_sha256=row.snapshot_sha256,
            params=codec.decode_params(codec.loads(row.params_json)),
            decision=codec.decode_decision(codec.loads(row.decision_json)),
            seed=row.seed,
            packages=tuple((str(k), str(v)) for k, v in codec.loads(row.packages_json)),
            script=row.script,
            transitions=tuple(
                Transition(DecisionState(t.state), t.at, t.detail) for t in row.transitions
            ),
            launch=None
            if row.launch_json is None
            else Launch.from_json(codec.loads(row.launch_json)),
            earlier_job_ids=tuple(str(j) for j in codec.loads(row.earlier_job_ids_json or "[]")),
            resumed_request=None
            if row.resumed_request_json is None
            else codec.decode_request(codec.loads(row.resumed_request_json)),
        )
    except (codec.CodecError, ValueError, KeyError, TypeError) as exc:
        raise StoreError(
            f"decision {row.id} is stored in a form this mlsub cannot read: {exc}",
            hint="the row may have been edited by hand; see: mlsub export --format json",
            context={"decision_id": row.id},
        ) from None


def _replay(row: ReplayRunRow) -> ReplayRun:
    return ReplayRun(
        run_id=row.id,
        created_at=row.created_at,
        user=row.user,
        trace=row.trace,
        config=codec.loads(row.config_json),
        results={r.policy: codec.loads(r.metrics_json) for r in row.results},
    )
