"""``qssf``: quasi-shortest-service-first (Helios, Hu et al., SC'21), the ablation of
late-binding ``yu-rr`` (MODEL.md §6; docs/formulation.md §14).

The same queue as ``yu-rr`` under late binding: at every event the waiting jobs are
taken in :mod:`~slurm_mlsched.placement.yu_rr.queue_order` order (expected service, smallest
first, with the same aging; given the same duration knowledge as ``yu-rr``), the first
``reserve_depth`` of those that cannot start now hold a tentative plan later jobs may not
delay, and a job starts as soon as it fits. Non-preemptive. What differs from ``yu-rr``
is only the per-job decision: the trace's requested width (all N workers and the PSs a
distributed run needs) laid out first-fit in node order, as plain Slurm does
(:func:`.fifo.earliest_layout`), instead of the LP's choice of width, mode and machines.
So ``yu-rr`` ÷ ``qssf`` measures what the placement adds on top of the queue order.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...model import ClusterSnapshot, Decision, JobRequest
from ..params import PlacementParams
from ..program.residual import Residual
from ..program.ring import settle_on
from ..yu_rr.late_binding import PendingJob, QueueStep, replan_queue
from .fifo import place_first_fit

POLICY = "qssf"


def _decide(
    job: JobRequest,
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    residual: Residual | None = None,
) -> Decision:
    decision = place_first_fit(job, snapshot, params, POLICY, fcfs=False)
    return settle_on(
        decision, job, snapshot, pack=params.allreduce_pack, shrink=params.allreduce_shrink
    )


def replan_qssf(
    pending: tuple[PendingJob, ...],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    recent: Sequence[JobRequest] = (),
) -> QueueStep:
    """The waiting jobs in queue order, each at its requested width, first fit (it chooses
    no width: no screen, no look-ahead)."""
    return replan_queue(pending, snapshot, params, _decide, recent)
