"""``mlsub plan`` and ``mlsub policies``: the decision, its placement and slot runs, the summary.

Printers only: results to stdout (rich, or JSON with ``--json``), nothing else."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.table import Table

    from ...api import PlanResult, PolicyInfo, SlotRun

from .common import (
    _compact_time,
    _duration,
    _kept_row,
    _out,
    _placement_table,
    _short_time,
    _table,
    _text,
    show_json,
)


def show_policies(policies: Sequence[PolicyInfo], *, as_json: bool) -> None:
    """``mlsub policies``: one row per policy, or a JSON list."""
    if as_json:
        show_json([p.to_json() for p in policies])
        return
    table = _table("policy", "runs", "summary", box=None)
    for p in policies:
        table.add_row(p.name, "live" if p.runs == "live" else "replay only", p.summary)
    _out().print(table)
    _out().print("live: plan, submit and replay; replay only: mlsub replay TRACE --policy NAME")


def show_plan(plan: PlanResult, *, as_json: bool) -> None:
    """``mlsub plan``: JSON, or a placement table and a summary."""
    if as_json:
        show_json(plan.to_json())
        return
    console = _out()
    d = plan.decision
    console.print(
        _text(
            f"Plan for job {plan.request.job_id!r}: policy {d.policy}, {d.form}, seed {d.seed}",
            style="bold",
        )
    )
    runs = plan.slot_runs
    several = len(runs) > 1
    title = "placement (first slot; the schedule below)" if several else "placement"
    console.print(_placement_table(d.placement, plan.request, title))
    if several:
        console.print(_slots_table(runs))
    console.print(_summary_table(plan))


def _slots_table(runs: Sequence[SlotRun]) -> Table:
    table = _table("slots", "start (UTC)", "mode", "workers", "PSs", title="schedule")
    table.add_column("nodes", overflow="fold")
    for run in runs:
        nodes = sorted({r.node for r in run.placement})
        first, last = run.first_slot, run.last_slot
        table.add_row(
            str(first) if first == last else f"{first}–{last}",
            _compact_time(run.start),
            str(run.mode),
            str(run.workers),
            str(run.ps),
            ",".join(nodes),
        )
    return table


def _summary_table(plan: PlanResult) -> Table:
    table = _table(show_header=False, box=None, title="summary", title_justify="left")
    d, job = plan.decision, plan.request
    lp_deadline = plan.lp_deadline
    deadline = (
        f"{_short_time(lp_deadline)} (end of slot {d.lp_deadline})"
        if lp_deadline is not None
        else "—"
    )
    rows = [
        ("mode", str(d.mode)),
        ("start", f"{_short_time(plan.start)} (slot {d.start_slot})"),
        ("end", f"{_short_time(plan.end)} (end of slot {d.end_slot})"),
        ("predicted runtime", _duration(plan.predicted_runtime_s)),
        ("LP deadline", deadline),
        ("workload", f"{job.workload:g} mini-batches, model {job.profile.name}"),
        *(
            (("GPU speed", f"×{job.gpu_speed:g} (the slowest GPU type it may run on)"),)
            if job.gpu_speed != 1.0
            else ()
        ),
        *(
            (("architecture", f"allreduce (no PS): {plan.ring.describe()}"),)
            if plan.ring is not None
            else ()
        ),
        (
            "solver",
            f"{d.solver or '—'} {d.solver_version} · {plan.decision_ms:.1f} ms "
            f"· {d.trials} trial(s)",
        ),
        *_kept_row(d),
        ("repair", "; ".join(d.repair_actions) or "none"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    return table
