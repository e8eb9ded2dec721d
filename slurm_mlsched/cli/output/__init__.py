"""The one package that prints, one module per command family (``cli/output/``).

Results go to stdout (rich tables, or JSON with ``--json``); errors go to stderr. JSON is
``json.dumps(sort_keys=True, indent=2)`` and nothing else is ever written to stdout with it.
The families: :mod:`.plan`, :mod:`.decisions` (audit), :mod:`.live` (submission),
:mod:`.queue`, :mod:`.replay`, :mod:`.cluster`; :mod:`.common` holds what they share. The
commands call the printers by these names (``output.show_plan``), re-exported here.
"""

from __future__ import annotations

from .cluster import show_calibration, show_cluster, show_installed_plugins, show_plugin_check
from .common import (
    CSV_COLUMNS,
    format_mem_mib,
    note,
    show_error,
    show_internal_error,
    show_json,
    show_line,
    show_lines,
    show_version,
)
from .decisions import (
    HISTORY_WIDE,
    HISTORY_WIDER,
    show_db_current,
    show_db_upgrade,
    show_decision,
    show_explanation,
    show_export,
    show_history,
    show_released,
    show_report,
    show_reserved,
)
from .live import show_reconciled, show_submitted, show_trusted, waiting
from .plan import show_plan, show_policies
from .queue import (
    ESTIMATE_SOURCES,
    QUEUE_WIDE,
    bound_line,
    estimate_line,
    preempted_why,
    show_queue,
    show_replanned,
)
from .replay import (
    array_progress,
    replay_progress,
    show_array_submitted,
    show_cell,
    show_replay,
    show_stopped_waiting,
)

__all__ = [
    "CSV_COLUMNS",
    "ESTIMATE_SOURCES",
    "HISTORY_WIDE",
    "HISTORY_WIDER",
    "QUEUE_WIDE",
    "array_progress",
    "bound_line",
    "estimate_line",
    "format_mem_mib",
    "note",
    "preempted_why",
    "replay_progress",
    "show_array_submitted",
    "show_calibration",
    "show_cell",
    "show_cluster",
    "show_db_current",
    "show_db_upgrade",
    "show_decision",
    "show_error",
    "show_explanation",
    "show_export",
    "show_history",
    "show_installed_plugins",
    "show_internal_error",
    "show_json",
    "show_line",
    "show_lines",
    "show_plan",
    "show_plugin_check",
    "show_policies",
    "show_queue",
    "show_reconciled",
    "show_released",
    "show_replanned",
    "show_replay",
    "show_report",
    "show_reserved",
    "show_stopped_waiting",
    "show_submitted",
    "show_trusted",
    "show_version",
    "waiting",
]
