"""The Prometheus side of ``mlsub metrics``: :class:`~.metrics.MetricValues` as metric
families of prometheus_client, in the text exposition format (:func:`exposition`) or on a
scrape endpoint (:func:`serve`). Thin: every figure comes from :mod:`.metrics`.

Names follow Prometheus's conventions: the ``mlsub_`` prefix, base units in the name
(``_seconds``, ``_ratio``), ``_total`` on counters; every series carries the label
``cluster``. :data:`METRIC_NAMES` lists every family (docs/admin-guide.md, "Metrics";
the Grafana dashboard in plugins/grafana/ reads them).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)

from .metrics import ERROR_BUCKETS, MetricValues

#: Every family ``mlsub metrics`` can emit (the queue-now ones only with the live cluster).
METRIC_NAMES: tuple[str, ...] = (
    "mlsub_decisions",
    "mlsub_queue_length",
    "mlsub_queue_oldest_wait_seconds",
    "mlsub_runtime_prediction_error_ratio",
    "mlsub_runtime_prediction_mean_abs_error_seconds",
    "mlsub_runtime_prediction_bias_ratio",
    "mlsub_gpu_planned_seconds",
    "mlsub_gpu_used_seconds",
    "mlsub_runs_measured",
    "mlsub_live_cluster_up",
    "mlsub_queue_plan_bound_ratio",
    "mlsub_queue_planned_completion_seconds",
    "mlsub_queue_bound_completion_seconds",
    "mlsub_queue_busy_ratio",
    "mlsub_replan_step_duration_seconds",
    "mlsub_metrics_generated_timestamp_seconds",
)


def families(v: MetricValues) -> list[Metric]:
    """The metric families of ``v`` (every series labelled with its cluster)."""
    c = [v.cluster_name]
    out: list[Metric] = []

    def gauge(name: str, doc: str, value: float) -> None:
        g = GaugeMetricFamily(name, doc, labels=["cluster"])
        g.add_metric(c, value)
        out.append(g)

    states = GaugeMetricFamily(
        "mlsub_decisions", "Stored decisions by state.", labels=["cluster", "state"]
    )
    for state, n in sorted(v.decisions_by_state.items()):
        states.add_metric([*c, state], n)
    out.append(states)
    gauge("mlsub_queue_length", "Decisions queued (waiting held in Slurm).", v.queue_length)
    gauge(
        "mlsub_queue_oldest_wait_seconds",
        "Time the oldest queued decision has waited (0 with an empty queue).",
        v.oldest_wait_s,
    )
    out.extend(_error_families(v))
    planned = CounterMetricFamily(
        "mlsub_gpu_planned_seconds",
        "GPU-seconds planned (GPUs x planned window) of the decisions that ran to an end.",
        labels=["cluster"],
    )
    planned.add_metric(c, v.gpu_planned_s)
    used = CounterMetricFamily(
        "mlsub_gpu_used_seconds",
        "GPU-seconds used (GPUs x run time) by the decisions that ran to an end.",
        labels=["cluster"],
    )
    used.add_metric(c, v.gpu_used_s)
    out += [planned, used]
    runs = CounterMetricFamily(
        "mlsub_runs_measured",
        "Decisions that ran to an end with both times known.",
        labels=["cluster"],
    )
    runs.add_metric(c, v.runs_measured)
    out.append(runs)
    gauge("mlsub_live_cluster_up", "1 if the live cluster was read for the queue now.", v.live_up)
    if v.queue is not None:
        q = v.queue
        if q.ratio is not None:
            gauge(
                "mlsub_queue_plan_bound_ratio",
                "The queue's planned completion time from now over its lower bound (>= 1).",
                q.ratio,
            )
        gauge(
            "mlsub_queue_planned_completion_seconds",
            "Sum over the waiting jobs with an estimate of estimated end - now.",
            q.planned_s,
        )
        gauge(
            "mlsub_queue_bound_completion_seconds",
            "A lower bound of that sum for every schedule keeping the running jobs.",
            q.bound_s,
        )
        gauge(
            "mlsub_queue_busy_ratio",
            "Share of GPU-slots (CPU-slots without GPUs) held until the last estimated end.",
            q.busy,
        )
        if q.step_s is not None:
            gauge(
                "mlsub_replan_step_duration_seconds",
                "Time one re-plan step over the queue took (placement only).",
                q.step_s,
            )
    gauge(
        "mlsub_metrics_generated_timestamp_seconds",
        "When these values were computed (Unix time).",
        v.generated_at.timestamp(),
    )
    return out


def _error_families(v: MetricValues) -> list[Metric]:
    labels = ["cluster", "model"]
    hist = HistogramMetricFamily(
        "mlsub_runtime_prediction_error_ratio",
        "Relative runtime prediction error |predicted - actual| / actual of completed runs.",
        labels=labels,
    )
    mae = GaugeMetricFamily(
        "mlsub_runtime_prediction_mean_abs_error_seconds",
        "Mean absolute runtime prediction error of completed runs.",
        labels=labels,
    )
    bias = GaugeMetricFamily(
        "mlsub_runtime_prediction_bias_ratio",
        "Mean (predicted - actual) / actual of completed runs (> 0: predicted too long).",
        labels=labels,
    )
    for e in v.errors:
        key = [v.cluster_name, e.model]
        bounds = [f"{b:g}" for b in ERROR_BUCKETS] + ["+Inf"]
        hist.add_metric(
            key, list(zip(bounds, e.bucket_counts, strict=True)), sum_value=e.relative_error_sum
        )
        mae.add_metric(key, e.mean_abs_error_s)
        bias.add_metric(key, e.mean_relative_bias)
    return [hist, mae, bias]


class _Collector:
    """A registry collector that asks ``values`` at each collection."""

    def __init__(self, values: Callable[[], MetricValues]) -> None:
        self._values = values

    def collect(self) -> Iterator[Metric]:
        yield from families(self._values())


def registry_of(values: Callable[[], MetricValues]) -> CollectorRegistry:
    """A registry of its own (not the process-wide default) with mlsub's families only."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(values))
    return registry


def exposition(v: MetricValues) -> bytes:
    """``v`` in the Prometheus text exposition format (version 0.0.4)."""
    return generate_latest(registry_of(lambda: v))


class Cached:
    """``compute`` at most once every ``min_interval_s`` (``timer``: monotonic seconds),
    one computation at a time: scrapes that come faster get the last values, so a scraper
    cannot make the store or Slurm busier than one read per interval."""

    def __init__(
        self, compute: Callable[[], MetricValues], min_interval_s: float, timer: Callable[[], float]
    ) -> None:
        self._compute = compute
        self._interval = min_interval_s
        self._timer = timer
        self._lock = threading.Lock()
        self._last: tuple[float, MetricValues] | None = None

    def __call__(self) -> MetricValues:
        with self._lock:
            now = self._timer()
            if self._last is None or now - self._last[0] >= self._interval:
                self._last = (now, self._compute())
            return self._last[1]


@dataclass(frozen=True)
class Serving:
    """A scrape endpoint that runs (``address``, ``port``: the bound ones)."""

    address: str
    port: int
    stop: Callable[[], None]


def serve(values: Callable[[], MetricValues], *, port: int, address: str) -> Serving:
    """Serve the families of ``values()`` (computed per scrape) on ``address:port`` (port
    0: a free one) in a daemon thread; ``Serving.stop`` shuts it down."""
    from prometheus_client import start_http_server

    server, thread = start_http_server(port, address, registry_of(values))

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return Serving(address, int(server.server_port), stop)
