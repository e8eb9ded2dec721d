"""``tiresias``: discretized two-dimensional least-attained-service (Gu et al., NSDI 2019),
the baseline DL-cluster papers compare against (MODEL.md §6). A re-allocating policy
(``placement.reallocation``): preemptive, replay only.

* **Non-clairvoyant**: it never looks at a job's workload or duration, only at the service
  the job has attained so far, a_j = Σ GPUs × seconds run (two-dimensional: width × time;
  worker-seconds for jobs without GPUs).
* **Discretized priority queues**: thresholds Q_1 < Q_2 < … (``tiresias_thresholds_s``,
  GPU-seconds; default one threshold of 18,000 GPU-s, two queues, as the Helios study's
  port of Tiresias); a job is in queue q when Q_{q-1} ≤ a_j < Q_q. Lower queue first; in a
  queue, first come first served (arrival, then job id): jobs of one queue never preempt
  each other, which is how Tiresias avoids LAS's thrashing.
* **Allocation**: every job asks for its requested width — all N workers and the PSs a
  distributed run needs (Tiresias does not resize jobs; a job whose N workers can never
  run at once on the replay cluster asks for the most that can, :func:`widest`, where
  plain Slurm would refuse it); in priority order a job is
  admitted if its tasks (with one PS, the co-located need) fit in what the cluster has
  left in total. Jobs not admitted wait or
  are **preempted** (their allocation is taken away; resuming costs the restart time,
  MODEL.md §6, charged by the simulator).
* **Placement**: running jobs that stay admitted keep their machines; the others are placed
  on what is left with the fewest machines, tasks spread evenly (consolidation, as
  Tiresias does for models whose tensors are skewed — here every model is a PS model;
  co-located when one machine holds the job, MODEL.md O3). A job that does not fit
  physically (fragmentation) waits until the next event. A job that no even spread holds
  at any width even on the empty cluster is laid out by the fallback of
  :func:`.task_layout.spread_for` (:func:`.task_layout.any_layout`): it would otherwise wait
  forever.
* **Wake-ups**: the policy is also called when a running job's attained service crosses
  its queue's threshold (it may then be demoted and preempted), as Tiresias re-schedules
  on demotion.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

import numpy as np

from ...model import ClusterSnapshot, JobRequest, Machine
from ..params import PlacementParams
from ..program.eligibility import allowed, masked
from ..program.job_lp import FloatArray
from ..program.packing import EPS
from .reallocation import Allocation, RunningJob, service_rate
from .task_layout import (
    fewest_machines,
    on_empty,
    place_one,
    ps_for,
    spread_for,
    usage_rows,
)
from .timeline import Timeline

POLICY = "tiresias"


def queue_of(attained_s: float, thresholds: tuple[float, ...]) -> int:
    """The priority queue of a job with ``attained_s`` of service (0 = highest)."""
    return bisect.bisect_right(thresholds, attained_s)


def widest(job: JobRequest, capacity: FloatArray) -> int:
    """The requested width N, or, for a job whose N workers can never run at once on this
    cluster, the most workers that can (on the empty cluster); memoized
    (:func:`.task_layout.on_empty`)."""
    spread = spread_for(job, capacity, fewest_machines)

    def most() -> int:
        for w in range(job.max_workers, 0, -1):
            room = np.array(capacity, dtype=np.float64)
            if place_one(job, w, ps_for(job, w), room, spread, shed=False) is not None:
                return w
        return 1

    return on_empty(("widest", spread), job, capacity, None, most)


def _demand(
    job: RunningJob, capacity: FloatArray, machines: Sequence[Machine] = ()
) -> tuple[int, int, FloatArray]:
    """Workers, PSs (distributed) and the least total usage of the job's width: co-located
    needs one PS, so that is the admission test; placement then finds the layout. The
    width counts only the GPUs of the nodes the job's GPU types allow."""
    r = job.request
    w = widest(r, _seen_by(r, capacity, machines))
    s = ps_for(r, w)
    use: FloatArray = np.asarray(r.worker.as_tuple()) * w + np.asarray(r.ps.as_tuple())
    return w, s, use


def _seen_by(job: JobRequest, capacity: FloatArray, machines: Sequence[Machine]) -> FloatArray:
    """``capacity`` as the job sees it (:mod:`..eligibility`)."""
    return masked(capacity, allowed(job, machines)) if machines else capacity


def next_demotion(
    jobs: tuple[RunningJob, ...],
    allocations: tuple[Allocation | None, ...],
    slot: int,
    slot_seconds: float,
    params: PlacementParams,
) -> int | None:
    """The first slot boundary at which a running job crosses its queue's threshold."""
    thresholds = params.tiresias_thresholds_s
    best: int | None = None
    for job, alloc in zip(jobs, allocations, strict=True):
        if alloc is None:
            continue
        q = queue_of(job.attained_s, thresholds)
        if q >= len(thresholds):
            continue
        rate = service_rate(job.request, alloc) * slot_seconds  # service per slot
        if rate <= 0:
            continue
        t = slot + max(1, math.ceil((thresholds[q] - job.attained_s) / rate - 1e-9))
        best = t if best is None else min(best, t)
    return best


def reallocate_tiresias(
    jobs: tuple[RunningJob, ...], cluster: ClusterSnapshot, slot: int, params: PlacementParams
) -> tuple[Allocation | None, ...]:
    """Discretized 2D-LAS: admitted in (queue, arrival) order at full width, placed."""
    capacity = Timeline.of(cluster, slot).capacity
    thresholds = params.tiresias_thresholds_s
    order = sorted(range(len(jobs)), key=lambda i: (queue_of(jobs[i].attained_s, thresholds), i))
    left = capacity.sum(axis=0)
    admitted: list[int] = []
    machines = cluster.machines
    for i in order:
        _, _, use = _demand(jobs[i], capacity, machines)
        if (use <= left + EPS).all():
            admitted.append(i)
            left = left - use
    out: list[Allocation | None] = [None] * len(jobs)
    room = np.array(capacity, dtype=np.float64)
    kept = []
    for i in admitted:  # running jobs that stay keep their machines
        alloc = jobs[i].allocation
        r = jobs[i].request
        if alloc is not None and alloc.total_workers == widest(r, _seen_by(r, capacity, machines)):
            kept.append((jobs[i].request, alloc))
            out[i] = alloc
    if kept:
        rows, use_rows = usage_rows(kept)
        np.subtract.at(room, np.asarray(rows), np.asarray(use_rows))
    for i in admitted:
        if out[i] is not None:
            continue
        w, s, _ = _demand(jobs[i], capacity, machines)
        r = jobs[i].request
        spread = spread_for(r, _seen_by(r, capacity, machines), fewest_machines)
        out[i] = place_one(r, w, s, room, spread, shed=False, ok=allowed(r, machines))
    return tuple(out)
