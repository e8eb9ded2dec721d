"""The one module that prints. Results go to stdout (rich tables, or JSON with
``--json``); errors go to stderr. JSON is ``json.dumps(sort_keys=True, indent=2)`` and
nothing else is ever written to stdout with it."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from ..errors import MlschedError
from ..model.units import format_mem_mib


def _out() -> Console:
    return Console(highlight=False)


def _err() -> Console:
    return Console(stderr=True, highlight=False)


def show_json(data: object) -> None:
    typer.echo(json.dumps(data, sort_keys=True, indent=2))


def show_version(version: str) -> None:
    typer.echo(f"mlsub {version}")


def show_error(err: MlschedError) -> None:
    console = _err()
    console.print(
        Text.assemble(("error", "bold red"), f"[{err.code}]: {err.message}"), soft_wrap=True
    )
    if err.hint:
        console.print(Text.assemble(("hint", "bold yellow"), f": {err.hint}"), soft_wrap=True)


def show_internal_error(exc: BaseException) -> None:
    console = _err()
    console.print(
        Text.assemble(
            ("error", "bold red"),
            f"[internal]: unexpected {type(exc).__name__}: {exc}",
        ),
        soft_wrap=True,
    )
    console.print(
        Text.assemble(
            ("hint", "bold yellow"),
            ": this is a bug in mlsub; rerun with MLSUB_DEBUG=1 for a traceback and report it",
        ),
        soft_wrap=True,
    )


def show_policies(policies: Sequence[Mapping[str, str]], *, as_json: bool) -> None:
    if as_json:
        show_json(list(policies))
        return
    table = Table("policy", "summary", box=None)
    for p in policies:
        table.add_row(p["name"], p["summary"])
    _out().print(table)


def show_plan(plan: Mapping[str, Any], *, as_json: bool) -> None:
    """Render ``PlanResult.as_dict()``: JSON, or a placement table and a summary."""
    if as_json:
        show_json(plan)
        return
    console = _out()
    job = plan["job"]
    console.print(
        Text(
            f"Plan for job {job['id']!r}: policy {plan['policy']}, {plan['form']}, "
            f"seed {plan['seed']}",
            style="bold",
        )
    )
    several = len(plan["slots"]) > 1
    title = "placement (first slot; the schedule below)" if several else "placement"
    console.print(_placement_table(plan["placement"], job, title))
    if several:
        console.print(_slots_table(plan["slots"]))
    console.print(_summary_table(plan))


def _placement_table(
    rows: Sequence[Mapping[str, Any]], job: Mapping[str, Any], title: str
) -> Table:
    table = Table("node", "role", "count", "GPUs", "CPUs", "memory", title=title)
    for row in rows:
        per = job["per_ps"] if row["role"] == "ps" else job["per_worker"]
        n = row["count"]
        table.add_row(
            row["node"],
            row["role"],
            str(n),
            f"{per['gpus'] * n:g}",
            f"{per['cpus'] * n:g}",
            format_mem_mib(per["mem_mib"] * n),
        )
    return table


def _slots_table(runs: Sequence[Mapping[str, Any]]) -> Table:
    table = Table("slots", "start (UTC)", "mode", "workers", "PSs", title="schedule")
    table.add_column("nodes", overflow="fold")
    for run in runs:
        nodes = sorted({r["node"] for r in run["placement"]})
        first, last = run["first_slot"], run["last_slot"]
        table.add_row(
            str(first) if first == last else f"{first}–{last}",
            _short_time(run["start"])[5:16],
            run["mode"],
            str(run["workers"]),
            str(run["ps"]),
            ",".join(nodes),
        )
    return table


def _summary_table(plan: Mapping[str, Any]) -> Table:
    table = Table(show_header=False, box=None, title="summary", title_justify="left")
    deadline = (
        f"{_short_time(plan['lp_deadline'])} (end of slot {plan['lp_deadline_slot']})"
        if plan["lp_deadline"] is not None
        else "—"
    )
    job = plan["job"]
    rows = [
        ("mode", plan["mode"]),
        ("start", f"{_short_time(plan['start'])} (slot {plan['start_slot']})"),
        ("end", f"{_short_time(plan['end'])} (end of slot {plan['end_slot']})"),
        ("predicted runtime", _duration(plan["predicted_runtime_s"])),
        ("LP deadline", deadline),
        ("workload", f"{job['workload']:g} mini-batches, model {job['profile']['name']}"),
        (
            "solver",
            f"{plan['solver'] or '—'} {plan['solver_version']} · {plan['decision_ms']:.1f} ms "
            f"· {plan['trials']} trial(s)",
        ),
        ("repair", "; ".join(plan["repair_actions"]) or "none"),
    ]
    for key, value in rows:
        table.add_row(key, value)
    return table


def _short_time(iso: str) -> str:
    """``2026-01-01T10:00:00+00:00`` -> ``2026-01-01 10:00:00``."""
    return iso.replace("T", " ").removesuffix("+00:00")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    text = f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"
    return f"{text} ({seconds:.0f} s)"
