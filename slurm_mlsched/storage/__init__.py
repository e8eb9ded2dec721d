"""The decision store: persisted placement decisions, their history, and replay runs.

:class:`~.interface.DecisionStore` is the interface (its docstring is the contract);
:func:`open_store` gives the SQLAlchemy implementation for a database URL, creating a fresh
database at the newest schema and refusing an out-of-date one with the upgrade command.
Callers get frozen records (:mod:`.records`), never ORM rows.
"""

from __future__ import annotations

from .database import DEFAULT_UPGRADE_COMMAND, ensure_schema, make_engine
from .interface import DecisionStore, PlanningSession
from .records import (
    DecisionRecord,
    DecisionSummary,
    HistoryFilter,
    Moved,
    NewDecision,
    NewReplayRun,
    ReplayRun,
    ReportRow,
    Transition,
)
from .sqlalchemy_store import SqlDecisionStore
from .states import OPEN, TERMINAL, DecisionState


def open_store(
    url: str,
    *,
    grace_s: float,
    busy_timeout_s: float = 30.0,
    upgrade_command: str = DEFAULT_UPGRADE_COMMAND,
) -> SqlDecisionStore:
    """Open (creating if empty) the decision store at ``url``; see :mod:`.database`."""
    engine = make_engine(url, busy_timeout_s=busy_timeout_s)
    try:
        ensure_schema(engine, url, upgrade_command)
    except BaseException:
        engine.dispose()
        raise
    return SqlDecisionStore(engine, url, grace_s=grace_s, busy_timeout_s=busy_timeout_s)


__all__ = [
    "OPEN",
    "TERMINAL",
    "DecisionRecord",
    "DecisionState",
    "DecisionStore",
    "DecisionSummary",
    "HistoryFilter",
    "Moved",
    "NewDecision",
    "NewReplayRun",
    "PlanningSession",
    "ReplayRun",
    "ReportRow",
    "SqlDecisionStore",
    "Transition",
    "open_store",
]
