"""Store faults: every wait bounded, every failure a StoreError (exit 7) whose hint names
its cause (issue 15 item 3)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from slurm_mlsched.errors import StoreError
from slurm_mlsched.storage import DecisionState, open_store
from slurm_mlsched.storage.database import PG_CONNECT_TIMEOUT_S, store_hint
from tests.reliability_checks import silent_server
from tests.storage.helpers import NOW


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP server that accepts connections and never says a word."""
    pytest.importorskip("psycopg", reason="psycopg is not installed")
    with silent_server() as port:
        yield port


def test_a_silent_postgresql_server_fails_once_within_the_connect_timeout(
    silent_port: int,
) -> None:
    url = f"postgresql+psycopg://mlsub:S3cretPW@127.0.0.1:{silent_port}/mlsub"
    began = time.monotonic()
    with pytest.raises(StoreError) as err:
        open_store(url, grace_s=0)
    took = time.monotonic() - began
    assert took < PG_CONNECT_TIMEOUT_S + 2, f"waited {took:.1f} s (connected twice?)"
    assert err.value.exit_code == 7
    assert err.value.context["cause"] == "unreachable", err.value
    assert "S3cretPW" not in str(err.value) + err.value.hint


def test_a_held_sqlite_lock_fails_after_one_busy_timeout_with_the_locked_hint(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'd.db'}"
    open_store(url, grace_s=0).close()
    holder = sqlite3.connect(tmp_path / "d.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    began = time.monotonic()
    try:
        with pytest.raises(StoreError) as err:
            store = open_store(url, grace_s=0, busy_timeout_s=1.0)
            try:
                with store.planning("c1"):
                    pass
            finally:
                store.close()
        took = time.monotonic() - began
    finally:
        holder.rollback()
        holder.close()
    assert 0.9 < took < 2.5, f"waited {took:.1f} s for a 1 s busy timeout"
    assert err.value.context["cause"] == "locked"
    assert "MLSUB_DB_BUSY_TIMEOUT_S" in err.value.hint


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        ("database is locked", "locked"),
        ("canceling statement due to lock timeout", "locked"),
        ("attempt to write a readonly database", "read-only"),
        ("database disk image is malformed", "corrupt"),
        ("file is not a database", "corrupt"),
        ("database or disk is full", "full"),
        ("canceling statement due to statement timeout", "timeout"),
        ("connection timeout expired", "unreachable"),
        ('connection failed: FATAL:  database "x" does not exist', "unreachable"),
        ("unable to open database file", "unreachable"),
        ("something else entirely", "other"),
    ],
)
def test_each_store_failure_has_its_own_hint(message: str, cause: str) -> None:
    got, hint = store_hint(message)
    assert got == cause and hint
    others = {store_hint(m)[1] for m, c in [("database is locked", "locked")] if c != cause}
    assert hint not in others


def _stored_decision(url: str) -> int:
    from tests.storage.helpers import new_decision

    store = open_store(url, grace_s=0)
    try:
        with store.planning("c1") as tx:
            return tx.record(new_decision()).decision_id
    finally:
        store.close()


def test_reads_take_no_write_lock(tmp_path: Path) -> None:
    """history/show/cluster read while a planner holds the lock (measured before: read-only
    commands began BEGIN IMMEDIATE and waited behind writers)."""
    url = f"sqlite:///{tmp_path / 'd.db'}"
    did = _stored_decision(url)
    holder = sqlite3.connect(tmp_path / "d.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        store = open_store(url, grace_s=0, busy_timeout_s=0.5)
        try:
            assert [s.decision_id for s in store.history()] == [did]
            assert store.get(did).decision_id == did
            with store.viewing("c1") as tx:
                assert [s.decision_id for s in tx.summaries([did])] == [did]
            with pytest.raises(StoreError) as err, store.planning("c1"):
                pass
            assert err.value.context["cause"] == "locked"
        finally:
            store.close()
    finally:
        holder.rollback()
        holder.close()


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_read_only_store_can_be_read_and_refuses_writes_clearly(
    tmp_path: Path, what: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store this process cannot write (measured before: `history` exit 7 on a read-only
    mount, WAL needing -shm/-wal). Root writes through any mode bit, so what the process
    may write is told by os.access, patched here; SQLite's own read-only open is real."""
    import os

    from slurm_mlsched.storage import database

    url = f"sqlite:///{tmp_path / 'd.db'}"
    did = _stored_decision(url)
    denied = {tmp_path / "d.db"} | ({tmp_path} if what == "directory" else set())
    real = os.access
    monkeypatch.setattr(
        database.os,
        "access",
        lambda p, mode: False if mode == os.W_OK and Path(p) in denied else real(p, mode),
    )
    store = open_store(url, grace_s=0)
    try:
        assert [s.decision_id for s in store.history()] == [did]
        assert store.get(did).decision_id == did
        with store.viewing("c1") as tx:
            assert [s.decision_id for s in tx.summaries([did])] == [did]
        with pytest.raises(StoreError) as err:
            store.transition(did, DecisionState.RELEASED, NOW)
        assert err.value.context["cause"] == "read-only", err.value
    finally:
        store.close()
