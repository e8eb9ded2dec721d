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
* the queue now (live cluster only, :func:`queue_bound_now`): one re-plan step over the
  queued decisions, timed, and the queue's plan ÷ lower bound over what it left
  (``sim/queue_estimate.estimate_queue``, the figure ``mlsub queue`` shows).
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
    from ..model.gpu_speed import GpuSpeeds
    from ..sim.queue_estimate import QueueEstimate
    from ..slurm.nodes import NodeState
    from ..storage import DecisionStore
    from .replan import ViewPreemption

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
    """The queue now, planned against a lower bound (``sim/queue_estimate``, the estimate
    ``mlsub queue`` shows; docs/formulation.md §14.9).

    ``planned_s``: Σ over the waiting jobs with an estimate of their remaining term from
    now (estimated end − now), in seconds; ``bound_s``: a lower bound of that sum for every
    schedule that keeps the running jobs and the reservations (the room they hold until
    their expected ends counted); ``ratio``: their quotient (≥ 1; 1.0 with an empty queue,
    None when no waiting job has an estimate); ``busy``: the share of GPU-slots (CPU-slots
    without GPUs) the plan keeps held until its last estimated end; ``step_s``: how long
    the re-plan step took (None when not timed)."""

    jobs: int
    estimated: int
    planned_s: float
    bound_s: float
    bound_kind: str
    ratio: float | None
    busy: float
    step_s: float | None = None

    def to_json(self) -> dict[str, object]:
        return {
            "jobs": self.jobs,
            "estimated": self.estimated,
            "planned_completion_seconds": round(self.planned_s, 3),
            "bound_completion_seconds": round(self.bound_s, 3),
            "bound": self.bound_kind,
            "ratio": None if self.ratio is None else round(self.ratio, 6),
            "busy": round(self.busy, 6),
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


def queue_bound_now(
    store: DecisionStore,
    state: NodeState,
    *,
    now: datetime,
    cluster_name: str,
    slot_seconds: float,
    timer: Callable[[], float],
    preempt: ViewPreemption | None = None,
    gpu_speed: GpuSpeeds = (),
) -> QueueBound:
    """The queue now exactly as ``mlsub queue`` shows it (``replan.queue_view``: one
    re-plan step over the cluster's queued decisions, in their node groups, read in one
    store snapshot without the planning lock; nothing recorded or started), with the
    re-plan steps timed by ``timer`` (seconds, monotonic; the estimate is not counted),
    and the queue's plan ÷ lower bound (docs/formulation.md §14.9); ``preempt`` and
    ``gpu_speed`` as ``mlsub queue`` weighs them."""
    from .clock import FixedClock
    from .replan import queue_view

    view = queue_view(
        store, state, clock=FixedClock(now), cluster_name=cluster_name,
        slot_seconds=slot_seconds, user=None, timer=timer, preempt=preempt,
        gpu_speed=gpu_speed,
    )  # fmt: skip
    jobs = len(view.waiting) + len(view.would_start)
    return replace(of_estimate(view.bound, jobs), step_s=view.step_s)


def of_estimate(est: QueueEstimate | None, jobs: int) -> QueueBound:
    """The metric values of the queue's estimate (None: it could not be made)."""
    if est is None:
        return QueueBound(jobs, 0, 0.0, 0.0, "", None, 0.0)
    delta = est.slot_seconds
    return QueueBound(
        jobs=jobs,
        estimated=est.estimated,
        planned_s=est.plan_slots * delta,
        bound_s=est.bound_slots * delta,
        bound_kind=est.bound_kind,
        ratio=est.ratio,
        busy=est.busy,
    )
