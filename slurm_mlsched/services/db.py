"""The ``db`` use cases: the schema revision of the decision store, and upgrading it."""

from __future__ import annotations

from typing import Any

from ..storage.database import (
    current_revision,
    db_errors,
    display_url,
    head_revision,
    make_engine,
    upgrade,
)


def db_current(url: str, *, busy_timeout_s: float = 30.0) -> dict[str, Any]:
    """The database's revision and this mlsub's head (``current`` is null when empty)."""
    engine = make_engine(url, busy_timeout_s=busy_timeout_s)
    try:
        with db_errors(url), engine.connect() as conn:
            current = current_revision(conn)
    finally:
        engine.dispose()
    head = head_revision()
    return {
        "url": display_url(url),
        "current": current,
        "head": head,
        "up_to_date": current == head,
    }


def db_upgrade(url: str, *, busy_timeout_s: float = 30.0) -> dict[str, Any]:
    """Upgrade the database to head (creating it if empty)."""
    engine = make_engine(url, busy_timeout_s=busy_timeout_s)
    try:
        before, after = upgrade(engine, url)
    finally:
        engine.dispose()
    return {"url": display_url(url), "before": before, "after": after, "head": head_revision()}
