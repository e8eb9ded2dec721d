"""Fixtures of the CLI tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.store_cli import store_env


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A real SQLite store in the test's directory at a fixed clock (a module may define
    its own ``env``)."""
    return store_env(tmp_path)
