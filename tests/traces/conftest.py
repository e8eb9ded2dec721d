"""Shared fixtures of the trace-reader tests: the real traces in ``../shared/traces`` and the
sacct output captured from the lab cluster (``tests/fixtures/sacct``)."""

from __future__ import annotations

import pytest

from slurm_mlsched.traces import Trace, read_trace
from tests.traces.trace_files import PHILLY, need


@pytest.fixture(scope="session")
def philly() -> Trace:
    """philly.csv read once per session (82,247 rows, about 2 s)."""
    return read_trace(need(PHILLY))
