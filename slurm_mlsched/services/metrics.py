"""``mlsub metrics``: the values Prometheus scrapes, computed from the decision store (issue 29).

:func:`metric_values` is pure: the store's report rows (``SqlDecisionStore.report_rows``,
the read ``mlsub report`` uses), the time now and, when the live cluster was read, the
queue's plan against its lower bound (:class:`QueueBound`) in, one frozen
:class:`MetricValues` out. The Prometheus registry is built from it by a thin layer
(:mod:`.metrics_export`), so the figures are tested without the exporter and the
exporter without a store.

What is measured (docs/admin-guide.md, "Metrics", names the Prometheus series):

* the queue: decisions ``queued`` (waiting held in Slurm, late binding) and the wait of
  the oldest one (now − its creation);
* decisions by state (every state, zeros included);
* the runtime prediction error by model, over ``completed`` decisions: relative error
  ``|predicted − actual| / actual`` as a histogram (:data:`ERROR_BUCKETS`), the mean
  absolute error in seconds, the mean signed relative error (bias: > 0 = predicted too
  long); "predicted" as in ``mlsub report`` (``plan.predicted_runtime_s``), "actual" from
  the ``running`` transition to the end transition reconcile recorded;
* GPU-seconds planned vs used over the decisions that ran to an end (completed, failed,
  cancelled, with both times known): GPUs × the planned window, GPUs × the run;
* the queue now (live cluster only, :func:`queue_bound`): Σ planned completion time of
  the queued jobs over a lower bound of the same sum (``sim/bounds.scalable_bound``), and
  how long the re-plan step took (:func:`queue_bound_now`).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..storage import DecisionState, ReportRow
from .report import decision_row

if TYPE_CHECKING:  # the queue step loads the solver; only the live part needs it
    from ..model import ClusterSnapshot, Decision
    from ..placement.late_binding import QueueStep
    from ..slurm.nodes import NodeState
    from ..storage import DecisionStore
    from .replan import QueueEntry

#: Upper bounds of the relative prediction error histogram (``le``; +Inf is added).
ERROR_BUCKETS: tuple[float, ...] = (0.05, 0.1, 0.2, 0.3, 0.5, 1.0, 2.0)

_ENDED = ("completed", "failed", "cancelled")


@dataclass(frozen=True)
class ModelError:
    """The runtime prediction error of one model over its completed runs."""

    model: str
    runs: int
    bucket_counts: tuple[int, ...]  # cumulative, one per ERROR_BUCKETS bound, then +Inf
    relative_error_sum: float
    mean_abs_error_s: float
    mean_relative_bias: float

    def to_json(self) -> dict[str, object]:
        return {
            "model": self.model,
            "runs": self.runs,
            "buckets": {
                **{f"{b:g}": c for b, c in zip(ERROR_BUCKETS, self.bucket_counts, strict=False)},
                "+Inf": self.bucket_counts[-1],
            },
            "relative_error_sum": round(self.relative_error_sum, 6),
            "mean_abs_error_seconds": round(self.mean_abs_error_s, 3),
            "mean_relative_bias": round(self.mean_relative_bias, 6),
        }


@dataclass(frozen=True)
class QueueBound:
    """The queue now, planned against a lower bound of the same objective.

    ``planned_s``: Σ over the queued jobs of (planned end − arrival) in seconds, with the
    plan the re-plan step gives now (a job it starts or reserves) or the job's stored
    tentative plan, moved to start no earlier than now; ``bound_s``: the waits so far plus
    ``scalable_bound`` of the same jobs released now (no schedule of them can do better);
    ``step_s``: how long the re-plan step took (None when not timed)."""

    jobs: int
    planned_s: float
    bound_s: float
    bound_kind: str
    step_s: float | None = None

    @property
    def ratio(self) -> float | None:
        return self.planned_s / self.bound_s if self.bound_s > 0 else None

    def to_json(self) -> dict[str, object]:
        ratio = self.ratio
        return {
            "jobs": self.jobs,
            "planned_completion_seconds": round(self.planned_s, 3),
            "bound_completion_seconds": round(self.bound_s, 3),
            "bound": self.bound_kind,
            "ratio": None if ratio is None else round(ratio, 6),
            "replan_step_seconds": None if self.step_s is None else round(self.step_s, 6),
        }


@dataclass(frozen=True)
class MetricValues:
    """Everything ``mlsub metrics`` exports, for one cluster at one time."""

    cluster_name: str
    generated_at: datetime
    decisions_by_state: Mapping[str, int]
    queue_length: int
    oldest_wait_s: float
    errors: tuple[ModelError, ...]
    gpu_planned_s: float
    gpu_used_s: float
    runs_measured: int
    live_up: bool = False
    queue: QueueBound | None = None
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, object]:
        return {
            "cluster_name": self.cluster_name,
            "generated_at": self.generated_at.isoformat(),
            "decisions_by_state": dict(self.decisions_by_state),
            "queue_length": self.queue_length,
            "oldest_wait_seconds": round(self.oldest_wait_s, 3),
            "prediction_error_by_model": [e.to_json() for e in self.errors],
            "gpu_planned_seconds": round(self.gpu_planned_s, 3),
            "gpu_used_seconds": round(self.gpu_used_s, 3),
            "runs_measured": self.runs_measured,
            "live_cluster_up": self.live_up,
            "queue_now": None if self.queue is None else self.queue.to_json(),
            "notes": list(self.notes),
        }


def metric_values(
    rows: Sequence[ReportRow],
    *,
    now: datetime,
    cluster_name: str,
    queue: QueueBound | None = None,
    live_up: bool = False,
    notes: Sequence[str] = (),
) -> MetricValues:
    """The exported values of ``rows`` at ``now`` (pure)."""
    decoded = [decision_row(r) for r in rows]
    by_state = {s.value: 0 for s in DecisionState}
    for d in decoded:
        by_state[d["s"]] = by_state.get(d["s"], 0) + 1
    waiting = [r.summary.created_at for r in rows if r.summary.state == DecisionState.QUEUED]
    oldest = max(0.0, (now - min(waiting)).total_seconds()) if waiting else 0.0
    planned, used, ran = _gpu_seconds(decoded)
    return MetricValues(
        cluster_name=cluster_name,
        generated_at=now,
        decisions_by_state=by_state,
        queue_length=len(waiting),
        oldest_wait_s=oldest,
        errors=prediction_errors(decoded),
        gpu_planned_s=planned,
        gpu_used_s=used,
        runs_measured=ran,
        live_up=live_up,
        queue=queue,
        notes=tuple(notes),
    )


def prediction_errors(decoded: Sequence[Mapping[str, Any]]) -> tuple[ModelError, ...]:
    """Per model (sorted by name), over completed decisions with both runtimes known."""
    pairs: dict[str, list[tuple[float, float]]] = {}
    for d in decoded:
        if d["s"] == "completed" and d["pr"] and d["ar"] and d["ar"] > 0:
            pairs.setdefault(d["m"] or "unknown", []).append((d["pr"], d["ar"]))
    out = []
    for model, runs in sorted(pairs.items()):
        relative = [abs(p - a) / a for p, a in runs]
        counts = tuple(sum(1 for e in relative if e <= b) for b in ERROR_BUCKETS)
        out.append(
            ModelError(
                model=model,
                runs=len(runs),
                bucket_counts=(*counts, len(runs)),
                relative_error_sum=sum(relative),
                mean_abs_error_s=statistics.fmean(abs(p - a) for p, a in runs),
                mean_relative_bias=statistics.fmean((p - a) / a for p, a in runs),
            )
        )
    return tuple(out)


def _gpu_seconds(decoded: Sequence[Mapping[str, Any]]) -> tuple[float, float, int]:
    """GPU-seconds planned and used over the decisions that ran to an end, and how many."""
    planned = used = 0.0
    ran = 0
    for d in decoded:
        times = (d["ps"], d["pe"], d["as"], d["ae"])
        if d["s"] not in _ENDED or any(t is None for t in times):
            continue
        ran += 1
        planned += d["g"] * max(0.0, d["pe"] - d["ps"])
        used += d["g"] * max(0.0, d["ae"] - d["as"])
    return planned, used, ran


# --- the queue now: its plan against a lower bound ------------------------------------------------


def queue_bound(
    entries: Sequence[QueueEntry], step: QueueStep, snapshot: ClusterSnapshot
) -> QueueBound | None:
    """The queued jobs' planned completion against a lower bound of it (pure).

    Each job's plan is the step's (started now, or a reserved head's tentative plan), else
    its stored plan on the snapshot's grid (``QueueEntry.plan``); a plan whose start has
    passed is moved to start now (the job has not started). A job with neither (its
    stored plan on another slot length) is left out of both sums. The bound: Σ (now − a_i)
    waited so far plus ``scalable_bound`` of the same jobs released now, since no job can
    start before now. None when no queued job has a plan."""
    from ..sim.bounds import scalable_bound

    chosen: dict[str, Decision] = {d.job_id: d for d in step.planned}
    chosen.update({d.job_id: d for d in step.started})
    now = snapshot.now_slot
    planned_slots = 0.0
    waited = 0.0
    released = []
    for e in entries:
        plan = chosen.get(e.key, e.plan)
        if plan is None:
            continue
        a = e.request.arrival_slot
        end = plan.end_slot + max(0, now - plan.start_slot)
        planned_slots += end - a + 1
        waited += max(0, now - a)
        released.append(replace(e.request, arrival_slot=max(a, now)))
    if not released:
        return None
    bound, kind = scalable_bound(released, snapshot)
    delta = snapshot.slot_seconds
    return QueueBound(len(released), planned_slots * delta, (waited + bound) * delta, kind)


def queue_bound_now(
    store: DecisionStore,
    state: NodeState,
    *,
    now: datetime,
    cluster_name: str,
    slot_seconds: float,
    timer: Callable[[], float],
) -> QueueBound | None:
    """One re-plan step over the cluster's queued decisions on the live snapshot (read in
    one store snapshot without the planning lock; nothing is recorded or started, as for
    ``mlsub queue``), timed with ``timer`` (seconds, monotonic), and its :func:`queue_bound`."""
    from .replan import queue_step, rebased
    from .submit import stored_and_running

    with store.viewing(cluster_name) as tx:
        cluster = stored_and_running(tx, state, now, slot_seconds, cluster_name)
        entries = [rebased(r, cluster.snapshot) for r in tx.queued()]
    started = timer()
    step, _ = queue_step(entries, cluster.snapshot)
    took = timer() - started
    result = queue_bound(entries, step, cluster.snapshot)
    return None if result is None else replace(result, step_s=took)
