"""Backends for the contract and migration tests: SQLite (a file) and a real PostgreSQL."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.storage.postgres import PgServer, postgres_server

_names = itertools.count()


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    with postgres_server() as server:
        yield server


@pytest.fixture(
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.integration)],
)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL of an empty database on each backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'decisions.db'}"
    server: PgServer = request.getfixturevalue("pg_server")
    return server.create_database(f"t{next(_names)}")
