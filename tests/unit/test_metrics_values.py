"""``mlsub metrics`` (issue 29, item 2): the values computed from a real SQLite store with
decisions in several states (filled through the live path with stand-ins for Slurm), the
exposition read back with prometheus_client's own parser, the queue's plan against its
lower bound, and the Grafana dashboard naming only emitted series."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slurm_mlsched.services.metrics import (
    ERROR_BUCKETS,
    MetricValues,
    QueueBound,
    metric_values,
    queue_bound_now,
)
from slurm_mlsched.services.metrics_export import METRIC_NAMES, Cached, exposition
from slurm_mlsched.storage import DecisionState, HistoryFilter, SqlDecisionStore, open_store
from tests.unit.test_replan_service import fill_and_queue
from tests.unit.test_submit_service import NOW, FakeSource

S = DecisionState
ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "plugins" / "grafana" / "mlsub-dashboard.json"
LATER = NOW + timedelta(hours=1)


@pytest.fixture
def store(tmp_path: Path) -> SqlDecisionStore:
    return open_store(f"sqlite:///{tmp_path / 'd.db'}", grace_s=0.0)


def several_states(store: SqlDecisionStore, tmp_path: Path) -> list[int]:
    """Five decisions: completed (300 s), failed (120 s), cancelled before it ran,
    running, queued."""
    _sub, ids = fill_and_queue(store, tmp_path)
    start = NOW + timedelta(seconds=30)
    store.transition(ids[0], S.RUNNING, start, "slurm: running")
    store.transition(ids[0], S.COMPLETED, start + timedelta(seconds=300), "slurm: completed")
    store.transition(ids[1], S.RUNNING, start, "slurm: running")
    store.transition(ids[1], S.FAILED, start + timedelta(seconds=120), "slurm: failed")
    store.transition(ids[2], S.CANCELLED, start, "scancel")
    store.transition(ids[3], S.RUNNING, start, "slurm: running")
    return ids


def values_of(store: SqlDecisionStore, queue: QueueBound | None = None) -> MetricValues:
    rows = store.report_rows(HistoryFilter(cluster="lab"))
    return metric_values(rows, now=LATER, cluster_name="lab", queue=queue, live_up=True)


def test_values_from_a_store_with_decisions_in_several_states(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    ids = several_states(store, tmp_path)
    v = values_of(store)
    assert {k: n for k, n in v.decisions_by_state.items() if n} == {
        "completed": 1, "failed": 1, "cancelled": 1, "running": 1, "queued": 1,
    }  # fmt: skip
    assert set(v.decisions_by_state) == {s.value for s in S}  # zeros included
    queued = store.get(ids[4]).summary
    assert v.queue_length == 1
    assert v.oldest_wait_s == (LATER - queued.created_at).total_seconds() > 0
    # the prediction error: the completed run only, against its predicted runtime
    (model,) = v.errors
    rows = {r.summary.decision_id: r for r in store.report_rows(HistoryFilter(cluster="lab"))}
    from slurm_mlsched.services.report import decision_row

    done = decision_row(rows[ids[0]])
    error = abs(done["pr"] - 300.0) / 300.0
    assert model.runs == 1 and model.relative_error_sum == pytest.approx(error)
    assert model.mean_abs_error_s == pytest.approx(abs(done["pr"] - 300.0))
    assert model.mean_relative_bias == pytest.approx((done["pr"] - 300.0) / 300.0)
    assert model.bucket_counts == (*(int(error <= b) for b in ERROR_BUCKETS), 1)
    # GPU-seconds: the completed and the failed run (4 GPUs each), not the cancelled one
    failed = decision_row(rows[ids[1]])
    planned = sum(4 * (d["pe"] - d["ps"]) for d in (done, failed))
    assert v.runs_measured == 2
    assert v.gpu_used_s == pytest.approx(4 * 300.0 + 4 * 120.0)
    assert v.gpu_planned_s == pytest.approx(planned)


def _families(text: str) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def test_the_exposition_parses_with_prometheus_clients_own_parser(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    several_states(store, tmp_path)
    bound = QueueBound(1, 1, 900.0, 600.0, "alone from now", 1.5, 0.8, step_s=0.02)
    v = values_of(store, bound)
    text = exposition(v).decode("utf-8")
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    # the parser names counters without _total: every family of METRIC_NAMES is there
    assert set(fams) == set(METRIC_NAMES)
    types = {n: f.type for n, f in fams.items()}
    assert types["mlsub_runtime_prediction_error_ratio"] == "histogram"
    assert types["mlsub_gpu_used_seconds"] == "counter"
    assert types["mlsub_queue_length"] == "gauge"

    def sample(name: str, **labels: str) -> float:
        family = name.removesuffix("_total").removesuffix("_bucket")
        family = family.removesuffix("_sum").removesuffix("_count")
        hits = [
            s.value
            for s in fams[family].samples  # type: ignore[attr-defined]
            if s.name == name and all(s.labels.get(k) == x for k, x in labels.items())
        ]
        assert len(hits) == 1, (name, labels, hits)
        return float(hits[0])

    assert sample("mlsub_decisions", state="queued", cluster="lab") == 1
    assert sample("mlsub_decisions", state="planned") == 0
    assert sample("mlsub_queue_length") == 1
    assert sample("mlsub_queue_oldest_wait_seconds") == pytest.approx(v.oldest_wait_s)
    assert sample("mlsub_gpu_used_seconds_total") == pytest.approx(4 * 420.0)
    assert sample("mlsub_runs_measured_total") == 2
    (model,) = v.errors
    assert sample("mlsub_runtime_prediction_error_ratio_count", model=model.model) == 1
    assert sample("mlsub_runtime_prediction_error_ratio_bucket", le="+Inf") == 1
    assert sample("mlsub_runtime_prediction_error_ratio_sum") == pytest.approx(
        model.relative_error_sum
    )
    assert sample("mlsub_queue_plan_bound_ratio") == pytest.approx(1.5)
    assert sample("mlsub_replan_step_duration_seconds") == pytest.approx(0.02)
    assert sample("mlsub_live_cluster_up") == 1
    assert sample("mlsub_metrics_generated_timestamp_seconds") == LATER.timestamp()


def test_without_the_live_cluster_the_queue_now_series_are_left_out(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    several_states(store, tmp_path)
    rows = store.report_rows(HistoryFilter(cluster="lab"))
    v = metric_values(rows, now=LATER, cluster_name="lab")
    fams = _families(exposition(v).decode())
    assert "mlsub_queue_plan_bound_ratio" not in fams
    assert "mlsub_replan_step_duration_seconds" not in fams
    up = fams["mlsub_live_cluster_up"]
    assert [s.value for s in up.samples] == [0.0]  # type: ignore[attr-defined]


def test_an_empty_store_gives_zeros_and_no_model_series(tmp_path: Path) -> None:
    empty = open_store("sqlite://", grace_s=0.0)
    v = metric_values(empty.report_rows(HistoryFilter()), now=NOW, cluster_name="lab")
    assert v.queue_length == 0 and v.oldest_wait_s == 0.0 and v.errors == ()
    fams = _families(exposition(v).decode())
    assert fams["mlsub_runtime_prediction_error_ratio"].samples == []  # type: ignore[attr-defined]
    assert sum(s.value for s in fams["mlsub_decisions"].samples) == 0  # type: ignore[attr-defined]


def test_the_queue_now_is_planned_no_better_than_its_lower_bound(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """The queued job waits behind four whole-node jobs: the re-plan step reserves it for
    when they end; its plan is no better than the bound, which counts the room they hold
    until their predicted ends; once they are gone it starts now."""
    ids = fill_and_queue(store, tmp_path)[1]
    ticks = iter([10.0, 10.25])

    def now_bound(timer: Callable[[], float]) -> QueueBound:
        return queue_bound_now(
            store,
            FakeSource().read(NOW),
            now=NOW + timedelta(seconds=60),
            cluster_name="lab",
            slot_seconds=60.0,
            timer=timer,
        )

    q = now_bound(lambda: next(ticks))
    assert (q.jobs, q.estimated, q.step_s) == (1, 1, 0.25)
    assert q.ratio is not None and q.ratio >= 1.0 and q.planned_s >= q.bound_s > 0
    assert q.bound_kind and 0 < q.busy <= 1
    for i in ids[:4]:
        store.transition(i, S.CANCELLED, NOW, "scancel")
    again = now_bound(lambda: 0.0)
    assert again.ratio is not None and again.ratio >= 1.0
    assert again.planned_s < q.planned_s  # it no longer waits for the four
    # an empty queue: ratio 1 (nothing to plan)
    store.transition(ids[4], S.CANCELLED, NOW, "scancel")
    empty = now_bound(lambda: 0.0)
    assert (empty.jobs, empty.ratio, empty.planned_s) == (0, 1.0, 0.0)


def test_a_queue_without_estimates_has_no_ratio_series() -> None:
    v = metric_values(
        (),
        now=NOW,
        cluster_name="lab",
        queue=QueueBound(2, 0, 0.0, 0.0, "", None, 0.0, step_s=0.1),
        live_up=True,
    )
    fams = _families(exposition(v).decode())
    assert "mlsub_queue_plan_bound_ratio" not in fams
    assert "mlsub_replan_step_duration_seconds" in fams


def test_serving_reads_at_most_once_per_interval() -> None:
    calls: list[int] = []
    clock = iter([0.0, 5.0, 16.0])

    def compute() -> MetricValues:
        calls.append(1)
        return metric_values((), now=NOW, cluster_name="lab")

    cached = Cached(compute, 15.0, lambda: next(clock))
    first = cached()
    assert cached() is first and len(calls) == 1  # 5 s later: the same values
    assert cached() is not first and len(calls) == 2  # 16 s later: read again


def dashboard_metrics() -> set[str]:
    """Every mlsub_ series the dashboard's queries name (histogram suffixes dropped)."""
    board = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in board["panels"] for t in p.get("targets", [])]
    assert exprs, "the dashboard has no queries"
    names = {m for e in exprs for m in re.findall(r"\bmlsub_[a-z_]+", e)}
    return names


def test_the_dashboard_names_only_series_mlsub_metrics_emits(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    several_states(store, tmp_path)
    bound = QueueBound(1, 1, 900.0, 600.0, "alone from now", 1.5, 0.8, step_s=0.02)
    text = exposition(values_of(store, bound)).decode()
    emitted = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    missing = dashboard_metrics() - emitted
    assert not missing, f"the dashboard reads series mlsub metrics does not emit: {missing}"
    # and it shows every family (none is exported for nobody)
    shown = {n.removesuffix("_total").removesuffix("_bucket") for n in dashboard_metrics()}
    shown = {n.removesuffix("_sum").removesuffix("_count") for n in shown}
    assert set(METRIC_NAMES) - shown <= {"mlsub_metrics_generated_timestamp_seconds"}
