"""A throw-away PostgreSQL server for the tests: installed from Debian if missing, run by
an unprivileged user on 127.0.0.1 at a free port, removed at the end of the session."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.conftest import require_or_skip

USER = "mlsub"  # the database superuser initdb creates


@dataclass(frozen=True)
class PgServer:
    host: str
    port: int

    def url(self, database: str, role: str = USER) -> str:
        return f"postgresql+psycopg://{role}@{self.host}:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(
            host=self.host, port=self.port, user=USER, dbname="postgres", autocommit=True
        ) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


def _bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def _install() -> str | None:
    """apt-get install postgresql; returns why it failed, or None."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        return "PostgreSQL is not installed and this is not a root Debian machine to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    lock = ["-o", "DPkg::Lock::Timeout=600"]  # another install may hold dpkg's lock
    for cmd in (
        ["apt-get", *lock, "update", "-qq"],
        ["apt-get", *lock, "install", "-y", "-qq", "postgresql"],
    ):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            return f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}"
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_owner(cmd: list[str]) -> list[str]:
    """Run as the 'postgres' user when we are root (the server refuses to run as root)."""
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def postgres_server() -> Iterator[PgServer]:
    try:
        import psycopg  # noqa: F401
    except ImportError:
        require_or_skip("psycopg is not installed (pip install -e '.[dev]')")
    bindir = _bindir()
    if bindir is None:
        problem = _install()
        bindir = _bindir()
        if bindir is None:
            require_or_skip(f"no PostgreSQL server: {problem or 'initdb not found after install'}")
    assert bindir is not None
    base = Path(tempfile.mkdtemp(prefix="mlsub-pg-"))
    if os.geteuid() == 0:
        shutil.chown(base, "postgres", "postgres")
    data, port = base / "data", _free_port()
    log = base / "server.log"
    try:
        subprocess.run(
            _as_owner([str(bindir / "initdb"), "-D", str(data), "-U", USER, "-A", "trust",
                       "--no-sync", "-E", "UTF8"]),
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
        options = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c fsync=off"
        subprocess.run(
            _as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options,
                       "-w", "-t", "60", "start"]),
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", b"") or b""
        shutil.rmtree(base, ignore_errors=True)
        require_or_skip(f"cannot start PostgreSQL: {exc}: {detail.decode(errors='replace')[-500:]}")
    try:
        yield PgServer("127.0.0.1", port)
    finally:
        subprocess.run(
            _as_owner([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"]),
            capture_output=True, timeout=60,
        )  # fmt: skip
        time.sleep(0.1)
        shutil.rmtree(base, ignore_errors=True)
