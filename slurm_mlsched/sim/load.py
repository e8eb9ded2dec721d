r"""The offered load of a replay's jobs on a cluster, and arrivals rescaled to a target load
(pure).

A trace's jobs arrive at the rate of the cluster they were recorded on; replayed on
another cluster (a 6 × 8 instead of Philly's hundreds of GPUs) the same rate is a
different load. The load is stated here the way the pooled-resource bound of
:mod:`.bounds` sees the jobs, so that it means the same thing on every trace and shape:

* job i's least work on resource r is its workers' share of r times its fastest training
  time per worker, w_i^r = V_i · α_i[r] · θ_in,i (seconds × units of r: the work of
  :func:`.bounds.pooled_srpt` before dividing by the capacity), θ_in,i at the job's GPU
  speed on the cluster (docs/formulation.md §17), as the replay runs it;
* the **offered load** of jobs submitted over the span S = max_i s_i − min_i s_i is the
  largest, over the resources r of positive capacity C_r, of ρ_r = Σ_i w_i^r / (C_r · S).

ρ = 1 means the cluster would be busy all the time with no locality loss and no
idling; it is a lower estimate of the real load, since a distributed job trains slower than
ν_in per worker. It is the same for every slot length Δ.

:func:`at_load` scales the submit offsets by k = ρ / target, the first submission fixed:
s'_i = s_0 + k · (s_i − s_0). Every job, its size and its order stay; only the gaps between
arrivals change, so the offered load becomes the target exactly. The sweep of
``bench/sweep.py`` uses it to put every trace at loads 0.5 – 1.5 of every cluster shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..model import ClusterSnapshot, JobRequest
from ..model.gpu_speed import effective_request
from ..model.speed import worker_thetas

#: The offered loads ``--load`` accepts (a target outside makes no sense as a replay).
MIN_LOAD = 0.01
MAX_LOAD = 100.0


@dataclass(frozen=True)
class Rescaled:
    """Entries at the target load, with the load they had and the factor applied."""

    entries: tuple[tuple[JobRequest, float], ...]
    native_load: float
    target_load: float
    factor: float  # k: the submit offsets were multiplied by it


def job_work(job: JobRequest) -> tuple[float, ...]:
    """w_i^r for every resource r: V_i · α_i[r] · θ_in,i (module docstring)."""
    theta = worker_thetas(job, 1.0)[0]
    return tuple(job.workload * a * theta for a in job.worker.as_tuple())


#: Arrivals closer than this (seconds) have no rate: a trace's times are whole seconds or
#: finer, and a span of, say, 1e-308 s would make the load overflow to infinity.
MIN_SPAN_S = 1e-6


def offered_load(entries: Sequence[tuple[JobRequest, float]], cluster: ClusterSnapshot) -> float:
    """ρ = max_r Σ_i w_i^r / (C_r · S) of jobs submitted at the given seconds.

    Raises ValueError when the span S is under :data:`MIN_SPAN_S` (one job, or every job
    submitted at once: no rate to speak of) or no resource of the jobs has capacity on
    ``cluster``."""
    if not entries:
        raise ValueError("no jobs: an empty replay has no load")
    submits = [s for _, s in entries]
    span = max(submits) - min(submits)
    if not span >= MIN_SPAN_S:
        raise ValueError(
            "every job is submitted at the same time (within a microsecond): the arrivals "
            "have no rate"
        )
    capacity = cluster.total_capacity().as_tuple()
    totals = [0.0] * len(capacity)
    for job, _ in entries:  # at the rate the replay runs it (its GPU speed on the cluster)
        for r, w in enumerate(job_work(effective_request(job, cluster))):
            totals[r] += w
    loads = [t / (c * span) for t, c in zip(totals, capacity, strict=True) if c > 0 and t > 0]
    if not loads:
        raise ValueError("the jobs use no resource the cluster has")
    return max(loads)


def at_load(
    entries: Sequence[tuple[JobRequest, float]], cluster: ClusterSnapshot, target: float
) -> Rescaled:
    """The entries with their submit offsets scaled so that :func:`offered_load` = target."""
    if not MIN_LOAD <= target <= MAX_LOAD:
        raise ValueError(f"a target load must be between {MIN_LOAD} and {MAX_LOAD}, got {target}")
    native = offered_load(entries, cluster)
    factor = native / target
    first = min(s for _, s in entries)
    out = tuple((job, first + factor * (s - first)) for job, s in entries)
    return Rescaled(out, native, target, factor)
