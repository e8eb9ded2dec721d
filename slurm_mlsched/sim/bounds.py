r"""A lower bound on the total completion time that scales to whole traces (pure).

The LP relaxation of MODEL.md §3 (``placement.program.lp_bound``) grows as jobs ×
machines × slots and is solved only for small replays. For any number of jobs, these
bounds hold for every schedule the simulator accepts, elastic or not, of every policy
(the proof, with the simulator's rules it relies on, is docs/formulation.md §15):

* **shortest runs**: job i's term e_i − a_i + 1 is at least d_i = its fewest slots on this
  cluster, so Σ_i d_i is a bound. A job runs in one mode per slot: co-located, all its
  workers and one PS on one machine (at most w_c = the most workers one machine holds
  beside a PS, and at most N), or distributed at the network rate (at most
  w_d = min(N_D, the workers the whole cluster holds)); so
  d_i = ⌈V_i / max(w_c·ν_in, w_d·ν_ex)⌉ — tighter than N workers co-located (a
  32-worker job on 4-GPU machines never runs co-located at 32);
* **pooled resource** (one per resource r with capacity C_r > 0 in the cluster): in a
  slot job i holds at least c_i^r of r per mini-batch it trains (its cheapest mode:
  co-located α_r/ν_in + β_r/(w_c·ν_in), distributed α_r/ν_ex + β_r·max(ρ, 1/w_d)/ν_ex,
  ρ = PSs per worker), so it needs p_i^r = V_i·c_i^r / C_r slots of the whole cluster's r,
  and in each slot the jobs together use at most all of it. That is one machine of unit
  speed on which job i has processing time p_i^r and release a_i; preemptive
  shortest-remaining-processing-time (SRPT) there completes at least as many jobs by
  every time t as any schedule does (Schrage 1968), so the k-th smallest completion of
  any schedule is at least SRPT's k-th, S^r_(k);
* **by rank** (:func:`rank_bound`): completions are whole slots, so with C_i = e_i + 1
  the k-th smallest C is ≥ max(L_(k), max_r ⌈S^r_(k)⌉), L_i = a_i + d_i (the k-th
  smallest of values each ≥ L_i is ≥ L_(k)); summed over k and less Σ a_i, that bounds
  Σ_i (e_i − a_i + 1). It is at least each of the two sums above.

:func:`scalable_bound` is the larger of the rank bound and the pooled LP with rate caps
(:mod:`.capped_bound`, which keeps each job's own speed limit on the pool: on traces of
long narrow jobs it is the higher one). Both ignore locality and the PSs' placement, so
they are weak when a cluster is idle (then the shortest runs dominate) and tight when one
resource is the bottleneck of a busy cluster. Each job's own limits (widths, d_i, c_i^r)
are in :mod:`.job_bounds`.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..errors import BelowBoundError
from ..model import ClusterSnapshot, JobRequest
from .capped_bound import capped_bound
from .job_bounds import (
    SLACK,
    Widths,
    cost_per_batch,
    fewest_slots,
    job_widths,
    max_rate,
    widths,
)

FloatArray = npt.NDArray[np.float64]

__all__ = [
    "SLACK",
    "BoundParts",
    "Widths",
    "bound_parts",
    "check_not_below",
    "cost_per_batch",
    "fewest_slots",
    "max_rate",
    "pooled_srpt",
    "rank_bound",
    "scalable_bound",
    "shortest_runs",
    "srpt_completions",
    "srpt_total",
    "widths",
]


def srpt_completions(releases: Sequence[float], sizes: Sequence[float]) -> list[float]:
    """Each job's completion time under preemptive SRPT on one unit-speed machine."""
    order = sorted(range(len(sizes)), key=lambda i: releases[i])
    done = [0.0] * len(sizes)
    heap: list[tuple[float, int]] = []  # (remaining, job)
    t = 0.0
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
            done[i] = t
        else:
            heapq.heappush(heap, (remaining - (nxt - t), i))
            t = nxt
    return done


def srpt_total(releases: Sequence[float], sizes: Sequence[float]) -> float:
    """Σ_i (C_i − r_i) of preemptive SRPT on one unit-speed machine."""
    return sum(c - r for c, r in zip(srpt_completions(releases, sizes), releases, strict=True))


@dataclass(frozen=True)
class BoundParts:
    """What the bounds are made of: every job's arrival a_i and fewest slots d_i, and per
    pooled resource its SRPT completions S_i^r (job order)."""

    arrivals: tuple[float, ...]
    fewest: tuple[int, ...]
    srpt: tuple[tuple[float, ...], ...]

    @property
    def shortest_runs(self) -> float:
        return float(sum(self.fewest))

    @property
    def pooled(self) -> float:
        return max(
            (sum(c - a for c, a in zip(s, self.arrivals, strict=True)) for s in self.srpt),
            default=0.0,
        )

    @property
    def by_rank(self) -> float:
        """Σ_k max(L_(k), max_r ⌈S^r_(k)⌉) − Σ_i a_i (module docstring, "by rank")."""
        if not self.arrivals:
            return 0.0
        ends = np.sort(np.add(self.arrivals, self.fewest, dtype=np.float64))
        for done in self.srpt:
            ranked = np.sort(np.array(done, dtype=np.float64))
            ends = np.maximum(ends, np.ceil(ranked * (1 - SLACK) - 1e-6))
        return float(ends.sum() - sum(self.arrivals))


def bound_parts(
    jobs: Sequence[JobRequest], cluster: ClusterSnapshot, shapes: Sequence[Widths] | None = None
) -> BoundParts:
    """:class:`BoundParts` of ``jobs`` on ``cluster`` (each job's widths counted once, or
    given as ``shapes``)."""
    delta = cluster.slot_seconds
    if shapes is None:
        shapes = job_widths(jobs, cluster)
    arrivals = tuple(float(j.arrival_slot) for j in jobs)
    costs = [cost_per_batch(j, w, delta) for j, w in zip(jobs, shapes, strict=True)]
    srpt = []
    for r, cap in enumerate(cluster.total_capacity().as_tuple()):
        if cap <= 0:
            continue
        sizes = [j.workload * c[r] / cap for j, c in zip(jobs, costs, strict=True)]
        if any(sizes):
            srpt.append(tuple(srpt_completions(arrivals, sizes)))
    fewest = tuple(fewest_slots(j, w, delta) for j, w in zip(jobs, shapes, strict=True))
    return BoundParts(arrivals, fewest, tuple(srpt))


def shortest_runs(jobs: Sequence[JobRequest], cluster: ClusterSnapshot) -> float:
    """Σ_i d_i: every job's fewest slots on ``cluster``."""
    return bound_parts(jobs, cluster).shortest_runs


def pooled_srpt(jobs: Sequence[JobRequest], cluster: ClusterSnapshot) -> float:
    """The pooled-resource bound Σ_i (S_i − a_i), the largest over the resources."""
    return bound_parts(jobs, cluster).pooled


def rank_bound(jobs: Sequence[JobRequest], cluster: ClusterSnapshot) -> float:
    """The bound by rank (module docstring)."""
    return bound_parts(jobs, cluster).by_rank


def scalable_bound(
    jobs: Sequence[JobRequest], cluster: ClusterSnapshot, by_pieces: bool = True
) -> tuple[float, str]:
    """The largest of the rank bound, the two sums it combines (the rank bound is at
    least each, but for the slack of its rounding) and the pooled LP with rate caps
    (:mod:`.capped_bound`; ``by_pieces``: its duration term by pieces, the default),
    and which one it was."""
    shapes = job_widths(jobs, cluster)
    parts = bound_parts(jobs, cluster, shapes)
    short, pooled, rank = parts.shortest_runs, parts.pooled, parts.by_rank
    beat = max(short, pooled, rank)
    capped, how = (
        capped_bound(jobs, cluster, beat, shapes, by_pieces=by_pieces) if jobs else (0.0, "")
    )
    if capped > beat + 1e-9:
        return capped, how
    if rank > max(short, pooled) + 1e-9:
        return rank, "shortest runs and pooled SRPT by rank"
    if pooled > short:
        return pooled, "pooled-resource SRPT"
    return short, "shortest runs"


#: A total this far below the bound (relative, and at least an absolute 10⁻⁶ slots) is
#: below it: the LP bound comes from a solver with tolerances of about 10⁻⁷.
BOUND_TOLERANCE = 1e-6


def check_not_below(policy: str, total_slots: float, bound: float, jobs: int) -> None:
    """Raise :class:`~slurm_mlsched.errors.BelowBoundError` when a policy's total
    completion time Σ_i (e_i − a_i + 1) over ``jobs`` jobs is below the lower ``bound`` of
    the same jobs (docs/formulation.md §15: no feasible schedule is)."""
    if total_slots >= bound - BOUND_TOLERANCE * max(1.0, abs(bound)):
        return
    raise BelowBoundError(
        f"policy {policy!r} finished its {jobs} job(s) in {total_slots:g} completion slots, "
        f"below the lower bound {bound:.6g} that no feasible schedule can beat",
        hint=(
            "the bound, the policy or the simulator is wrong (a schedule over capacity, "
            "running before its arrival or short of its work); the replay's ratios to the "
            "bound cannot be trusted: please report it with the replay's command"
        ),
        context={"policy": policy, "total_slots": total_slots, "bound": bound, "jobs": jobs},
    )
