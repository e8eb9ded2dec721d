"""Golden JSON of ``mlsub replan`` and ``mlsub queue`` (issue 16, item 3): their typed
results (``ReplanReport``, ``QueueView``) built as a re-plan of a live cluster would."""

from __future__ import annotations

from datetime import UTC, datetime

from slurm_mlsched.services.replan import QueueView, ReplanReport, Started, Waiting
from tests.golden_json import assert_golden

NOW = datetime(2026, 3, 1, 10, 7, 30, tzinfo=UTC)
LATER = datetime(2026, 3, 1, 11, 0, tzinfo=UTC)

WAITING = (
    Waiting(7, "alice", "bert", "41", 1, LATER, "needs 4 GPUs on one node: node1 held by job 3"),
    Waiting(8, "bob", "gpt", "42", 2, None, "behind decision 7"),
)


def test_replan_report_golden() -> None:
    report = ReplanReport(
        cluster_name="lab",
        started=(
            Started(5, "alice", "40", "released", "node1:2w+1ps"),
            Started(6, "bob", None, "failed", "node2:1w", note="sbatch: invalid account"),
        ),
        waiting=WAITING,
        skipped=(9,),
        notes=("decision 6 goes back to the queue",),
    )
    assert_golden("queue/replan", report.to_json())


def test_queue_view_golden() -> None:
    view = QueueView("lab", NOW, would_start=WAITING[:1], waiting=WAITING[1:])
    assert_golden("queue/queue", view.to_json())
