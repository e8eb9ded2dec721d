"""A job's widest shapes on a set of machines and the fastest rate they give (pure;
docs/formulation.md §15.3, Lemma 1; §8 for the placement's own use).

One counting for every caller: the lower bounds (``sim.job_bounds``), the list schedules
and the queue estimate (``yu_rr.list_schedule.fastest_on``) and checkpoint-restart
preemption (``yu_rr.preemption.fastest_rate``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...model import JobRequest
from ...model.speed import upper_rate
from .packing import fit_counts

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Widths:
    """A job's widest shapes on some machines: w_c co-located (0: no machine holds a
    worker beside a PS), w_d distributed (0: below the PS rule's minimum)."""

    colocated: int
    distributed: int


def widths(job: JobRequest, capacity: FloatArray) -> Widths:
    """:class:`Widths` of ``job`` on machines of ``capacity`` (H, 3): w_c = the most workers
    one machine holds beside one PS (at most N), w_d = the most all machines hold (at most
    the PS rule's maximum), 0 below its minimum."""
    alpha = np.array(job.worker.as_tuple())
    beta = np.array(job.ps.as_tuple())
    beside = capacity - beta
    fits_ps = (beside >= -1e-9).all(axis=1)
    colo = int(np.where(fits_ps, fit_counts(beside, alpha), 0).max(initial=0))
    dist = int(min(job.max_distributed_workers(), fit_counts(capacity, alpha).sum()))
    return Widths(min(colo, job.max_workers), dist if dist >= job.min_distributed_workers() else 0)


def max_rate(job: JobRequest, w: Widths, slot_seconds: float) -> float:
    """R = max(w_c·ν_in, w_d·ν_ex): the most mini-batches one slot trains in one constant
    shape (an allreduce job: no layout of at most max(w_c, w_d) workers is faster,
    docs/formulation.md §18.2)."""
    if job.is_allreduce:
        return upper_rate(job, max(w.colocated, w.distributed), slot_seconds)
    return max(
        w.colocated * job.profile.nu_in(slot_seconds),
        w.distributed * job.profile.nu_ex(slot_seconds),
    )
