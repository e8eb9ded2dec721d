"""The live path: ``submit`` (and ``mlsub SCRIPT``), ``reconcile``, ``remote trust``, waiting.

Printers only: results to stdout (rich, or JSON with ``--json``), nothing else."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from ...api import ReconcileReport, SubmitOutcome
    from ...remote.trust import Trusted

from .common import (
    _err,
    _out,
    _short_time,
    _table,
    _text,
    show_json,
)
from .plan import show_plan


def show_trusted(done: Trusted, *, as_json: bool) -> None:
    """``mlsub remote trust``: the key trusted, and whether a line was added."""
    if as_json:
        show_json(done.to_json())
        return
    what = f"{done.host} {done.key_type} {done.fingerprint}"
    if done.added:
        typer.echo(f"trusted {what}: added to {done.file}")
    else:
        typer.echo(f"{what} is already in {done.file}: nothing to do")


def show_submitted(outcome: SubmitOutcome, *, as_json: bool, show_script: bool) -> None:
    """``mlsub submit`` / ``mlsub plan SCRIPT`` (live): the plan, the script, the outcome."""
    if as_json:
        show_json(outcome.to_json())
        return
    show_plan(outcome.plan, as_json=False)
    console = _out()
    excluded = outcome.cluster.excluded
    if excluded:
        console.print("not used: " + ", ".join(f"{e.record.name} ({e.reason})" for e in excluded))
    if show_script:
        console.print(_text("sbatch script:", style="bold"))
        console.print(_text(outcome.script.text), soft_wrap=True)
    begin_at = outcome.begin
    begin = f", begins {_short_time(begin_at)}" if begin_at else ""
    start = _short_time(outcome.plan.start)
    waits = (
        f"; it cannot start now: it would wait in mlsub's queue (estimated start {start})"
        if outcome.waits
        else ""
    )
    decision_id = outcome.decision_id
    if decision_id is None:
        console.print(f"dry run: nothing recorded or submitted{begin}{waits}")
        return
    if outcome.waits:
        console.print(
            f"decision {decision_id} waits in mlsub's queue, held as Slurm job "
            f"{outcome.slurm_job_id} (state {outcome.state}; estimated start "
            f"{start}); a re-plan starts it when resources free up: "
            "mlsub queue shows where it stands"
        )
        for warning in outcome.warnings:
            _err().print(f"warning: {warning}")
        return
    console.print(
        f"decision {decision_id} submitted as Slurm job {outcome.slurm_job_id}"
        f"{begin} (state {outcome.state}); follow it with: mlsub show "
        f"{decision_id}, squeue -j {outcome.slurm_job_id}"
    )
    for warning in outcome.warnings:
        _err().print(f"warning: {warning}")


def show_reconciled(report: ReconcileReport, *, as_json: bool) -> None:
    """``mlsub reconcile``: one row per open decision looked at."""
    if as_json:
        show_json(report.to_json())
        return
    console = _out()
    rows = report.decisions
    if not rows:
        console.print("no open decisions to reconcile")
    else:
        table = _table("decision", "slurm job", "before", "after", "found in", "note")
        for r in rows:
            table.add_row(
                str(r.decision_id),
                r.slurm_job_id or "",
                r.before.value,
                r.after.value,
                r.found_in or "",
                r.note,
            )
        console.print(table)
    for note in report.notes:
        _err().print(f"note: {note}")


@contextmanager
def waiting(*, enabled: bool) -> Iterator[Callable[[str], None]]:
    """A status line on stderr while ``submit --wait`` waits; yields ``update(state)``."""
    if not enabled:
        yield lambda state: None
        return
    with _err().status("waiting for the job to be submitted") as status:

        def update(state: str) -> None:
            status.update(f"job {state}: waiting for it to end (Ctrl-C stops waiting only)")

        yield update
