"""How fast a job trains in a slot, for both architectures (pure; docs/formulation.md §1, §18).

One place for the time model every policy, the simulator and the bounds read:

* :func:`worker_rates` — the per-worker rates (ν_in, ν_ex) the linear programs and the
  baselines count workers at. A ``ps`` job: Δ/θ_in and Δ/θ_ex (MODEL.md §2, exact). An
  ``allreduce`` job: the floors of :func:`.allreduce.worker_rate_floors` — the lowest
  per-worker rate of any layout on one node, and on several — so a schedule counted at
  them covers at least the work it promises;
* :func:`plan_rate` — the exact work per slot of one run of a decision: W·ν_mode for a
  ``ps`` job, the ring formula of the run's layout for an ``allreduce`` job;
* :func:`upper_worker_rate` and :func:`upper_rate` — what no layout beats (the bounds).
"""

from __future__ import annotations

from collections.abc import Sequence

from . import allreduce
from .decision import Mode, SlotPlan
from .job import JobRequest


def worker_rates(job: JobRequest, slot_seconds: float) -> tuple[float, float]:
    """(ν_in, ν_ex): mini-batches per slot one worker adds co-located and distributed."""
    if job.is_allreduce:
        return allreduce.worker_rate_floors(job.max_workers, job.profile, slot_seconds)
    return job.profile.nu_in(slot_seconds), job.profile.nu_ex(slot_seconds)


def worker_thetas(job: JobRequest, slot_seconds: float) -> tuple[float, float]:
    """(θ_in, θ_ex): seconds per mini-batch per worker at :func:`worker_rates` (a ``ps``
    job: the profile's own θ_in, θ_ex, exactly)."""
    if not job.is_allreduce:
        return job.profile.theta_in, job.profile.theta_ex
    nu_in, nu_ex = worker_rates(job, slot_seconds)
    return slot_seconds / nu_in, slot_seconds / nu_ex


def layout_rate(job: JobRequest, counts: Sequence[int], mode: Mode, slot_seconds: float) -> float:
    """Mini-batches per slot of ``counts`` workers per node (nodes with 0 left out)."""
    used = [int(c) for c in counts if c > 0]
    if not used:
        return 0.0
    if job.is_allreduce:
        return allreduce.rate(used, job.profile, slot_seconds)
    nu_in, nu_ex = worker_rates(job, slot_seconds)
    return sum(used) * (nu_in if mode is Mode.COLOCATED else nu_ex)


def plan_rate(plan: SlotPlan, job: JobRequest, slot_seconds: float) -> float:
    """Mini-batches per slot of one run (the exact rate of its layout)."""
    return layout_rate(job, [c for _, c in plan.workers], plan.mode, slot_seconds)


def upper_worker_rate(job: JobRequest, slot_seconds: float) -> float:
    """No worker of ``job`` adds more per slot than this in any layout (``ps``: ν_in;
    ``allreduce``: Δ/τ, a worker with no one to talk to)."""
    if job.is_allreduce:
        return slot_seconds / job.profile.step_time_s
    return job.profile.nu_in(slot_seconds)


def upper_rate(job: JobRequest, workers: int, slot_seconds: float) -> float:
    """No layout of at most ``workers`` workers runs faster than this (0 for none)."""
    if workers < 1:
        return 0.0
    if job.is_allreduce:
        return allreduce.best_rate(workers, job.profile, slot_seconds)
    return workers * job.profile.nu_in(slot_seconds)
