"""The replay engine (pure): jobs with submit times, the event loop, metrics.

See ``docs/replay-guide.md`` for how a replay maps a trace onto the model of MODEL.md.
"""

from .cluster import node_grid, parse_nodes_spec
from .engine import Unplaceable, admit, simulate
from .jobs import SimJob, arrival_slot, sim_jobs
from .metrics import SUMMARY_KEYS, LowerBound, PolicyMetrics, Series, compute_metrics, lower_bound
from .realloc import simulate_reallocating
from .result import JobOutcome, SimResult
from .utility import Utility, draw_utilities, draw_utility, total_utility

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
