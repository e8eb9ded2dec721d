"""Golden JSON of ``mlsub replan`` and ``mlsub queue`` (issue 16, item 3): their typed
results (``ReplanReport``, ``QueueView``) built as a re-plan of a live cluster would."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from slurm_mlsched.cli import output
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


def rendered(monkeypatch: pytest.MonkeyPatch, width: int, show: Callable[[], None]) -> list[str]:
    """The lines ``show`` prints in a terminal ``width`` columns wide; none is wider and
    no cell is cut to an ellipsis."""
    monkeypatch.setenv("COLUMNS", str(width))
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdout", out)
    show()
    lines = out.getvalue().rstrip("\n").splitlines()
    assert all(len(line) <= width for line in lines) and "…" not in out.getvalue(), lines
    return lines


def test_queue_table_reads_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each row keeps its short columns whole on its first line and the reason wraps in
    its own column; from 110 columns the Slurm job id shows too."""
    rows = (
        Waiting(12, "alice", "resnet50-imagenet", "40312", 3, LATER, "waiting for resources "
                "held by running jobs or jobs ahead in the queue"),
    )  # fmt: skip
    view = QueueView("lab", NOW, would_start=WAITING[:1], waiting=(*WAITING[1:], *rows))
    for width in (80, 140):
        lines = rendered(monkeypatch, width, lambda: output.show_queue(view, as_json=False))
        firsts = [line for line in lines if re.match(r"(now|\d+) +\d+ ", line)]
        assert [line.split()[:4] for line in firsts] == [
            ["1", "7", "alice", "bert"], ["2", "8", "bob", "gpt"],
            ["3", "12", "alice", "resnet50-imagenet"],
        ], lines  # fmt: skip
        assert ("slurm job" in lines[0]) == (width >= output.QUEUE_WIDE)
        assert "03-01 11:00" in firsts[0] and "—" in firsts[1]


def test_replan_table_reads_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    started = (
        Started(5, "alice", "40", "released", "node1:2w+1ps"),
        Started(6, "bob", None, "failed", "node[2-4]:4w+1ps", note="sbatch: error: Batch job "
                "submission failed: Invalid account or account/partition combination"),
    )  # fmt: skip
    report = ReplanReport("lab", started, WAITING)
    lines = rendered(monkeypatch, 80, lambda: output.show_replanned(report, as_json=False))
    assert lines[2].split() == ["5", "alice", "40", "released", "node1:2w+1ps"]
    assert lines[3].split()[:5] == ["6", "bob", "—", "failed", "node[2-4]:4w+1ps"]
    assert lines[-1] == "2 job(s) still wait (mlsub queue)"
