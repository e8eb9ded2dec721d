"""The replay engine (pure): jobs with submit times, the event loop, metrics.

See ``docs/replay-guide.md`` for how a replay maps a trace onto the model of MODEL.md.

Importing the package is light: each name loads its module on first use (the engine
and the metrics bring numpy and the policies), so the CLI's start-up does not pay for
them (``tests/cli/test_cli_startup.py``).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .cluster import node_grid, parse_nodes_spec
    from .engine import Unplaceable, admit, simulate
    from .jobs import SimJob, arrival_slot, as_allreduce, sim_jobs
    from .metrics import (
        SUMMARY_KEYS,
        LowerBound,
        PolicyMetrics,
        Series,
        compute_metrics,
        lower_bound,
    )
    from .realloc import simulate_reallocating
    from .result import JobOutcome, SimResult
    from .utility import Utility, draw_utilities, draw_utility, total_utility

_WHERE = {
    "node_grid": "cluster",
    "parse_nodes_spec": "cluster",
    "Unplaceable": "engine",
    "admit": "engine",
    "simulate": "engine",
    "SimJob": "jobs",
    "arrival_slot": "jobs",
    "as_allreduce": "jobs",
    "sim_jobs": "jobs",
    "SUMMARY_KEYS": "metrics",
    "LowerBound": "metrics",
    "PolicyMetrics": "metrics",
    "Series": "metrics",
    "compute_metrics": "metrics",
    "lower_bound": "metrics",
    "simulate_reallocating": "realloc",
    "JobOutcome": "result",
    "SimResult": "result",
    "Utility": "utility",
    "draw_utilities": "utility",
    "draw_utility": "utility",
    "total_utility": "utility",
}


def __getattr__(name: str) -> Any:
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(_module(where), name)


def _module(where: str) -> ModuleType:
    """One of the package's modules by name, with a static import each (the core uses no
    dynamic import: tests/unit/test_architecture.py)."""
    if where == "cluster":
        from . import cluster

        return cluster
    if where == "engine":
        from . import engine

        return engine
    if where == "jobs":
        from . import jobs

        return jobs
    if where == "metrics":
        from . import metrics

        return metrics
    if where == "realloc":
        from . import realloc

        return realloc
    if where == "result":
        from . import result

        return result
    from . import utility

    return utility


__all__ = [
    "SUMMARY_KEYS",
    "JobOutcome",
    "LowerBound",
    "PolicyMetrics",
    "Series",
    "SimJob",
    "SimResult",
    "Unplaceable",
    "Utility",
    "admit",
    "arrival_slot",
    "as_allreduce",
    "compute_metrics",
    "draw_utilities",
    "draw_utility",
    "lower_bound",
    "node_grid",
    "parse_nodes_spec",
    "sim_jobs",
    "simulate",
    "simulate_reallocating",
    "total_utility",
]
