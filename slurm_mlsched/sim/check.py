"""Invariants of a whole replay, checked from the outside (pure; tests and benchmarks).

* capacity: at no slot do the committed reservations of all jobs exceed a machine's
  capacity in any resource;
* every placed job runs only from its arrival on, covers its workload, and keeps the PS
  rules (``placement.verify.check_decision`` without the capacity part, which is checked
  once for the whole replay here);
* every admitted job has an outcome, in arrival order.
"""

from __future__ import annotations

from dataclasses import replace

from ..model import ClusterSnapshot
from ..placement.baselines.timeline import Timeline
from ..placement.program.verify import check_decision
from .result import SimResult

EPS = 1e-6


def capacity_violations(result: SimResult) -> list[str]:
    """Machines and resources over capacity at some slot, with the peak found."""
    reservations = tuple(result.reservations())
    if not reservations:
        return []
    book = Timeline.of(replace(result.cluster, reservations=reservations), 0)
    stop = max(book.free_after, 1)
    peak = book.peak(0, stop)
    out = []
    for h, name in enumerate(book.names):
        for r, label in enumerate(("gpu", "cpu", "mem")):
            if peak[h, r] > book.capacity[h, r] + EPS:
                cap = book.capacity[h, r]
                out.append(f"{name}: {label} peak {peak[h, r]:g} > capacity {cap:g}")
    return out


def decision_problems(result: SimResult) -> list[str]:
    """Per-decision invariants (arrival, work, PS rules, non-elastic constancy)."""
    empty: ClusterSnapshot = replace(result.cluster, reservations=())
    out = []
    for o in result.outcomes:
        if o.decision is None:
            continue
        for problem in check_decision(o.decision, o.job.request, empty):
            out.append(f"{o.job.job_id}: {problem}")
    return out
