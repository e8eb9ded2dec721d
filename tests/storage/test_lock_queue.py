"""Waiting in line for the store's lock (storage/database.py, "Waiting in line").

A burst of planners queues for the one lock: a waiter goes on while the lock changes
hands, and fails (exit 7, cause ``locked``) only when one holder keeps it for
``db_busy_timeout_s``, or when the whole wait reaches ``QUEUE_WAIT_FACTOR`` times that.
Found by CI: one of sixteen concurrent ``mlsub`` submissions failed with "database is
locked" after the 30 s busy timeout while the other fifteen took their turns.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import pytest

from slurm_mlsched.errors import StoreError
from slurm_mlsched.storage import open_store
from slurm_mlsched.storage.database import QUEUE_WAIT_FACTOR, begin_immediate
from tests.storage.helpers import new_decision


def _plan_once(url: str, busy_timeout_s: float, hold_s: float = 0.0, job: str = "w") -> None:
    decision = new_decision(job)  # placed before the lock: the hold is hold_s and a commit
    store = open_store(url, grace_s=0, busy_timeout_s=busy_timeout_s)
    try:
        with store.planning("c1") as tx:
            tx.record(decision)
            time.sleep(hold_s)
    finally:
        store.close()


@contextmanager
def _holders(url: str, count: int, hold_s: float) -> Iterator[list[BaseException]]:
    """``count`` planners, each with its store open and its decision placed, asking for
    the lock 20 ms apart once the context is entered, each holding it ``hold_s`` (and
    recording the decision: the lock changes hands with a commit). The body runs once one
    of them holds the lock and the others have had time to ask (``count`` × 20 ms +
    50 ms), so the body's planner meets a held lock even on a loaded machine."""
    errors: list[BaseException] = []
    _plan_once(url, 30.0, job="first")  # the schema and the cluster's lock row exist
    ready = threading.Barrier(count + 1)
    held = threading.Event()

    def hold(k: int) -> None:
        try:
            store = open_store(url, grace_s=0, busy_timeout_s=30.0)
            decision = new_decision(f"h{k}")
        except BaseException as exc:  # reported by the test
            errors.append(exc)
            ready.abort()
            return
        try:
            ready.wait(timeout=30)
            time.sleep(0.02 * k)
            with store.planning("c1") as tx:
                held.set()
                tx.record(decision)
                time.sleep(hold_s)
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=hold, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    ready.wait(timeout=30)
    held.wait(timeout=30)
    time.sleep(0.02 * count + 0.05)
    try:
        yield errors
    finally:
        for t in threads:
            t.join(timeout=60)


def test_a_waiter_outlives_the_busy_timeout_while_the_lock_changes_hands(db_url: str) -> None:
    """Six planners ahead, 0.3 s each: the waiter's whole wait is longer than its 1 s busy
    timeout (on PostgreSQL, whose queue is first come first served, by ~0.5 s), and it
    must still get its turn. (Each turn is well under the busy timeout, so a loaded
    machine does not make the lock look stuck.)"""
    waiter = open_store(db_url, grace_s=0, busy_timeout_s=1.0)
    decision = new_decision("w")
    try:
        with _holders(db_url, 6, 0.3) as errors:
            began = time.monotonic()
            with waiter.planning("c1") as tx:
                took = time.monotonic() - began
                tx.record(decision)
    finally:
        waiter.close()
    assert errors == []
    if db_url.startswith("postgresql"):  # SQLite's waiters are not served in order
        assert took > 1.0, f"the waiter got the lock after {took:.2f} s: no queue was formed"
    store = open_store(db_url, grace_s=0)
    try:
        assert len(store.history()) == 8
    finally:
        store.close()


def test_one_holder_that_keeps_the_lock_fails_the_waiter_after_the_busy_timeout(
    db_url: str,
) -> None:
    with _holders(db_url, 1, 3.0) as errors:
        began = time.monotonic()
        with pytest.raises(StoreError) as err:
            _plan_once(db_url, 0.5)
        took = time.monotonic() - began
    assert errors == []
    assert 0.45 < took < 2.5, f"failed after {took:.2f} s for a 0.5 s busy timeout"
    assert err.value.exit_code == 7
    assert err.value.context["cause"] == "locked", err.value
    assert "waited" in err.value.message, err.value.message


#: The relay: a process of its own (plain sqlite3, so it starts in milliseconds) that says
#: "ready" once it holds the lock the first time.
_RELAY = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
conn.execute("CREATE TABLE IF NOT EXISTS relay (n INTEGER)")
end = time.monotonic() + float(sys.argv[2])
first = True
while time.monotonic() < end:
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO relay VALUES (1)")
    if first:
        print("ready", flush=True)
        first = False
    time.sleep(0.05)
    conn.execute("COMMIT")
"""


@contextmanager
def _relay(path: Path, seconds: float) -> Iterator[None]:
    """Another process that commits a change every 50 ms and takes the lock again at once,
    for ``seconds``: the lock changes hands all the time, and a waiter polling SQLite's
    busy handler seldom finds it free. The body runs once it holds the lock."""
    proc = subprocess.Popen(
        [sys.executable, "-c", _RELAY, str(path), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_sqlite_a_waiter_behind_a_relay_gets_the_lock_when_it_ends(tmp_path: Path) -> None:
    """Measured before the fix: the waiter failed after its 1 s busy timeout."""
    path = tmp_path / "d.db"
    open_store(f"sqlite:///{path}", grace_s=0).close()
    with _relay(path, 2.5):
        began = time.monotonic()
        _plan_once(f"sqlite:///{path}", 1.0)
        took = time.monotonic() - began
    assert took < QUEUE_WAIT_FACTOR * 1.0, took


class _Busy:
    """A connection whose lock is never free while someone else commits all the time (a
    fake, for the loop's arithmetic: which bound ends the wait, and what it says)."""

    def __init__(self, commits: bool) -> None:
        self.commits = commits
        self.version = 0
        self.timeouts: list[str] = []

    def execute(self, sql: str) -> _Busy:
        if sql == "BEGIN IMMEDIATE":
            raise sqlite3.OperationalError("database is locked")
        if sql.startswith("PRAGMA busy_timeout"):
            self.timeouts.append(sql)
        elif sql == "PRAGMA data_version":
            self.version += int(self.commits)
        return self

    def fetchone(self) -> tuple[int]:
        return (self.version,)


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        self.t += 0.25  # each step of the wait
        return self.t


@pytest.mark.parametrize("commits", [True, False])
def test_a_wait_ends_at_its_bound_and_says_which(commits: bool) -> None:
    conn = _Busy(commits)
    clock = _Clock()
    with pytest.raises(sqlite3.OperationalError) as err:
        begin_immediate(cast(sqlite3.Connection, conn), 2.0, monotonic=clock)
    if commits:  # changing hands all the time: the queue's bound, 10 x 2 s
        assert QUEUE_WAIT_FACTOR * 2.0 <= clock.t < QUEUE_WAIT_FACTOR * 2.0 + 1
        assert "in line" in str(err.value)
    else:  # one holder: the busy timeout
        assert 2.0 <= clock.t < 3.0
        assert "without another mlsub finishing" in str(err.value)
    assert "database is locked" in str(err.value)  # the store's "locked" hint
    assert conn.timeouts[-1] == "PRAGMA busy_timeout = 2000"  # set back


def test_begin_immediate_sets_the_busy_timeout_back(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "d.db", isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 7000")
        begin_immediate(conn, 7.0)
        assert conn.in_transaction
        conn.execute("ROLLBACK")
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 7000
    finally:
        conn.close()
