"""SQLAlchemy 2.0 typed models of the decision store (the schema at Alembic head).

Only :mod:`.sqlalchemy_store` uses these classes; everything outside the storage package
sees the frozen snapshots of :mod:`.records`. JSON columns hold canonical JSON text written
by :mod:`.codec` (exact floats, a stable digest, the same bytes on every backend).
Times are stored as naive UTC and read back as aware UTC (:class:`UTCDateTime`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import (
    BigInteger,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    TypeDecorator,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class UTCDateTime(TypeDecorator[datetime]):
    """An aware UTC datetime, stored naive (SQLite keeps no zone)."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime given to the store: {value!r}")
        return value.astimezone(UTC).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        return None if value is None else value.replace(tzinfo=UTC)


class Base(DeclarativeBase):
    pass


class DecisionRow(Base):
    __tablename__ = "decisions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cluster: Mapped[str] = mapped_column(String(200), index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    user: Mapped[str] = mapped_column(String(200), index=True)
    host: Mapped[str] = mapped_column(String(255))
    job_id: Mapped[str] = mapped_column(String(255))
    job_name: Mapped[str] = mapped_column(String(255))
    policy: Mapped[str] = mapped_column(String(100))
    form: Mapped[str] = mapped_column(String(20))
    mode: Mapped[str] = mapped_column(String(20))
    seed: Mapped[int] = mapped_column(BigInteger)
    params_json: Mapped[str] = mapped_column(Text)
    request_json: Mapped[str] = mapped_column(Text)
    snapshot_json: Mapped[str] = mapped_column(Text)
    snapshot_sha256: Mapped[str] = mapped_column(String(64))
    decision_json: Mapped[str] = mapped_column(Text)
    placement_json: Mapped[str] = mapped_column(Text)
    solver: Mapped[str] = mapped_column(String(100))
    solver_version: Mapped[str] = mapped_column(String(100))
    packages_json: Mapped[str] = mapped_column(Text)
    lp_deadline_slot: Mapped[int | None] = mapped_column(Integer)
    lp_value: Mapped[float | None] = mapped_column(Float)
    trials: Mapped[int] = mapped_column(Integer)
    repair_actions_json: Mapped[str] = mapped_column(Text)
    start_slot: Mapped[int] = mapped_column(Integer)
    end_slot: Mapped[int] = mapped_column(Integer)
    start_at: Mapped[datetime] = mapped_column(UTCDateTime())
    end_at: Mapped[datetime] = mapped_column(UTCDateTime())
    script: Mapped[str | None] = mapped_column(Text)
    slurm_job_id: Mapped[str | None] = mapped_column(String(64))
    state: Mapped[str] = mapped_column(String(20))
    state_changed_at: Mapped[datetime] = mapped_column(UTCDateTime())
    state_detail: Mapped[str] = mapped_column(Text)
    submitter: Mapped[str | None] = mapped_column(String(100))  # revision 0003
    slurm_user: Mapped[str | None] = mapped_column(String(200))  # revision 0003
    launch_json: Mapped[str | None] = mapped_column(Text)  # revision 0005
    earlier_job_ids_json: Mapped[str | None] = mapped_column(Text)  # revision 0005
    resumed_request_json: Mapped[str | None] = mapped_column(Text)  # revision 0007

    reservations: Mapped[list[ReservationRow]] = relationship(
        back_populates="decision", order_by="ReservationRow.id"
    )
    transitions: Mapped[list[TransitionRow]] = relationship(
        back_populates="decision", order_by="TransitionRow.id"
    )

    __table_args__ = (Index("ix_decisions_cluster_state_end", "cluster", "state", "end_at"),)


class ReservationRow(Base):
    """A decision's usage of one node over [start_at, end_at) in wall time."""

    __tablename__ = "decision_reservations"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    decision_id: Mapped[int] = mapped_column(ForeignKey("decisions.id"), index=True)
    node: Mapped[str] = mapped_column(String(255))
    start_at: Mapped[datetime] = mapped_column(UTCDateTime())
    end_at: Mapped[datetime] = mapped_column(UTCDateTime())
    gpu: Mapped[float] = mapped_column(Float)
    cpu: Mapped[float] = mapped_column(Float)
    mem: Mapped[float] = mapped_column(Float)

    decision: Mapped[DecisionRow] = relationship(back_populates="reservations")


class TransitionRow(Base):
    """Append-only state history (revision 0002)."""

    __tablename__ = "decision_transitions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    decision_id: Mapped[int] = mapped_column(ForeignKey("decisions.id"), index=True)
    state: Mapped[str] = mapped_column(String(20))
    at: Mapped[datetime] = mapped_column(UTCDateTime())
    detail: Mapped[str] = mapped_column(Text)

    decision: Mapped[DecisionRow] = relationship(back_populates="transitions")


class ProfileFitRow(Base):
    """A fitted speed factor of one model on one cluster (revision 0006; append-only)."""

    __tablename__ = "profile_fits"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    cluster: Mapped[str] = mapped_column(String(200))
    model: Mapped[str] = mapped_column(String(200))
    scope: Mapped[str] = mapped_column(String(200), server_default="")
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    created_by: Mapped[str] = mapped_column(String(200))
    factor: Mapped[float] = mapped_column(Float)
    samples: Mapped[int] = mapped_column(Integer)
    error_before: Mapped[float | None] = mapped_column(Float)
    error_after: Mapped[float | None] = mapped_column(Float)

    __table_args__ = (Index("ix_profile_fits_cluster_model", "cluster", "model"),)


class ClusterLockRow(Base):
    """One row per cluster name: locked ``FOR UPDATE`` while a decision is taken."""

    __tablename__ = "cluster_locks"

    cluster: Mapped[str] = mapped_column(String(200), primary_key=True)


class ReplayRunRow(Base):
    __tablename__ = "replay_runs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime())
    user: Mapped[str] = mapped_column(String(200))
    trace: Mapped[str] = mapped_column(Text)
    config_json: Mapped[str] = mapped_column(Text)

    results: Mapped[list[ReplayResultRow]] = relationship(
        back_populates="run", order_by="ReplayResultRow.policy"
    )


class ReplayResultRow(Base):
    __tablename__ = "replay_results"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    run_id: Mapped[int] = mapped_column(ForeignKey("replay_runs.id"), index=True)
    policy: Mapped[str] = mapped_column(String(100))
    metrics_json: Mapped[str] = mapped_column(Text)

    run: Mapped[ReplayRunRow] = relationship(back_populates="results")


# --- views (revision 0004): what planning reads of every user's open decisions ------------------
# Outside Base.metadata: Alembic compares tables, and these are views.

views = MetaData()

#: The summary columns of decisions in an open state.
open_decisions = Table(
    "open_decisions",
    views,
    Column("id", Integer, primary_key=True),
    Column("cluster", String(200)),
    Column("created_at", UTCDateTime()),
    Column("user", String(200)),
    Column("host", String(255)),
    Column("job_id", String(255)),
    Column("job_name", String(255)),
    Column("policy", String(100)),
    Column("form", String(20)),
    Column("mode", String(20)),
    Column("state", String(20)),
    Column("start_at", UTCDateTime()),
    Column("end_at", UTCDateTime()),
    Column("start_slot", Integer),
    Column("end_slot", Integer),
    Column("placement_json", Text),
    Column("slurm_job_id", String(64)),
    Column("submitter", String(100)),
    Column("slurm_user", String(200)),
)

#: The per-node reservations of decisions in an open state.
open_reservations = Table(
    "open_reservations",
    views,
    Column("id", Integer, primary_key=True),
    Column("decision_id", Integer),
    Column("cluster", String(200)),
    Column("state", String(20)),
    Column("decision_end_at", UTCDateTime()),
    Column("node", String(255)),
    Column("start_at", UTCDateTime()),
    Column("end_at", UTCDateTime()),
    Column("gpu", Float),
    Column("cpu", Float),
    Column("mem", Float),
)
