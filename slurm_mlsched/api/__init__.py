"""The public Python API of ``slurm_mlsched``: what the ``mlsub`` commands call, by name.

Plan, submit, queue, re-plan, explain and replay from Python (a notebook, a sweep driver)
with the typed inputs and results the commands use::

    from pathlib import Path
    from slurm_mlsched import api

    result = api.plan(Path("train.py"), cluster=Path("cluster.yaml"), overrides={},
                      clock=api.WallClock())
    print(result.decision.placement, result.predicted_end)

Every name below is **stable** (docs/python-api.md documents each); every other module of
the package is internal and may move. The CLI imports the use cases only from here
(tests/unit/test_import_graph.py). Importing this module is light: each name loads its
module on first use (:data:`EXPORTS`), so that ``mlsub --help`` does not load the
solver, the store or the SSH client.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: Stable name → (module under ``slurm_mlsched``, attribute there), by family.
EXPORTS: dict[str, tuple[str, str]] = {
    # Plan on a cluster file
    "plan": ("services.plan", "plan_from_files"),
    "plan_job": ("services.plan", "plan_job"),
    "PlanResult": ("services.plan", "PlanResult"),
    "SlotRun": ("services.plan", "SlotRun"),
    "policies": ("services.policies", "list_policies"),
    "PolicyInfo": ("services.policies", "PolicyInfo"),
    "plan_and_reserve": ("services.decisions", "plan_and_reserve"),
    "ReservedPlan": ("services.decisions", "ReservedPlan"),
    # Submit on the live cluster
    "submit": ("api.live", "run_submit"),
    "LiveRequest": ("api.live", "LiveRequest"),
    "SubmitOutcome": ("services.submit", "SubmitOutcome"),
    "plan_for_sbatch": ("api.live", "run_for_sbatch"),
    "SbatchPlacement": ("services.for_sbatch", "SbatchPlacement"),
    "reconcile": ("api.live", "run_reconcile"),
    "ReconcileReport": ("services.reconcile", "ReconcileReport"),
    # The live queue
    "queue": ("api.live", "run_queue"),
    "view_preemption": ("api.live", "view_preemption"),
    "replan": ("api.live", "run_replan"),
    "ReplanRequest": ("api.live", "ReplanRequest"),
    "QueueView": ("services.replan", "QueueView"),
    "ReplanReport": ("services.replan", "ReplanReport"),
    "Preempted": ("services.preempt", "Preempted"),
    # Audit the decisions
    "explain": ("services.decisions", "explain"),
    "Explanation": ("services.decision_views", "Explanation"),
    "QueuePlace": ("services.decision_views", "QueuePlace"),
    "AlternativeRow": ("services.decision_views", "AlternativeRow"),
    "FailedAlternative": ("services.decision_views", "FailedAlternative"),
    "TrialOutcome": ("services.decision_views", "TrialOutcome"),
    "history": ("services.decisions", "history"),
    "show": ("services.decisions", "show"),
    "export": ("services.decisions", "export"),
    "release": ("services.decisions", "release"),
    "own_user": ("services.decisions", "own_user"),
    "has_queued": ("services.decisions", "has_queued"),
    "DecisionRow": ("services.decision_views", "DecisionRow"),
    "DecisionView": ("services.decision_views", "DecisionView"),
    "write_report": ("services.report", "write_report"),
    "ReportWritten": ("services.report", "ReportWritten"),
    "db_current": ("services.db", "db_current"),
    "db_upgrade": ("services.db", "db_upgrade"),
    "SchemaState": ("services.decision_views", "SchemaState"),
    "SchemaUpgrade": ("services.decision_views", "SchemaUpgrade"),
    # The cluster, calibration, metrics
    "cluster_view": ("services.live_queue", "cluster_view"),
    "read_cluster_state": ("services.cluster_state", "read_cluster_state"),
    "ClusterState": ("services.cluster_state", "ClusterState"),
    "calibrate": ("services.calibrate", "calibrate"),
    "CalibrationReport": ("services.calibrate", "CalibrationReport"),
    "metric_values": ("services.metrics", "metric_values"),
    "MetricValues": ("services.metrics", "MetricValues"),
    "queue_bound_now": ("services.metrics", "queue_bound_now"),
    "QueueBound": ("services.metrics", "QueueBound"),
    "exposition": ("services.metrics_export", "exposition"),
    "serve_metrics": ("services.metrics_export", "serve"),
    "CachedMetrics": ("services.metrics_export", "Cached"),
    # Replay traces
    "replay": ("services.replay", "run_replay"),
    "ReplayOptions": ("services.replay", "ReplayOptions"),
    "ReplayReport": ("services.replay", "ReplayReport"),
    "SlurmReplayOptions": ("services.replay.array", "SlurmReplayOptions"),
    "parse_seeds": ("services.replay.array", "parse_seeds"),
    "prepare_array": ("services.replay.array", "prepare_array"),
    "submit_array": ("services.replay.array", "submit_array"),
    "wait_array": ("services.replay.array", "wait_array"),
    "ArraySubmission": ("services.replay.array", "ArraySubmission"),
    "run_cell": ("services.replay.cells", "run_cell"),
    "CellRun": ("services.replay.cells", "CellRun"),
    "merge_dir": ("services.replay.merge", "merge_dir"),
    "merge_submitted": ("services.replay.merge", "merge_submitted"),
    "REPORT_COLUMNS": ("services.replay.report", "COLUMNS"),
    "format_value": ("services.replay.report", "format_value"),
    # Wiring: clocks, identity, the store, Slurm access, the submitter
    "Clock": ("services.clock", "Clock"),
    "FixedClock": ("services.clock", "FixedClock"),
    "WallClock": ("services.clock", "WallClock"),
    "Viewer": ("services.viewer", "Viewer"),
    "LiveWiring": ("services.live_queue", "LiveWiring"),
    "Submitter": ("services.live_queue", "Submitter"),
    "SbatchSubmitter": ("services.submit", "SbatchSubmitter"),
    "submit_job": ("services.submit", "submit_job"),
    "package_versions": ("services.provenance", "package_versions"),
    "this_process": ("services.process_id", "this_process"),
    "StoreContext": ("api.store_access", "StoreContext"),
    "store_context": ("api.store_access", "context"),
    "open_store": ("api.store_access", "opened"),
    "SlurmAccess": ("api.slurm_access", "SlurmAccess"),
    "open_slurm": ("api.slurm_access", "slurm_access"),
}

if TYPE_CHECKING:  # the same names, for the type checker (a test keeps both equal)
    from ..services.calibrate import CalibrationReport as CalibrationReport
    from ..services.calibrate import calibrate as calibrate
    from ..services.clock import Clock as Clock
    from ..services.clock import FixedClock as FixedClock
    from ..services.clock import WallClock as WallClock
    from ..services.cluster_state import (
        ClusterState as ClusterState,
    )
    from ..services.cluster_state import (
        read_cluster_state as read_cluster_state,
    )
    from ..services.db import db_current as db_current
    from ..services.db import db_upgrade as db_upgrade
    from ..services.decision_views import (
        AlternativeRow as AlternativeRow,
    )
    from ..services.decision_views import (
        DecisionRow as DecisionRow,
    )
    from ..services.decision_views import (
        DecisionView as DecisionView,
    )
    from ..services.decision_views import (
        Explanation as Explanation,
    )
    from ..services.decision_views import (
        FailedAlternative as FailedAlternative,
    )
    from ..services.decision_views import (
        QueuePlace as QueuePlace,
    )
    from ..services.decision_views import (
        SchemaState as SchemaState,
    )
    from ..services.decision_views import (
        SchemaUpgrade as SchemaUpgrade,
    )
    from ..services.decision_views import (
        TrialOutcome as TrialOutcome,
    )
    from ..services.decisions import (
        ReservedPlan as ReservedPlan,
    )
    from ..services.decisions import (
        explain as explain,
    )
    from ..services.decisions import (
        export as export,
    )
    from ..services.decisions import (
        has_queued as has_queued,
    )
    from ..services.decisions import (
        history as history,
    )
    from ..services.decisions import (
        own_user as own_user,
    )
    from ..services.decisions import (
        plan_and_reserve as plan_and_reserve,
    )
    from ..services.decisions import (
        release as release,
    )
    from ..services.decisions import (
        show as show,
    )
    from ..services.for_sbatch import SbatchPlacement as SbatchPlacement
    from ..services.live_queue import (
        LiveWiring as LiveWiring,
    )
    from ..services.live_queue import (
        Submitter as Submitter,
    )
    from ..services.live_queue import (
        cluster_view as cluster_view,
    )
    from ..services.metrics import (
        MetricValues as MetricValues,
    )
    from ..services.metrics import (
        QueueBound as QueueBound,
    )
    from ..services.metrics import (
        metric_values as metric_values,
    )
    from ..services.metrics import (
        queue_bound_now as queue_bound_now,
    )
    from ..services.metrics_export import (
        Cached as CachedMetrics,
    )
    from ..services.metrics_export import (
        exposition as exposition,
    )
    from ..services.metrics_export import (
        serve as serve_metrics,
    )
    from ..services.plan import (
        PlanResult as PlanResult,
    )
    from ..services.plan import (
        SlotRun as SlotRun,
    )
    from ..services.plan import (
        plan_from_files as plan,
    )
    from ..services.plan import (
        plan_job as plan_job,
    )
    from ..services.policies import PolicyInfo as PolicyInfo
    from ..services.policies import list_policies as policies
    from ..services.preempt import Preempted as Preempted
    from ..services.process_id import this_process as this_process
    from ..services.provenance import package_versions as package_versions
    from ..services.reconcile import ReconcileReport as ReconcileReport
    from ..services.replan import QueueView as QueueView
    from ..services.replan import ReplanReport as ReplanReport
    from ..services.replay import (
        ReplayOptions as ReplayOptions,
    )
    from ..services.replay import (
        ReplayReport as ReplayReport,
    )
    from ..services.replay import (
        run_replay as replay,
    )
    from ..services.replay.array import (
        ArraySubmission as ArraySubmission,
    )
    from ..services.replay.array import (
        SlurmReplayOptions as SlurmReplayOptions,
    )
    from ..services.replay.array import (
        parse_seeds as parse_seeds,
    )
    from ..services.replay.array import (
        prepare_array as prepare_array,
    )
    from ..services.replay.array import (
        submit_array as submit_array,
    )
    from ..services.replay.array import (
        wait_array as wait_array,
    )
    from ..services.replay.cells import CellRun as CellRun
    from ..services.replay.cells import run_cell as run_cell
    from ..services.replay.merge import merge_dir as merge_dir
    from ..services.replay.merge import merge_submitted as merge_submitted
    from ..services.replay.report import COLUMNS as REPORT_COLUMNS
    from ..services.replay.report import format_value as format_value
    from ..services.report import ReportWritten as ReportWritten
    from ..services.report import write_report as write_report
    from ..services.submit import (
        SbatchSubmitter as SbatchSubmitter,
    )
    from ..services.submit import (
        SubmitOutcome as SubmitOutcome,
    )
    from ..services.submit import (
        submit_job as submit_job,
    )
    from ..services.viewer import Viewer as Viewer
    from .live import (
        LiveRequest as LiveRequest,
    )
    from .live import (
        ReplanRequest as ReplanRequest,
    )
    from .live import (
        run_for_sbatch as plan_for_sbatch,
    )
    from .live import (
        run_queue as queue,
    )
    from .live import (
        run_reconcile as reconcile,
    )
    from .live import (
        run_replan as replan,
    )
    from .live import (
        run_submit as submit,
    )
    from .live import (
        view_preemption as view_preemption,
    )
    from .slurm_access import SlurmAccess as SlurmAccess
    from .slurm_access import slurm_access as open_slurm
    from .store_access import (
        StoreContext as StoreContext,
    )
    from .store_access import (
        context as store_context,
    )
    from .store_access import (
        opened as open_store,
    )


def __getattr__(name: str) -> Any:
    """Load a stable name's module on first use (PEP 562)."""
    try:
        module, attribute = EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"slurm_mlsched.{module}"), attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *EXPORTS})


__all__ = [
    "REPORT_COLUMNS",
    "AlternativeRow",
    "ArraySubmission",
    "CachedMetrics",
    "CalibrationReport",
    "CellRun",
    "Clock",
    "ClusterState",
    "DecisionRow",
    "DecisionView",
    "Explanation",
    "FailedAlternative",
    "FixedClock",
    "LiveRequest",
    "LiveWiring",
    "MetricValues",
    "PlanResult",
    "PolicyInfo",
    "Preempted",
    "QueueBound",
    "QueuePlace",
    "QueueView",
    "ReconcileReport",
    "ReplanReport",
    "ReplanRequest",
    "ReplayOptions",
    "ReplayReport",
    "ReportWritten",
    "ReservedPlan",
    "SbatchPlacement",
    "SbatchSubmitter",
    "SchemaState",
    "SchemaUpgrade",
    "SlotRun",
    "SlurmAccess",
    "SlurmReplayOptions",
    "StoreContext",
    "SubmitOutcome",
    "Submitter",
    "TrialOutcome",
    "Viewer",
    "WallClock",
    "calibrate",
    "cluster_view",
    "db_current",
    "db_upgrade",
    "explain",
    "export",
    "exposition",
    "format_value",
    "has_queued",
    "history",
    "merge_dir",
    "merge_submitted",
    "metric_values",
    "open_slurm",
    "open_store",
    "own_user",
    "package_versions",
    "parse_seeds",
    "plan",
    "plan_and_reserve",
    "plan_for_sbatch",
    "plan_job",
    "policies",
    "prepare_array",
    "queue",
    "queue_bound_now",
    "read_cluster_state",
    "reconcile",
    "release",
    "replan",
    "replay",
    "run_cell",
    "serve_metrics",
    "show",
    "store_context",
    "submit",
    "submit_array",
    "submit_job",
    "this_process",
    "view_preemption",
    "wait_array",
    "write_report",
]
