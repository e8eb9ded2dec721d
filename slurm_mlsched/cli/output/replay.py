"""``mlsub replay`` (in process and ``--on-slurm``): progress bars, the report, the array's cells.

Printers only: results to stdout (rich, or JSON with ``--json``), nothing else."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from ...api import ArraySubmission, CellRun, ReplayReport

from .common import (
    _assemble,
    _err,
    _out,
    _table,
    _text,
    show_json,
)


def _progress_bar(enabled: bool) -> Progress:
    """The one progress bar of the replay commands, on stderr (rich loads when used)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    return Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err(),
        disable=not enabled,
    )


@contextmanager
def replay_progress(*, enabled: bool = True) -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar per policy on stderr; yields ``update(policy, done, total)``."""
    with _progress_bar(enabled) as bar:
        tasks: dict[str, TaskID] = {}

        def update(policy: str, done: int, total: int) -> None:
            if policy not in tasks:
                tasks[policy] = bar.add_task(policy, total=total)
            bar.update(tasks[policy], completed=done)

        yield update


def show_replay(report: ReplayReport, *, as_json: bool) -> None:
    """Render a replay's report: ``report.to_json()`` (``summary.json``) as JSON, or a
    table of the policies, the counts, the notes and the files written."""
    from ...api import REPORT_COLUMNS as COLUMNS
    from ...api import format_value

    if as_json:
        show_json(report.to_json())
        return
    console = _out()
    params = report.params
    console.print(
        _text(
            f"Replay of {report.trace} on {report.cluster_label} "
            f"({len(report.cluster.machines)} nodes, "
            f"{report.cluster.total_capacity().gpu:g} GPUs, "
            f"Δ = {report.cluster.slot_seconds:g} s), "
            f"{params.form}, {params.binding} binding "
            f"(yu-rr: {params.queue_program}, look-ahead "
            f"{'on' if params.lookahead else 'off'}), "
            f"restart cost {params.restart_s:g} s, "
            f"seed {params.seed}",
            style="bold",
        ),
        soft_wrap=True,
    )
    metrics = report.metrics
    table = _table("metric", *metrics, title="results (one column per policy)")
    for key, (title, kind) in COLUMNS.items():
        table.add_row(title, *(format_value(getattr(m, key), kind) for m in metrics.values()))
    table.add_row("rejected", *(str(m.rejected) for m in metrics.values()))
    console.print(table)
    console.print(
        f"{report.jobs} job(s) replayed, {report.skipped} skipped, "
        f"{len(report.unplaceable)} unplaceable",
        soft_wrap=True,
    )
    for note in report.notes:
        if note:
            console.print(_assemble(("note", "bold yellow"), f": {note}"), soft_wrap=True)
    if report.files is not None:
        console.print(
            f"wrote {report.files.summary}, {report.files.html} and the plots", soft_wrap=True
        )


@contextmanager
def array_progress(
    job_id: str, *, enabled: bool = True
) -> Iterator[Callable[[int, int, int, int], None]]:
    """``mlsub replay --on-slurm``: one bar of cells ended / cells on stderr; yields
    ``update(done, total, running, pending)``."""
    with _progress_bar(enabled) as bar:
        task = bar.add_task(f"array job {job_id}", total=None)

        def update(done: int, total: int, running: int, pending: int) -> None:
            bar.update(
                task,
                total=total,
                completed=done,
                description=f"array job {job_id}: {running} running, {pending} pending",
            )

        yield update


def show_array_submitted(submission: ArraySubmission, *, as_json: bool) -> None:
    """``mlsub replay --on-slurm --no-wait``: the job and how to merge its cells later."""
    if as_json:
        show_json(submission.to_json())
        return
    console = _out()
    console.print(
        f"submitted {submission.cells} replay cell(s) as Slurm array job {submission.job_id} "
        f"(script {submission.script})",
        soft_wrap=True,
    )
    console.print(f"follow it: squeue -j {submission.job_id}", soft_wrap=True)
    console.print(f"merge when it has ended: {submission.merge_command}", soft_wrap=True)


def show_stopped_waiting(submission: ArraySubmission) -> None:
    """Ctrl-C while ``--on-slurm`` waits: the array goes on; how to merge it later."""
    _err().print(
        f"stopped waiting; Slurm array job {submission.job_id} goes on (scancel "
        f"{submission.job_id} stops it). Merge when it has ended: {submission.merge_command}",
        soft_wrap=True,
    )


def show_cell(ran: CellRun) -> None:
    """``mlsub replay-cell``: one line per cell into its task's log."""
    cell = ran.cell
    typer.echo(
        f"cell {cell.index} ({cell.policy}, seed {cell.seed}, slice "
        f"{cell.slice + 1}/{ran.slices}): jobs [{ran.lo}, {ran.hi}) "
        f"of {ran.jobs}, {ran.placed} placed, "
        f"{ran.rejected} rejected, {ran.wall_s:.3f} s"
    )
