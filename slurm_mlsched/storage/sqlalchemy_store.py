"""The SQLAlchemy implementation of :class:`~.interface.DecisionStore` (SQLite, PostgreSQL).

One session per call (or per ``planning`` block); rows are turned into frozen records
before the session closes. Serialization per cluster (contract point 3): SQLite starts
every transaction with ``BEGIN IMMEDIATE`` (:mod:`.database`), so the first statement of a
``planning`` block already holds the file's write lock; PostgreSQL locks the cluster's row
of ``cluster_locks`` with ``SELECT … FOR UPDATE`` (inserting it first if needed).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, selectinload

from ..errors import InvalidTransitionError, NotFoundError, StoreError
from ..model import NodeCount, Reservation, Resources, Role
from . import codec
from .database import READ_ONLY_OPTION, db_errors
from .models import (
    ClusterLockRow,
    DecisionRow,
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
    TimedReservation,
    Transition,
    held,
    to_slots,
)
from .states import OPEN, DecisionState, can_move, reached


class SqlDecisionStore:
    """A decision store on one SQLAlchemy engine (see the interface's contract)."""

    def __init__(self, engine: Engine, url: str, *, grace_s: float) -> None:
        self._engine = engine
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
        session.execute(insert(ClusterLockRow).values(cluster=cluster).on_conflict_do_nothing())
        session.execute(
            select(ClusterLockRow).where(ClusterLockRow.cluster == cluster).with_for_update()
        )

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
        query = select(DecisionRow)
        if where.user is not None:
            query = query.where(DecisionRow.user == where.user)
        if where.since is not None:
            query = query.where(DecisionRow.created_at >= where.since)
        if where.state is not None:
            query = query.where(DecisionRow.state == where.state.value)
        if where.cluster is not None:
            query = query.where(DecisionRow.cluster == where.cluster)
        query = query.order_by(DecisionRow.id.desc())
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
            row.state, row.state_changed_at, row.state_detail = state.value, at, detail
            if slurm_job_id is not None:
                row.slurm_job_id = slurm_job_id
            session.add(TransitionRow(decision_id=row.id, state=state.value, at=at, detail=detail))
            session.flush()
            return Moved(_summary(row), True)

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

    def attach_script(self, decision_id: int, script: str) -> None:
        row = self._rows.get(decision_id)
        if row is None:
            raise ValueError(f"decision {decision_id} was not recorded in this planning block")
        row.script = script
        self._session.flush()

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
            v.state.in_([s.value for s in OPEN]),
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


def _new_row(new: NewDecision, cluster: str) -> DecisionRow:
    d, snap = new.decision, new.snapshot
    snapshot_json = codec.dumps(codec.encode_snapshot(snap))
    row = DecisionRow(
        cluster=cluster,
        created_at=new.created_at,
        user=new.user,
        host=new.host,
        job_id=new.request.job_id,
        job_name=new.request.name,
        policy=d.policy,
        form=d.form.value,
        mode=d.mode.value,
        seed=d.seed,
        params_json=codec.dumps(codec.encode_params(new.params)),
        request_json=codec.dumps(codec.encode_request(new.request)),
        snapshot_json=snapshot_json,
        snapshot_sha256=codec.digest(snapshot_json),
        decision_json=codec.dumps(codec.encode_decision(d)),
        placement_json=codec.dumps(_placement(d.placement)),
        solver=d.solver,
        solver_version=d.solver_version,
        packages_json=codec.dumps([[k, v] for k, v in new.packages]),
        lp_deadline_slot=d.lp_deadline,
        lp_value=d.lp_value,
        trials=d.trials,
        repair_actions_json=codec.dumps(list(d.repair_actions)),
        start_slot=d.start_slot,
        end_slot=d.end_slot,
        start_at=new.start,
        end_at=new.end,
        script=new.script,
        slurm_job_id=None,
        state=new.state.value,
        state_changed_at=new.created_at,
        state_detail="",
        submitter=new.submitter,
        slurm_user=new.slurm_user,
    )
    row.reservations = [
        ReservationRow(
            node=r.machine,
            start_at=snap.slot_start(r.start_slot),
            end_at=snap.slot_start(r.end_slot),
            gpu=r.usage.gpu,
            cpu=r.usage.cpu,
            mem=r.usage.mem,
        )
        for r in d.reservations(new.request)
    ]
    row.transitions = [TransitionRow(state=new.state.value, at=new.created_at, detail="")]
    return row


def _placement(rows: tuple[NodeCount, ...]) -> list[dict[str, Any]]:
    return [{"node": r.node, "role": r.role.value, "count": r.count} for r in rows]


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
        )
    except (codec.CodecError, ValueError) as exc:
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
