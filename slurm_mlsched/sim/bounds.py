r"""A lower bound on the total completion time that scales to whole traces (pure).

The LP relaxation of MODEL.md §3 (``placement.program.lp_bound``) grows as jobs ×
machines × slots and is solved only for small replays. For any number of jobs, two
bounds hold for every feasible schedule, elastic or not, of every policy:

* **shortest runs**: job i's term end − a + 1 is at least d_i = its fewest slots on this
  cluster, so Σ_i d_i is a bound. A job runs in one mode at a time: co-located, all its
  workers and one PS on one machine (at most w_c = the most workers the largest machine
  holds beside a PS, and at most N), or distributed at the network rate (at most
  w_d = min(N, the workers the whole cluster holds)); so
  d_i = ⌈V_i / max(w_c·ν_in, w_d·ν_ex)⌉ — tighter than N workers co-located (a
  32-worker job on 4-GPU machines never runs co-located at 32);
* **pooled resource** (one per resource r with capacity C_r > 0 in the cluster): job i
  trains at most W·ν_in mini-batches per slot and its W workers hold W·α_i[r] of r, so
  it needs at least p_i^r = V_i·α_i[r] / (ν_in,i · C_r) slots of the whole cluster's r
  in total, and in each slot the jobs together use at most all of it. That is a
  single machine of unit speed on which job i has processing time p_i^r and release
  a_i; preemptive shortest-remaining-processing-time (SRPT) minimizes Σ_i (C_i − a_i)
  there (Schrage 1968), so its value bounds ours (our term end − a + 1 ≥ C_i − a_i).

:func:`scalable_bound` is the largest of these. It ignores locality, PSs and widths, so it
is weak when a cluster is idle (then the shortest runs dominate) and tight when one
resource is the bottleneck of a busy cluster.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Sequence

from ..model import ClusterSnapshot, JobRequest


def shortest_realizable_slots(job: JobRequest, cluster: ClusterSnapshot) -> int:
    """d_i: the fewest slots ``job`` can take on ``cluster`` in either mode (module
    docstring); at least 1."""
    delta = cluster.slot_seconds
    alpha, beta = job.worker.as_tuple(), job.ps.as_tuple()

    def fit(room: tuple[float, float, float]) -> int:
        counts = [math.floor(r / a + 1e-9) for r, a in zip(room, alpha, strict=True) if a > 0]
        if any(r < -1e-9 for r in room):
            return 0
        return min(counts) if counts else job.max_workers

    caps = [m.capacity.as_tuple() for m in cluster.machines]
    colo = max((fit((c[0] - beta[0], c[1] - beta[1], c[2] - beta[2])) for c in caps), default=0)
    dist = min(job.max_distributed_workers(), sum(fit(c) for c in caps))
    rate = max(
        min(colo, job.max_workers) * job.profile.nu_in(delta),
        dist * job.profile.nu_ex(delta) if dist >= job.min_distributed_workers() else 0.0,
    )
    if rate <= 0:
        return job.shortest_slots(delta)
    return max(1, math.ceil(job.workload / rate - 1e-9))


def shortest_runs(jobs: Sequence[JobRequest], cluster: ClusterSnapshot) -> float:
    """Σ_i d_i: every job's fewest slots on ``cluster``."""
    return float(sum(shortest_realizable_slots(j, cluster) for j in jobs))


def srpt_total(releases: Sequence[float], sizes: Sequence[float]) -> float:
    """Σ_i (C_i − r_i) of preemptive SRPT on one unit-speed machine."""
    order = sorted(range(len(sizes)), key=lambda i: releases[i])
    heap: list[tuple[float, int]] = []  # (remaining, job)
    t = 0.0
    total = 0.0
    k = 0
    n = len(order)
    while k < n or heap:
        if not heap:
            t = max(t, releases[order[k]])
        while k < n and releases[order[k]] <= t:
            i = order[k]
            heapq.heappush(heap, (sizes[i], i))
            k += 1
        remaining, i = heapq.heappop(heap)
        nxt = releases[order[k]] if k < n else float("inf")
        if t + remaining <= nxt:
            t += remaining
            total += t - releases[i]
        else:
            heapq.heappush(heap, (remaining - (nxt - t), i))
            t = nxt
    return total


def pooled_srpt(jobs: Sequence[JobRequest], cluster: ClusterSnapshot) -> float:
    """The pooled-resource bound (module docstring), the largest over the resources."""
    total = cluster.total_capacity().as_tuple()
    delta = cluster.slot_seconds
    best = 0.0
    for r, cap in enumerate(total):
        if cap <= 0:
            continue
        sizes = [j.workload * j.worker.as_tuple()[r] / (j.profile.nu_in(delta) * cap) for j in jobs]
        if not any(sizes):
            continue
        best = max(best, srpt_total([float(j.arrival_slot) for j in jobs], sizes))
    return best


def scalable_bound(jobs: Sequence[JobRequest], cluster: ClusterSnapshot) -> tuple[float, str]:
    """max(shortest runs, pooled SRPT per resource) and which one it was."""
    short = shortest_runs(jobs, cluster)
    pooled = pooled_srpt(jobs, cluster)
    if pooled > short:
        return pooled, "pooled-resource SRPT"
    return short, "shortest runs"
