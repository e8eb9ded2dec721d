"""Engines, the schema version check and Alembic upgrades (the storage adapter's plumbing).

* SQLite: the file (and its directory, when mlsub creates it) is made owner-only (0600 /
  0700) before SQLite opens it; every connection sets ``busy_timeout`` and WAL mode, and
  transactions start with ``BEGIN IMMEDIATE`` so that one writer at a time holds the
  database from its first read (the per-cluster serialization of ``planning()``); reads
  (history, show, export, …) begin a plain transaction and take no write lock. A writer
  waits for the lock in line (:func:`begin_immediate`): as long as the lock keeps changing
  hands, and fails once ``db_busy_timeout_s`` passes without that. A file this
  process cannot write (a read-only mount) is opened read-only (``mode=ro``, or
  ``immutable=1`` when not even its directory is writable): reading works, writing is a
  ``read-only`` store error.
* PostgreSQL (``postgresql+psycopg://``): plain transactions; ``planning()`` locks a row
  per cluster, and schema creation holds an advisory lock. Every wait is bounded: the
  connection (TCP and the server's first answer) by :data:`PG_CONNECT_TIMEOUT_S`, each
  lock by ``lock_timeout`` and each statement by ``statement_timeout``, both the busy
  timeout (``db_busy_timeout_s``, as for SQLite), set once per connection in its startup
  options. A server that accepts connections and never answers is an error within
  :data:`PG_CONNECT_TIMEOUT_S`, raised once (the schema check does not connect again).
  ``planning()`` waits for its row in line too (:func:`lock_in_line`).
* **Waiting in line.** A burst of commands (sixteen ``mlsub`` submissions at once) queues
  for the one lock; the last waits for the sum of the others' turns, which grows with the
  burst and with the load of the machine, not because anything is stuck. So a wait fails
  only when the lock has not changed hands for ``db_busy_timeout_s`` (one holder kept it
  that long: the "locked" hint says exactly that), or when the whole wait reaches
  :data:`QUEUE_WAIT_FACTOR` × ``db_busy_timeout_s``. Every wait stays bounded. (Measured
  before: CI once failed one of sixteen concurrent submissions with "database is locked"
  after the 30 s busy timeout while the others took their turns. Sixteen concurrent
  ``mlsub plan --reserve`` on one SQLite file with ``db_busy_timeout_s`` = 1, on two cores
  shared with a test run, 2026-12-07: before, 4, 4 and 5 of 16 failed in three runs;
  after, none.)
* Every driver error becomes one :class:`StoreError` whose hint names its cause (locked,
  read-only, corrupt, full, unreachable; out of date is :class:`SchemaOutOfDateError`):
  :func:`store_hint`.
* The migrations live in the top-level ``migrations/`` of a source checkout and in
  ``slurm_mlsched/_data/migrations`` of an installed wheel; :func:`migrations_dir` finds
  either. A database without tables is created at head; one at an older revision is
  refused with :class:`SchemaOutOfDateError` carrying the exact upgrade command.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, Executable, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError

from ..errors import SchemaOutOfDateError, StoreError

if TYPE_CHECKING:  # Alembic is imported only when a schema must be created or upgraded
    from alembic.config import Config as AlembicConfig
    from sqlalchemy.orm import Session

#: The newest revision in migrations/ (a test checks it against Alembic's head). Every
#: command compares the database's revision with it in one query, without importing
#: Alembic (which takes most of a second).
HEAD_REVISION = "0007"

_PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # slurm_mlsched/
#: pg_advisory_xact_lock key held while a fresh PostgreSQL database is created.
_SCHEMA_LOCK_KEY = 0x6D6C_7375_6200
DEFAULT_UPGRADE_COMMAND = "mlsub db upgrade"
#: Execution option of the store's reading engine view: SQLite then begins a plain
#: (deferred) transaction, which takes no write lock.
READ_ONLY_OPTION = "mlsub_read_only"
#: Seconds PostgreSQL may take to accept a connection and answer its start-up.
PG_CONNECT_TIMEOUT_S = 2  # libpq's smallest; a silent server fails the command in ~3 s
#: A wait for the store's lock that sees it change hands goes on, up to this many times
#: ``db_busy_timeout_s`` in all (module docstring, "Waiting in line").
QUEUE_WAIT_FACTOR = 10
#: SQLite's primary result code for a lock another connection holds (extended codes keep
#: it in their low byte).
_SQLITE_BUSY = 5


def migrations_dir() -> Path:
    """The Alembic script directory: inside the installed package, else the checkout's."""
    for candidate in (_PACKAGE_ROOT / "_data" / "migrations", _PACKAGE_ROOT.parent / "migrations"):
        if (candidate / "env.py").is_file():
            return candidate
    raise StoreError(
        "the database migrations are missing from this installation",
        hint="reinstall mlsub; the wheel ships them in slurm_mlsched/_data/migrations",
    )


#: ``scheme://user:PASSWORD@`` (or ``user:PASSWORD@``) in any text, however malformed the
#: rest of the URL is.
_USERINFO = re.compile(r"(?P<head>(?:[A-Za-z][A-Za-z0-9+.-]*://)?[^:/@\s]*):(?P<pw>\S*)@")
_PASSWORD_PARAM = re.compile(r"(?i)(?P<head>[?&;]password=)[^&;\s]*")


def display_url(url: str) -> str:
    """The URL with any password hidden (``***``), for every message, hint, log line and
    ``--json`` field. A URL SQLAlchemy cannot parse is masked by pattern (a password in the
    user-info part or in a ``password=`` query parameter), never shown as it was given."""
    try:
        shown = make_url(url).render_as_string(hide_password=True)
    except (ArgumentError, ValueError, TypeError):
        shown = url
    return mask_passwords(shown)


def mask_passwords(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***``."""
    text = _USERINFO.sub(lambda m: f"{m.group('head')}:***@", text)
    return _PASSWORD_PARAM.sub(lambda m: f"{m.group('head')}***", text)


def parse_url(url: str) -> URL:
    try:
        return make_url(url)
    except (ArgumentError, ValueError, TypeError):
        raise StoreError(
            f"not a database URL: {display_url(url)!r}",
            hint="use sqlite:////path/to/decisions.db or postgresql+psycopg://user@host/db",
            context={"url": display_url(url)},
        ) from None


def is_sqlite(url: URL) -> bool:
    return url.get_backend_name() == "sqlite"


def sqlite_path(url: URL) -> Path | None:
    db = url.database
    return None if not db or db == ":memory:" or db.startswith("file:") else Path(db)


def prepare_sqlite_file(path: Path) -> None:
    """Create the directory (0700) and an empty database file (0600) if they are missing."""
    if not path.parent.exists():
        os.makedirs(path.parent, mode=0o700, exist_ok=True)
        os.chmod(path.parent, 0o700)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return
    os.close(fd)
    os.chmod(path, 0o600)


def make_engine(url: str, *, busy_timeout_s: float = 30.0) -> Engine:
    """An engine for ``url`` set up as the module docstring says."""
    parsed = parse_url(url)
    if not is_sqlite(parsed):
        wait_ms = max(1, int(busy_timeout_s * 1000))
        connect_args = {
            "connect_timeout": PG_CONNECT_TIMEOUT_S,
            "options": f"-c lock_timeout={wait_ms} -c statement_timeout={wait_ms}",
        }
        try:
            return create_engine(parsed, pool_pre_ping=True, connect_args=connect_args)
        except (ArgumentError, ImportError) as exc:
            raise StoreError(
                f"cannot use database {display_url(url)}: {mask_passwords(str(exc))}",
                hint="PostgreSQL needs the URL form postgresql+psycopg://… and psycopg",
            ) from None
    path = sqlite_path(parsed)
    if path is not None and _read_only(path):
        return _read_only_engine(path, busy_timeout_s)
    if path is not None:
        try:
            prepare_sqlite_file(path)
        except OSError as exc:
            raise StoreError(
                f"cannot create the database file {path}: {exc.strerror or exc}",
                hint="check the directory's permissions, or set db_url / MLSUB_DB_URL",
                context={"path": str(path)},
            ) from None
    engine = create_engine(parsed, connect_args={"timeout": busy_timeout_s})
    _sqlite_events(engine, busy_timeout_s)
    return engine


def _read_only(path: Path) -> bool:
    """An existing database file this process cannot write (a read-only mount, another
    user's file shared read-only): it is opened read-only, so that reading still works."""
    return path.exists() and not (os.access(path, os.W_OK) and os.access(path.parent, os.W_OK))


def _read_only_engine(path: Path, busy_timeout_s: float) -> Engine:
    """SQLite opened with ``mode=ro`` (``immutable=1`` when not even the directory can be
    written, where WAL's -shm file cannot be made: nobody can change the file there);
    every read works, every write is a ``read-only`` store error."""
    import sqlite3
    from urllib.parse import quote

    flag = "mode=ro" if os.access(path.parent, os.W_OK) else "immutable=1"
    uri = f"file:{quote(str(path.resolve()))}?{flag}"

    def connect() -> sqlite3.Connection:
        conn = sqlite3.connect(uri, uri=True, timeout=busy_timeout_s, check_same_thread=False)
        conn.isolation_level = None
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        return conn

    engine = create_engine("sqlite://", creator=connect)

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        conn.exec_driver_sql("BEGIN")

    return engine


def _sqlite_events(engine: Engine, busy_timeout_s: float) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (below)
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        # setting WAL takes a lock even when it is already set: ask first (a read)
        if str(cur.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            cur.execute("PRAGMA journal_mode = WAL")
        cur.execute("PRAGMA foreign_keys = ON")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        # reads (the store's read-only engine view) take no write lock: they neither wait
        # behind a planner nor make one wait
        if conn.get_execution_options().get(READ_ONLY_OPTION):
            conn.exec_driver_sql("BEGIN")
            return
        raw = conn.connection.driver_connection
        assert isinstance(raw, sqlite3.Connection)
        try:
            begin_immediate(raw, busy_timeout_s)
        except sqlite3.Error as exc:  # what db_errors turns into a StoreError
            raise DBAPIError.instance("BEGIN IMMEDIATE", None, exc, sqlite3.Error) from None


class _Line:
    """One wait in line for the store's lock (module docstring, "Waiting in line"): after
    each try that did not get the lock, :meth:`missed` is told what identifies the last
    holder now (a witness; None when it cannot be read) and says why the wait ends, or
    None to try again. The lock changed hands when the witness changed."""

    def __init__(
        self, busy_timeout_s: float, witness: object, monotonic: Callable[[], float]
    ) -> None:
        self.busy_timeout_s = busy_timeout_s
        self.monotonic = monotonic
        self.began = self.last_change = monotonic()
        self.seen = witness
        self.changes = 0

    def missed(self, witness: object) -> str | None:
        now = self.monotonic()
        if witness is not None and witness != self.seen:
            self.seen, self.last_change, self.changes = witness, now, self.changes + 1
        waited, still = now - self.began, now - self.last_change
        if still >= self.busy_timeout_s:
            return (
                f"waited {waited:.1f} s, the last {still:.1f} s of it without another mlsub "
                f"finishing (it changed hands {self.changes} times before)"
            )
        if waited >= QUEUE_WAIT_FACTOR * self.busy_timeout_s:
            return (
                f"waited {waited:.1f} s in line ({QUEUE_WAIT_FACTOR} x db_busy_timeout_s), "
                f"while it changed hands {self.changes} times"
            )
        return None


def begin_immediate(
    raw: sqlite3.Connection,
    busy_timeout_s: float,
    *,
    monotonic: Callable[[], float] = time.monotonic,
) -> None:
    """``BEGIN IMMEDIATE`` on ``raw``, waiting in line (module docstring).

    The wait goes in steps of min(1 s, ``busy_timeout_s`` / 8), SQLite's own busy handler
    inside each. After a step that did not get the lock, ``PRAGMA data_version`` tells
    whether another connection committed meanwhile: the lock changed hands
    (:class:`_Line`). A wait that ends is SQLite's "database is locked", with how long it
    waited. The connection's busy timeout is set back afterwards."""
    step_s = max(0.001, min(1.0, busy_timeout_s / 8))
    line = _Line(busy_timeout_s, _data_version(raw), monotonic)
    raw.execute(f"PRAGMA busy_timeout = {max(1, int(step_s * 1000))}")
    try:
        while True:
            try:
                raw.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise
            why = line.missed(_data_version(raw))
            if why is not None:
                raise sqlite3.OperationalError(f"database is locked: {why}")
    finally:
        raw.execute(f"PRAGMA busy_timeout = {max(1, int(busy_timeout_s * 1000))}")


#: PostgreSQL's codes for a wait cut short by lock_timeout or statement_timeout (both are
#: db_busy_timeout_s; on a row lock either may fire first).
_PG_WAIT_ENDED = frozenset({"55P03", "57014"})


def lock_in_line(
    session: Session,
    lock: Sequence[Executable],
    holder: Executable,
    url: str,
    busy_timeout_s: float,
    *,
    monotonic: Callable[[], float] = time.monotonic,
) -> None:
    """PostgreSQL: execute the statements of ``lock`` (the ``INSERT … ON CONFLICT DO
    NOTHING`` of the cluster's row, which waits for a planner that is inserting it, then
    its ``SELECT … FOR UPDATE``), waiting in line (module docstring).

    Each try waits in PostgreSQL's own queue for up to ``db_busy_timeout_s``
    (``lock_timeout``) inside a savepoint, so a try that saw no change of hands is a
    whole busy timeout without one. ``holder`` reads who holds the row (its ``xmax``, the
    last locking transaction): the witness of :class:`_Line`. A wait that ends is a
    "locked" :class:`StoreError`."""
    line = _Line(busy_timeout_s, session.execute(holder).scalar(), monotonic)
    while True:
        try:
            with session.begin_nested():
                for statement in lock:
                    session.execute(statement)
            return
        except SQLAlchemyError as exc:
            if getattr(getattr(exc, "orig", None), "sqlstate", None) not in _PG_WAIT_ENDED:
                raise
        why = line.missed(session.execute(holder).scalar())
        if why is not None:
            cause, hint = store_hint("lock timeout")
            raise StoreError(
                f"decision store {display_url(url)}: lock timeout for the planning lock: {why}",
                hint=hint,
                context={"url": display_url(url), "cause": cause},
            )


def _busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return bool(code & 0xFF == _SQLITE_BUSY)
    return "database is locked" in str(exc)


def _data_version(raw: sqlite3.Connection) -> int | None:
    """SQLite's counter of commits by other connections (None when it cannot be read now)."""
    try:
        row = raw.execute("PRAGMA data_version").fetchone()
    except sqlite3.OperationalError:
        return None
    return int(row[0])


@contextmanager
def db_errors(url: str) -> Iterator[None]:
    """The one funnel from driver errors to :class:`StoreError`."""
    try:
        yield
    except SQLAlchemyError as exc:
        orig = getattr(exc, "orig", None)
        text_ = mask_passwords(str(orig if orig is not None else exc).strip())
        detail = (text_.splitlines() or [type(exc).__name__])[0]
        cause, hint = store_hint(text_)
        raise StoreError(
            f"decision store {display_url(url)}: {detail}",
            hint=hint,
            context={"url": display_url(url), "cause": cause},
        ) from None


#: (cause, words in the driver's message, hint), first match wins.
_CAUSES: tuple[tuple[str, tuple[str, ...], str], ...] = (
    (
        "locked",
        ("database is locked", "lock timeout", "canceling statement due to lock timeout"),
        "another mlsub holds the store's lock for longer than db_busy_timeout_s "
        "(MLSUB_DB_BUSY_TIMEOUT_S); retry, or find the process that holds it",
    ),
    (
        "read-only",
        ("readonly database", "read-only", "attempt to write a readonly"),
        "the store cannot be written here: check the file's and its directory's "
        "permissions (SQLite writes -wal and -shm files beside it)",
    ),
    (
        "corrupt",
        ("malformed", "file is not a database", "not a database", "disk i/o error"),
        "the database file is damaged or not an SQLite database: restore it from a copy, "
        "or point db_url / MLSUB_DB_URL at a new file",
    ),
    (
        "full",
        ("database or disk is full", "disk full", "no space left"),
        "the file system holding the store is full: free space and retry",
    ),
    (
        "permission",
        ("row-level security", "permission denied", "insufficient privilege"),
        "on a PostgreSQL store with row-level security each user's role reads and changes "
        "only the decisions in its own name (docs/admin-guide.md, trust model); an admin's "
        "role is a member of mlsub_admins, and the owner upgrades the schema",
    ),
    (
        "timeout",
        ("statement timeout", "canceling statement due to statement timeout"),
        "the database did not answer within db_busy_timeout_s (MLSUB_DB_BUSY_TIMEOUT_S)",
    ),
    (
        "unreachable",
        (
            "connection refused",
            "could not connect",
            "timeout expired",
            "connection timed out",
            "could not translate host name",
            "server closed the connection",
            "unable to open database file",
            "no route to host",
            "password authentication failed",
            "connection failed",
        ),
        "the database cannot be reached: check db_url / MLSUB_DB_URL (host, port, name, "
        "credentials) and that the server is running",
    ),
)


def store_hint(message: str) -> tuple[str, str]:
    """The cause of a driver error and what to do about it (see :data:`_CAUSES`)."""
    low = message.lower()
    for cause, words, hint in _CAUSES:
        if any(w in low for w in words):
            return cause, hint
    return "other", "see the message; check db_url / MLSUB_DB_URL and the database's health"


# --- Alembic --------------------------------------------------------------------------------


def alembic_config(connection: Connection | None = None) -> AlembicConfig:
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(migrations_dir()))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def head_revision() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None, "no migration revisions"
    return head


def current_revision(conn: Connection) -> str | None:
    from alembic.runtime.migration import MigrationContext

    return MigrationContext.configure(conn).get_current_revision()


def _lock_schema(conn: Connection) -> None:
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SCHEMA_LOCK_KEY})


def upgrade(engine: Engine, url: str, revision: str = "head") -> tuple[str | None, str | None]:
    """Upgrade the database to ``revision``; return (revision before, revision after)."""
    from alembic import command
    from alembic.util.exc import CommandError

    with db_errors(url), engine.begin() as conn:
        _lock_schema(conn)
        before = current_revision(conn)
        try:
            command.upgrade(alembic_config(conn), revision)
        except CommandError as exc:
            raise StoreError(
                f"cannot upgrade {display_url(url)} to {revision}: {exc}",
                hint="this database may come from a newer mlsub; upgrade mlsub instead",
            ) from None
        return before, current_revision(conn)


def ensure_schema(engine: Engine, url: str, upgrade_command: str = DEFAULT_UPGRADE_COMMAND) -> str:
    """Create a fresh database at head, accept one at head, refuse anything else."""
    if _at_head(engine, url):
        return HEAD_REVISION
    from alembic import command

    head = head_revision()
    with db_errors(url), engine.begin() as conn:
        _lock_schema(conn)
        tables = set(inspect(conn).get_table_names())
        if not tables:
            command.upgrade(alembic_config(conn), "head")
            return head
        if "alembic_version" not in tables:
            raise StoreError(
                f"{display_url(url)} holds tables but is not an mlsub decision store",
                hint="point db_url / MLSUB_DB_URL at an empty or an mlsub database",
            )
        current = current_revision(conn)
    if current == head:
        return head
    if current is not None and _known(current):
        raise SchemaOutOfDateError(
            f"the decision store {display_url(url)} is at schema revision {current}, "
            f"this mlsub needs {head}",
            hint=f"upgrade it with: {upgrade_command}",
            context={"url": display_url(url), "current": current, "head": head},
        )
    raise StoreError(
        f"the decision store {display_url(url)} is at schema revision {current}, "
        f"which this mlsub does not know (it needs {head})",
        hint="the database was written by a newer mlsub: upgrade mlsub",
        context={"url": display_url(url), "current": current, "head": head},
    )


def _at_head(engine: Engine, url: str) -> bool:
    """One query: is the database already at :data:`HEAD_REVISION`? (False when it has no
    version table yet, or any error: the full check then says what is wrong.)"""
    with db_errors(url):  # a server that cannot be reached is an error now, not twice
        conn = engine.execution_options(**{READ_ONLY_OPTION: True}).connect()  # no lock
    try:
        with conn:
            row = conn.execute(text("SELECT version_num FROM alembic_version")).first()
    except SQLAlchemyError:
        return False
    return row is not None and row[0] == HEAD_REVISION


def _known(revision: str) -> bool:
    from alembic.script import ScriptDirectory
    from alembic.util.exc import CommandError

    try:
        return ScriptDirectory.from_config(alembic_config()).get_revision(revision) is not None
    except CommandError:
        return False
