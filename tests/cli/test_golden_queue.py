"""Golden JSON of ``mlsub replan`` and ``mlsub queue`` (issue 16, item 3): their typed
results (``ReplanReport``, ``QueueView``) built as a re-plan of a live cluster would."""

from __future__ import annotations

import io
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from slurm_mlsched.cli import output
from slurm_mlsched.services.preempt import Preempted
from slurm_mlsched.services.replan import QueueView, ReplanReport, Started, Waiting, WouldPause
from slurm_mlsched.sim.queue_estimate import JobEstimate, QueueEstimate, bound_json
from tests.golden_json import assert_golden

NOW = datetime(2026, 3, 1, 10, 7, 30, tzinfo=UTC)
LATER = datetime(2026, 3, 1, 11, 0, tzinfo=UTC)

WAITING = (
    Waiting(7, "alice", "bert", "41", 1, LATER, "needs 4 GPUs on one node: node1 held by job 3"),
    Waiting(8, "bob", "gpt", "42", 2, None, "behind decision 7"),
)


#: A running job a re-plan checkpointed and requeued held for decision 5 (§16, "Live").
PREEMPTED = Preempted(3, "carol", "31", "requeued", "USR1", 30.0, 4200.0, 1850.5, (5,), 600.0, 30.0)


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
        preempted=(PREEMPTED,),
    )
    assert_golden("queue/replan", report.to_json())


#: What sim/queue_estimate.py says of WAITING: 7 planned at 11:00, 8 behind a job without
#: an end; the plan 1.07 × the bound, 93 % of the GPU-slots busy until 12:00.
ESTIMATES = (
    JobEstimate("q7", 9, 14, LATER, "plan", "", 12, LATER + timedelta(minutes=60)),
    JobEstimate("q8", None, None, None, "unknown", "it waits behind a running job whose end "
                "Slurm does not know (no time limit)", 20),
)  # fmt: skip
BOUND = QueueEstimate(
    NOW, 0, 360.0, ESTIMATES, 15.0, 14.0, "pooled gpu from now", 15 / 14, 0.93, "gpu", 14,
    LATER + timedelta(minutes=60),
)  # fmt: skip


def estimated(rows: tuple[Waiting, ...]) -> tuple[Waiting, ...]:
    by = BOUND.by_job()
    return tuple(
        replace(w, estimate=by[f"q{w.decision_id}"], estimated_start=by[f"q{w.decision_id}"].start)
        for w in rows
    )


def test_queue_view_golden() -> None:
    rows = estimated(WAITING)
    view = QueueView("lab", NOW, would_start=rows[:1], waiting=rows[1:], bound=BOUND)
    assert_golden("queue/queue", view.to_json())


#: Where the site preempts: carol's job 31 would be paused for decision 7, dave's grown.
PAUSES = (
    WouldPause(3, "carol", "long-gpt", "31", "pause", (7,), 5400.0, 30.0, LATER, "paused for "
               "decision(s) 7 (the queue completes 5400 s sooner in total, its restart cost "
               "included)"),
    WouldPause(4, "dave", "vit", "32", "resize", (), 1800.0, 30.0, NOW,
               "starts again wider (ends 1800 s sooner)"),
)  # fmt: skip


def test_queue_view_golden_where_the_site_preempts() -> None:
    rows = estimated(WAITING)
    start = replace(rows[0], position=0, reason="can start now on node1:4w+1ps: the next "
                    "re-plan starts it once it has paused decision 3 (pause)")  # fmt: skip
    view = QueueView(
        "lab", NOW, would_start=(start,), waiting=rows[1:], bound=BOUND, would_pause=PAUSES,
        preempting=True,
    )  # fmt: skip
    assert_golden("queue/queue_preempting", view.to_json())


def test_the_pause_table_reads_at_80_columns(monkeypatch: pytest.MonkeyPatch) -> None:
    """``mlsub queue`` where the site preempts: under the queue, the running jobs the next
    re-plan would checkpoint and requeue, each with what it would be, its estimated
    restart and why; the plan vs bound line stays last."""
    rows = estimated(WAITING)
    view = QueueView("lab", NOW, rows[:1], rows[1:], BOUND, would_pause=PAUSES, preempting=True)
    lines = rendered(monkeypatch, 80, lambda: output.show_queue(view, as_json=False))
    k = lines.index("running jobs the next re-plan would checkpoint and requeue (preempt = true):")
    pauses = [line for line in lines[k:] if re.match(r"\d+ +\w+ +\S+ +\d+ ", line)]
    assert [line.split()[:5] for line in pauses] == [
        ["3", "carol", "long-gpt", "31", "paused"], ["4", "dave", "vit", "32", "resized"],
    ], lines  # fmt: skip
    assert "03-01 11:00" in pauses[0] and "03-01 10:07" in pauses[1], lines
    assert lines[-1].startswith("plan 1.07 × lower bound"), lines
    # no queued job, but a grow where nothing waits: the pause table alone
    alone = QueueView("lab", NOW, (), (), None, would_pause=PAUSES[1:], preempting=True)
    lines = rendered(monkeypatch, 80, lambda: output.show_queue(alone, as_json=False))
    assert lines[0] == "no queued jobs" and any(line.startswith("4 ") for line in lines), lines


def test_plan_vs_bound_has_the_same_keys_without_an_estimate() -> None:
    view = QueueView("lab", NOW, (), WAITING, bound_reason="no estimate could be made: x")
    doc = view.to_json()["plan_vs_bound"]
    assert isinstance(doc, dict) and doc.keys() == bound_json(BOUND).keys()
    assert doc["ratio"] is None and doc["reason"] == "no estimate could be made: x"


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
    start = estimated(WAITING)
    view = QueueView("lab", NOW, would_start=start[:1], waiting=(*start[1:], *rows), bound=BOUND)
    for width in (80, 140):
        lines = rendered(monkeypatch, width, lambda: output.show_queue(view, as_json=False))
        firsts = [line for line in lines if re.match(r"(now|\d+) +\d+ ", line)]
        assert [line.split()[:4] for line in firsts] == [
            ["1", "7", "alice", "bert"], ["2", "8", "bob", "gpt"],
            ["3", "12", "alice", "resnet50-imagenet"],
        ], lines  # fmt: skip
        assert ("slurm job" in lines[0]) == (width >= output.QUEUE_WIDE)
        assert "03-01 11:00" in firsts[0] and "—" in firsts[1]
        assert lines[-1] == (
            "plan 1.07 × lower bound for 1 of 2 jobs now (cluster full: 93% GPU-slots busy)"
        )


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


def test_replan_table_lists_what_it_preempted_and_why(monkeypatch: pytest.MonkeyPatch) -> None:
    """A preempting re-plan says in its table which running jobs it checkpointed and what
    for: a pause for waiting decisions, a resize (a grow, for nobody) or a move to a
    smaller node (the site's ``preempt_defrag``) or a regather (``preempt_regather``)."""
    grow = replace(PREEMPTED, decision_id=4, slurm_job_id="32", for_decisions=())
    move = replace(PREEMPTED, decision_id=2, slurm_job_id="30", move=True)
    failed = replace(PREEMPTED, decision_id=1, action="failed", note="requeuehold failed: x")
    gather = replace(grow, decision_id=7, slurm_job_id="33", regather=True)
    report = ReplanReport("lab", (), WAITING, preempted=(PREEMPTED, grow, move, failed, gather))
    lines = rendered(monkeypatch, 80, lambda: output.show_replanned(report, as_json=False))
    rows = {line.split()[0]: line for line in lines if re.match(r"\d+ +\w+ +\d+ ", line)}
    assert rows["3"].split()[:6] == ["3", "carol", "31", "requeued", "paused", "for"], lines
    assert rows["4"].split()[4] == "resized:" and rows["2"].split()[4] == "moved", lines
    assert rows["1"].split()[3] == "failed" and "requeuehold" in rows["1"], lines
    assert rows["7"].split()[4] == "regathered:", lines
    assert lines[0] == "no queued job can start now"
    assert lines[-1] == "2 job(s) still wait (mlsub queue)"
    assert output.preempted_why(move) == "moved to a smaller node for 5"
    assert output.preempted_why(grow) == "resized: starts again wider"
    assert output.preempted_why(gather) == "regathered: starts again on one node"
    assert output.preempted_why(PREEMPTED) == "paused for 5"


def test_the_estimate_and_bound_lines_say_what_is_known() -> None:
    assert output.estimate_line(ESTIMATES[0]) == (
        "estimated start 03-01 11:00 UTC, end 03-01 12:00 UTC (as the re-plan now plans it, "
        "if nothing else arrives and running jobs end when expected)"
    )
    assert output.estimate_line(ESTIMATES[1]) == f"estimated start: — ({ESTIMATES[1].reason})"
    assert output.estimate_line(None) == "estimated start: — (no estimate could be made)"
    idle = replace(BOUND, jobs=ESTIMATES[:1], ratio=1.8, busy=0.4)
    assert output.bound_line(idle) == (
        "plan 1.80 × lower bound for 1 job now (cluster not full: 40% GPU-slots busy)"
    )
    none = replace(BOUND, jobs=ESTIMATES[1:], ratio=None)
    assert output.bound_line(none) == (
        "plan vs lower bound: unknown (no waiting job has an estimate)"
    )
    assert output.bound_line(replace(BOUND, jobs=())) == "plan vs lower bound: no job waits"
    assert output.bound_line(None, "no estimate could be made: x") == (
        "plan vs lower bound: unknown (no estimate could be made: x)"
    )
