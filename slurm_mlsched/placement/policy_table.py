"""Every placement policy, in one ordered table (docs/formulation.md §13.1, §14.1).

One row per form of a policy: its name (``--policy``), its kind, where it runs and the
function. The registry (:mod:`.registry`) reads this table and nothing else: a policy
exists because it has a row here, not because a module was imported. Three kinds, each
with one signature:

* **arrival**, :data:`~.params.ArrivalFn` ``(JobRequest, ClusterSnapshot,
  PlacementParams) -> Decision``: decide once, on the job's arrival, against the
  reservations in the snapshot; ``place()`` (live) and the replay call it. A row may carry
  a **prepare** hook, ``(requests, cluster, params) -> params``, which the replay calls once
  with all the jobs before the run (OASiS's price bounds U and L).
* **re-allocating**, :data:`ReallocateFn`: at every arrival and completion, the worker/PS
  counts and machines of every active job (``optimus``, ``drf``, ``tiresias``;
  :mod:`.baselines.reallocation`). Replay only: a Slurm job keeps its allocation. A row may
  carry a **wakeup** hook (:data:`WakeupFn`: Tiresias's demotions).
* **queue**, :data:`QueueFn`: late binding (MODEL.md §4b, :mod:`.yu_rr.late_binding`): at
  every event the waiting jobs are re-planned against the running ones; only what starts
  now is committed. The replay runs it, and the live queue (``mlsub replan``) through
  ``services``.

``yu-rr`` has two rows: its arrival form (``binding: early``, and ``place()``) and its
queue form (``binding: late``, the replay default); ``qssf`` has only the queue form.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from ..model import ClusterSnapshot, Decision, JobRequest
from .baselines.drf import reallocate_drf
from .baselines.fifo import place_fifo_bf, place_fifo_ff
from .baselines.oasis import VARIANT_POLICIES
from .baselines.oasis_prices import prepare_oasis
from .baselines.optimus import reallocate_optimus
from .baselines.qssf import replan_qssf
from .baselines.reallocation import Allocation, RunningJob
from .baselines.srtf import reallocate_srtf
from .baselines.tiresias import next_demotion, reallocate_tiresias
from .params import ArrivalFn, PlacementParams
from .program.integer_program import exact_policy
from .program.ring import settle, settle_on
from .yu_rr.joint import replan_yu_rr
from .yu_rr.late_binding import PendingJob, QueueStep
from .yu_rr.per_arrival import place_yu_rr

ReallocateFn = Callable[
    [tuple[RunningJob, ...], ClusterSnapshot, int, PlacementParams],
    tuple[Allocation | None, ...],
]
"""``reallocate(jobs, snapshot, slot, params)``: the allocation of every active job."""
QueueFn = Callable[
    [tuple[PendingJob, ...], ClusterSnapshot, PlacementParams, Sequence[JobRequest]], QueueStep
]
"""``queue(pending, snapshot, params, recent)``: ``recent`` holds the jobs that arrived in
the last ``params.lookahead_max_s`` seconds (waiting, running or done), in arrival order:
what a policy may forecast from (:mod:`.yu_rr.lookahead`)."""
WakeupFn = Callable[
    [tuple[RunningJob, ...], tuple[Allocation | None, ...], int, float, PlacementParams],
    int | None,
]
"""``wakeup(jobs, allocations, slot, slot_seconds, params)``: the next slot at which a
re-allocating policy wants to be called again although no job arrives or ends (Tiresias's
demotions), or None."""
PrepareFn = Callable[[Sequence[JobRequest], ClusterSnapshot, PlacementParams], PlacementParams]
"""``prepare(requests, cluster, params)``: ``params`` completed with trace-level constants."""


class Kind(StrEnum):
    """The three kinds of policy (the signatures above)."""

    ARRIVAL = "arrival"
    REALLOCATING = "re-allocating"
    QUEUE = "queue"


class Runs(StrEnum):
    """Where a form runs: ``live`` (``plan``, ``submit``, the live queue, and replay) or
    ``replay`` only."""

    LIVE = "live"
    REPLAY = "replay"


@dataclass(frozen=True)
class PolicyRow:
    """One form of one policy."""

    name: str
    kind: Kind
    runs: Runs
    fn: ArrivalFn | ReallocateFn | QueueFn
    prepare: PrepareFn | None = None
    wakeup: WakeupFn | None = None


def settled(fn: ArrivalFn) -> ArrivalFn:
    """``fn`` with its allreduce decisions settled against the snapshot's room
    (:func:`.program.ring.settle_on`: no PS, the fastest ring layout, the formula's end);
    a ``ps`` job's decision unchanged."""

    @functools.wraps(fn)
    def arrival(job: JobRequest, snapshot: ClusterSnapshot, params: PlacementParams) -> Decision:
        decision = fn(job, snapshot, params)
        return settle_on(
            decision, job, snapshot, pack=params.allreduce_pack, shrink=params.allreduce_shrink
        )

    return arrival


def settled_queue(fn: QueueFn) -> QueueFn:
    """``fn`` with the allreduce decisions that start now timed by the formula
    (:func:`.program.ring.settle` without re-packing: the per-job decisions of a re-plan
    pack against the re-plan's own room, :mod:`.yu_rr.per_arrival`, :mod:`.baselines.qssf`)."""

    @functools.wraps(fn)
    def queue(
        pending: tuple[PendingJob, ...],
        snapshot: ClusterSnapshot,
        params: PlacementParams,
        recent: Sequence[JobRequest] = (),
    ) -> QueueStep:
        step = fn(pending, snapshot, params, recent)
        jobs = {p.request.job_id: p.request for p in pending}
        if not any(jobs[d.job_id].is_allreduce for d in step.started if d.job_id in jobs):
            return step
        started = tuple(
            settle(d, jobs[d.job_id], None, snapshot.slot_seconds, params.allreduce_shrink)
            if d.job_id in jobs
            else d
            for d in step.started
        )
        return replace(step, started=started)

    return queue


#: The table, in the order ``mlsub policies`` documents them: the paper's algorithm and its
#: offline reference, then the baselines of MODEL.md §6.
POLICIES: tuple[PolicyRow, ...] = (
    PolicyRow("yu-rr", Kind.ARRIVAL, Runs.LIVE, settled(place_yu_rr)),
    PolicyRow("yu-rr", Kind.QUEUE, Runs.LIVE, settled_queue(replan_yu_rr)),
    PolicyRow("exact", Kind.ARRIVAL, Runs.LIVE, settled(exact_policy)),
    PolicyRow("fifo-ff", Kind.ARRIVAL, Runs.LIVE, settled(place_fifo_ff)),
    PolicyRow("fifo-bf", Kind.ARRIVAL, Runs.LIVE, settled(place_fifo_bf)),
    *(
        PolicyRow(name, Kind.ARRIVAL, Runs.LIVE, settled(fn), prepare=prepare_oasis)
        for name, fn in VARIANT_POLICIES.items()
    ),
    PolicyRow("qssf", Kind.QUEUE, Runs.REPLAY, settled_queue(replan_qssf)),
    PolicyRow("optimus", Kind.REALLOCATING, Runs.REPLAY, reallocate_optimus),
    PolicyRow("drf", Kind.REALLOCATING, Runs.REPLAY, reallocate_drf),
    PolicyRow(
        "tiresias", Kind.REALLOCATING, Runs.REPLAY, reallocate_tiresias, wakeup=next_demotion
    ),
    PolicyRow("srtf", Kind.REALLOCATING, Runs.REPLAY, reallocate_srtf),
)
