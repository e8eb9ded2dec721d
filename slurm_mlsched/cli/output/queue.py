"""The live queue: ``mlsub queue`` and ``mlsub replan``, the estimated start, plan vs bound.

Printers only: results to stdout (rich, or JSON with ``--json``), nothing else."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.table import Table

    from ...api import Preempted, QueueView, ReplanReport
    from ...sim.queue_estimate import JobEstimate, QueueEstimate

from .common import (
    _compact_time,
    _err,
    _out,
    _table,
    show_json,
)

#: ``mlsub queue`` adds the Slurm job id from this terminal width on.
QUEUE_WIDE = 110


def show_replanned(report: ReplanReport, *, as_json: bool, quiet: bool = False) -> None:
    """``mlsub replan``: the jobs it started, then the queue it left."""
    if as_json:
        show_json(report.to_json())
        return
    if quiet:
        return
    console = _out()
    if report.started:
        table = _plain_table("id", "user", "slurm job", "started", "on", "note")
        for s in report.started:
            table.add_row(
                str(s.decision_id), s.user, s.slurm_job_id or "—", s.action, s.placement, s.note
            )
        console.print(table)
    else:
        console.print("no queued job can start now")
    if report.preempted:
        table = _plain_table("id", "user", "slurm job", "preempted", "why", "note")
        for p in report.preempted:
            table.add_row(
                str(p.decision_id), p.user, p.slurm_job_id or "—", p.action, preempted_why(p),
                p.note,
            )  # fmt: skip
        console.print(table)
    if report.waiting:
        console.print(f"{len(report.waiting)} job(s) still wait (mlsub queue)")
    for note in report.notes:
        _err().print(f"note: {note}")
    if report.skipped:
        _err().print(
            f"note: {len(report.skipped)} queued job(s) of other users were left to their "
            "owners' or root's re-plan"
        )


def _plain_table(*columns: str) -> Table:
    """A table of ``mlsub replan``: a rule under the heading, no edges, each cell folded
    where it is too wide."""
    from rich import box

    table = _table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False, show_edge=False)
    for name in columns:
        table.add_column(name, overflow="fold")
    return table


def preempted_why(p: Preempted) -> str:
    """What a preemption was for, in a few words: a move to a smaller node, a resize (a
    grow or a regather: nothing waits for it), or a pause for waiting decisions."""
    ids = ", ".join(map(str, p.for_decisions)) or "—"
    if p.move:
        return f"moved to a smaller node for {ids}"
    if p.regather:
        return "regathered: starts again on one node"
    if not p.for_decisions:
        return "resized: starts again wider"
    return f"paused for {ids}"


def show_queue(view: QueueView, *, as_json: bool) -> None:
    """``mlsub queue``: queue position, estimated start, what each job waits for."""
    if as_json:
        show_json(view.to_json())
        return
    console = _out()
    rows = [*view.would_start, *view.waiting]
    if not rows:
        console.print("no queued jobs")
        _show_pauses(view)
        return
    from rich import box

    wide = console.width >= QUEUE_WIDE  # narrower: the Slurm job id is in mlsub show
    table = _table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False, show_edge=False)
    table.add_column("pos", overflow="fold")
    table.add_column("id", overflow="fold")
    table.add_column("user", overflow="fold", max_width=None if wide else 12)
    table.add_column("job", overflow="fold", max_width=None if wide else 18)
    if wide:
        table.add_column("slurm job", overflow="fold")
    table.add_column("est. start", overflow="fold", min_width=11)  # UTC, as everywhere
    table.add_column("waits for", overflow="fold")
    for w in rows:
        table.add_row(
            str(w.position) if w.position else "now",
            str(w.decision_id),
            w.user,
            w.job_name,
            *([w.slurm_job_id or "—"] if wide else []),
            _compact_time(w.estimated_start),
            w.reason,
        )
    console.print(table)
    _show_pauses(view)
    console.print(bound_line(view.bound, view.bound_reason))


def _show_pauses(view: QueueView) -> None:
    """Where the site preempts: the running jobs the next re-plan would pause."""
    if not view.would_pause:
        return
    table = _plain_table("id", "user", "job", "slurm job", "would be", "est. restart", "why")
    for p in view.would_pause:
        table.add_row(
            str(p.decision_id), p.user, p.job_name, p.slurm_job_id or "—",
            "paused" if p.kind == "pause" else p.kind + "d", _compact_time(p.estimated_restart),
            p.reason,
        )  # fmt: skip
    _out().print("running jobs the next re-plan would checkpoint and requeue (preempt = true):")
    _out().print(table)


#: How an estimated start was made, in words (sim/queue_estimate.py).
ESTIMATE_SOURCES = {
    "plan": "as the re-plan now plans it",
    "list": "after the jobs ahead, at its requested width",
}


def estimate_line(e: JobEstimate | None) -> str:
    """``mlsub explain`` of a queued job: its estimated start and end, or why none."""
    if e is None:
        return "estimated start: — (no estimate could be made)"
    if e.start is None or e.end is None:
        return f"estimated start: — ({e.reason})"
    how = ESTIMATE_SOURCES.get(e.source, e.source)
    return (
        f"estimated start {_compact_time(e.start)} UTC, end {_compact_time(e.end)} UTC ({how}, "
        "if nothing else arrives and running jobs end when expected)"
    )


def bound_line(b: QueueEstimate | None, reason: str = "") -> str:
    """One line under ``mlsub queue`` (and in ``explain``): the plan ÷ the lower bound for
    the jobs waiting now and how busy the plan keeps the cluster."""
    if b is None:
        return f"plan vs lower bound: unknown ({reason or 'no estimate'})"
    if not b.jobs:
        return "plan vs lower bound: no job waits"
    if b.ratio is None:
        return f"plan vs lower bound: unknown ({b.reason})"
    n = len(b.jobs)
    jobs = f"{n} job{'s' if n != 1 else ''}"
    if b.estimated != n:
        jobs = f"{b.estimated} of {jobs}"
    state = "cluster full" if b.full else "cluster not full"
    slots = f"{b.busy_resource.upper()}-slots"
    return f"plan {b.ratio:.2f} × lower bound for {jobs} now ({state}: {b.busy:.0%} {slots} busy)"
