"""``drf``: dominant-resource fairness over worker/PS counts, recomputed at every arrival and
completion (MODEL.md §6; Ghodsi et al., NSDI 2011). A re-allocating policy
(``placement.reallocation``): replay only.

**Allocation** by progressive filling against the cluster's total capacity: a job holding
w workers and S(w) PSs (the PS rule of MODEL.md §2; one PS while only co-location is
possible, :func:`.task_layout.ps_for`) has the dominant share

    s_j = max_r (w·α_j,r + S(w)·β_j,r) / Σ_h C[h][r].

Repeatedly, the job with the smallest dominant share (ties: the earlier job) gets one more
worker, with the PS the rule then needs, if it has fewer than N workers and the task fits
what is left; a job whose next task does not fit is done (the room only shrinks). A job's
first step is the fewest workers it can run with on the empty cluster (1 for nearly every
job; more for one whose narrow shapes never fit, :func:`.task_layout.least_width`). When
every job's N workers fit at once, that is the result (the filling would reach it too).

**Placement** (our choice; :func:`.task_layout.first_fit`): first fit in node order,
workers then PSs, as Slurm's block distribution and the ``fifo-*`` baselines do, so DRF
differs from them in *how many* tasks a job gets, not in *where*; a job whose tasks all
land on one machine runs co-located (one PS). Jobs whose counts did not change keep their
machines (``realloc_keep_placement``). A job that block first fit holds at no width even
on the empty cluster (a PS that fits only on a node before the workers') is laid out by
the fallback of :func:`.task_layout.spread_for` instead, so it runs rather than waits
forever.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from ...model import ClusterSnapshot, Machine
from ..params import PlacementParams
from ..program.eligibility import allowed
from ..program.packing import EPS
from .reallocation import Allocation, RunningJob
from .task_layout import first_fit, least_width, place_counts, ps_for
from .timeline import Timeline

FloatArray = npt.NDArray[np.float64]


def _held(job: RunningJob, workers: int) -> FloatArray:
    r = job.request
    out: FloatArray = np.asarray(r.worker.as_tuple()) * workers + np.asarray(
        r.ps.as_tuple()
    ) * ps_for(r, workers)
    return out


def _least(job: RunningJob, capacity: FloatArray, machines: Sequence[Machine]) -> int:
    r = job.request
    ok = allowed(r, machines) if machines else None
    return least_width(r, capacity, first_fit, ok=ok)


def allocate_counts(
    jobs: tuple[RunningJob, ...], capacity: FloatArray, machines: Sequence[Machine] = ()
) -> list[tuple[int, int]]:
    """(workers, PSs) per job by progressive filling on dominant shares (module docstring);
    a job's first step is the fewest workers it can run with on the empty cluster (1 for
    nearly every job, :func:`.task_layout.least_width`; ``machines`` give the nodes' GPU
    types for a typed job)."""
    total = capacity.sum(axis=0)
    inv = np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)
    most = [(j.request.max_workers, ps_for(j.request, j.request.max_workers)) for j in jobs]
    whole = [0.0, 0.0, 0.0]
    for j, (w, s) in zip(jobs, most, strict=True):
        for r, (a, b) in enumerate(
            zip(j.request.worker.as_tuple(), j.request.ps.as_tuple(), strict=True)
        ):
            whole[r] += a * w + b * s
    if jobs and (np.asarray(whole) <= total + EPS).all():
        return most
    free = total.copy()
    workers = [0] * len(jobs)
    held = [np.zeros(3) for _ in jobs]
    heap = [(0.0, i) for i in range(len(jobs))]
    while heap:
        _, i = heapq.heappop(heap)
        w = workers[i] + 1 if workers[i] else _least(jobs[i], capacity, machines)
        if w > jobs[i].request.max_workers:
            continue
        after = _held(jobs[i], w)
        if not (after - held[i] <= free + EPS).all():
            continue
        free -= after - held[i]
        held[i], workers[i] = after, w
        heapq.heappush(heap, (float((after * inv).max()), i))
    return [(w, ps_for(j.request, w)) for j, w in zip(jobs, workers, strict=True)]


def reallocate_drf(
    jobs: tuple[RunningJob, ...], cluster: ClusterSnapshot, slot: int, params: PlacementParams
) -> tuple[Allocation | None, ...]:
    """Dominant-resource fairness over worker/PS counts, first-fit placement."""
    capacity = Timeline.of(cluster, slot).capacity
    counts = allocate_counts(jobs, capacity, cluster.machines)
    return place_counts(
        jobs, counts, capacity, first_fit, params.realloc_keep_placement, cluster.machines
    )
