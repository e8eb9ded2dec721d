"""The ``db`` use cases: the schema revision of the decision store, and upgrading it."""

from __future__ import annotations

from ..storage.database import (
    current_revision,
    db_errors,
    display_url,
    head_revision,
    make_engine,
    upgrade,
)
from .decision_views import SchemaState, SchemaUpgrade


def db_current(url: str, *, busy_timeout_s: float = 30.0) -> SchemaState:
    """The database's revision and this mlsub's head (``current`` is null when empty)."""
    engine = make_engine(url, busy_timeout_s=busy_timeout_s)
    try:
        with db_errors(url), engine.connect() as conn:
            current = current_revision(conn)
    finally:
        engine.dispose()
    return SchemaState(display_url(url), current, head_revision())


def db_upgrade(url: str, *, busy_timeout_s: float = 30.0) -> SchemaUpgrade:
    """Upgrade the database to head (creating it if empty)."""
    engine = make_engine(url, busy_timeout_s=busy_timeout_s)
    try:
        before, after = upgrade(engine, url)
    finally:
        engine.dispose()
    return SchemaUpgrade(display_url(url), before, after, head_revision())
