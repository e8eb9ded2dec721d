r"""Each job's own limits on a cluster (pure; docs/formulation.md §15.2–15.3): its widest
shapes, its fewest slots d_i and fastest rate R_i (Lemma 1), and the least of each resource
it holds per mini-batch trained, c_i^r (Lemma 2). The rank bound (:mod:`.bounds`) and the
pooled LP with rate caps (:mod:`.capped_bound`) are built from them."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ..model import JobRequest
from ..model.speed import upper_rate, upper_worker_rate
from ..placement.program.packing import fit_counts

FloatArray = npt.NDArray[np.float64]

#: Relative slack for work a schedule may leave uncovered in floating point
#: (``placement.verify`` accepts V·(1 − 10⁻⁹) − 10⁻⁶): every rounding up here gives way
#: by this much, so a bound never exceeds a schedule that the checks accept.
SLACK = 1e-8


@dataclass(frozen=True)
class Widths:
    """A job's widest shapes on a cluster: w_c co-located (0: no machine holds a worker
    beside a PS), w_d distributed (0: below the PS rule's minimum)."""

    colocated: int
    distributed: int


def widths(job: JobRequest, capacity: FloatArray) -> Widths:
    """:class:`Widths` of ``job`` on machines of ``capacity`` (H, 3), the same counting as
    ``placement.list_schedule.fastest_run_slots``."""
    alpha = np.array(job.worker.as_tuple())
    beta = np.array(job.ps.as_tuple())
    beside = capacity - beta
    fits_ps = (beside >= -1e-9).all(axis=1)
    colo = int(np.where(fits_ps, fit_counts(beside, alpha), 0).max(initial=0))
    dist = int(min(job.max_distributed_workers(), fit_counts(capacity, alpha).sum()))
    return Widths(min(colo, job.max_workers), dist if dist >= job.min_distributed_workers() else 0)


def max_rate(job: JobRequest, w: Widths, slot_seconds: float) -> float:
    """R_i = max(w_c·ν_in, w_d·ν_ex): the most mini-batches one slot trains (Lemma 1)."""
    if job.is_allreduce:  # no layout of at most max(w_c, w_d) workers is faster
        return upper_rate(job, max(w.colocated, w.distributed), slot_seconds)
    return max(
        w.colocated * job.profile.nu_in(slot_seconds),
        w.distributed * job.profile.nu_ex(slot_seconds),
    )


def fewest_slots(job: JobRequest, w: Widths, slot_seconds: float) -> int:
    """d_i = ⌈V / R_i⌉ ≥ 1, rounded up with :data:`SLACK`."""
    rate = max_rate(job, w, slot_seconds)
    if rate <= 0:  # never runs on this cluster (not admitted): the weakest true bound
        return 1
    runs = job.workload / rate
    return max(1, math.ceil(runs * (1 - SLACK) - 1e-9))


def cost_per_batch(job: JobRequest, w: Widths, slot_seconds: float) -> tuple[float, ...]:
    """c_i^r: the least of resource r held per mini-batch trained, over the modes the job
    can run in (module docstring), per r in (gpu, cpu, mem)."""
    alpha, beta = job.worker.as_tuple(), job.ps.as_tuple()
    if job.is_allreduce:  # no PS; a worker trains at most Δ/τ per slot in any layout
        if max(w.colocated, w.distributed) < 1:
            return (0.0, 0.0, 0.0)
        nu = upper_worker_rate(job, slot_seconds)
        return tuple(a / nu for a in alpha)
    options: list[tuple[float, ...]] = []
    if w.colocated >= 1:
        nu = job.profile.nu_in(slot_seconds)
        options.append(tuple((a + b / w.colocated) / nu for a, b in zip(alpha, beta, strict=True)))
    if w.distributed >= 1:
        nu = job.profile.nu_ex(slot_seconds)
        ps_share = max(job.profile.ps_per_worker * (1 - SLACK), 1.0 / w.distributed)
        options.append(tuple((a + b * ps_share) / nu for a, b in zip(alpha, beta, strict=True)))
    if not options:
        return (0.0, 0.0, 0.0)
    return tuple(min(o[r] for o in options) for r in range(3))
