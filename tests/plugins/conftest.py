"""Fixtures of the Slurm plugin tests: the Lua interpreter (installed if missing)."""

from __future__ import annotations

import pytest

from tests.plugins.lua import ensure_lua


@pytest.fixture(scope="session")
def lua() -> str:
    return ensure_lua()
