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
from collections.abc import Sequence

import numpy as np

from ..model import ClusterSnapshot, JobRequest
from ..placement.list_schedule import fastest_run_slots


def shortest_runs(jobs: Sequence[JobRequest], cluster: ClusterSnapshot) -> float:
    """Σ_i d_i: every job's fewest slots on ``cluster``."""
    capacity = np.array([m.capacity.as_tuple() for m in cluster.machines], dtype=np.float64)
    return float(sum(fastest_run_slots(j, capacity, cluster.slot_seconds) for j in jobs))


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
