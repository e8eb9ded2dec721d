"""The audit commands: ``history``, ``show``, ``explain``, ``export``, ``reserve``, ``db``,
``report``.

Printers only: results to stdout (rich, or JSON with ``--json``), nothing else."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from ...api import (
        AlternativeRow,
        DecisionRow,
        DecisionView,
        Explanation,
        ReportWritten,
        ReservedPlan,
        SchemaState,
        SchemaUpgrade,
        TrialOutcome,
    )

from .common import (
    CSV_COLUMNS,
    _compact_time,
    _job_ids,
    _kept_row,
    _out,
    _placement_csv,
    _placement_text,
    _short_time,
    _table,
    _text,
    show_json,
)
from .plan import _slots_table, show_plan

#: ``mlsub history`` adds the creation time from this terminal width on, and the policy
#: and mode from ``HISTORY_WIDER`` on.
HISTORY_WIDE = 110


HISTORY_WIDER = 150


def show_reserved(reserved: ReservedPlan, *, as_json: bool) -> None:
    """``mlsub plan --reserve``: the plan, then the id it was recorded under."""
    if as_json:
        show_json(reserved.to_json())
        return
    show_plan(reserved.plan, as_json=False)
    decision_id = reserved.record.decision_id
    _out().print(
        f"reserved as decision {decision_id} (state {reserved.record.state}, cluster "
        f"{reserved.cluster_name}); give it back with: mlsub release {decision_id}"
    )


def show_released(row: DecisionRow, *, as_json: bool) -> None:
    if as_json:
        show_json(row.to_json())
        return
    _out().print(f"decision {row.summary.decision_id} released")


def show_history(rows: Sequence[DecisionRow], *, as_json: bool) -> None:
    if as_json:
        show_json([r.to_json() for r in rows])
        return
    from rich import box

    console = _out()
    if not rows:
        console.print("no decisions match (ordinary users see their own; see --help for filters)")
        return
    wide = console.width >= HISTORY_WIDE
    wider = console.width >= HISTORY_WIDER
    table = _table(box=box.SIMPLE_HEAD, padding=0, pad_edge=False, show_edge=False)
    columns = ["id", *(["created (UTC)"] if wide else []), "user", "job", "state"]
    columns += [*(["policy", "mode"] if wider else []), "start (UTC)", "end", "placement"]
    columns += ["slurm job"]
    for name in columns:
        table.add_column(name, overflow="fold")
    for row in rows:
        s = row.summary
        created = [_compact_time(s.created_at)] if wide else []
        how = [f"{s.policy} ({s.form})", s.mode] if wider else []
        table.add_row(
            str(s.decision_id),
            *created,
            s.user,
            s.job_id,
            s.state.value,
            *how,
            _compact_time(s.start),
            _compact_time(s.end),
            _placement_text(s.placement),
            s.slurm_job_id or "—",
        )
    console.print(table)


def show_decision(view: DecisionView, *, as_json: bool) -> None:
    if as_json:
        show_json(view.to_json())
        return
    r = view.record
    s, d = r.summary, r.decision
    runs = view.slot_runs
    several = len(runs) > 1  # the allocation changes over time: its schedule below
    console = _out()
    console.print(_text(f"Decision {s.decision_id}: job {s.job_id!r} of {s.user}", style="bold"))
    table = _table(show_header=False, box=None)
    rows = [
        ("state", s.state.value),
        ("cluster", s.cluster),
        ("created", f"{_short_time(s.created_at)} on {s.host}"),
        ("policy", f"{s.policy} ({s.form}), seed {r.seed}"),
        ("mode", s.mode),
        ("start", f"{_short_time(s.start)} (slot {s.start_slot})"),
        ("end", f"{_short_time(s.end)} (end of slot {s.end_slot})"),
        ("placement", _placement_text(s.placement) + (" (first slot)" if several else "")),
        ("solver", f"{d.solver or '—'} {d.solver_version} · {d.trials} trial(s)"),
        *_kept_row(d),
        ("LP deadline", "—" if d.lp_deadline is None else f"slot {d.lp_deadline}"),
        ("snapshot", f"sha256 {r.snapshot_sha256[:16]}…"),
        ("slurm job", _job_ids(s.slurm_job_id, r.earlier_job_ids)),
    ]
    for key, value in rows:
        table.add_row(key, str(value))
    console.print(table)
    if several:
        console.print(_slots_table(runs))
    history = _table("state", "at (UTC)", "detail", title="state history")
    for t in r.transitions:
        history.add_row(t.state.value, _short_time(t.at), t.detail)
    console.print(history)


def show_explanation(e: Explanation, *, as_json: bool, all_trials: bool = False) -> None:
    if as_json:
        show_json(e.to_json())
        return
    from rich import box

    console = _out()
    console.print(_text(f"Decision {e.decision_id}: {e.mode} ({e.policy}, {e.form})", style="bold"))
    for line in e.why:
        console.print(f"  • {line}")
    for b in e.binding:
        console.print(f"  • {b.node}: tightest resource {b.resource} at {b.share:.0%}")
    table = _table(
        box=box.SIMPLE_HEAD, padding=0, pad_edge=False, show_edge=False,
        title="alternatives (completion = end slot − arrival + 1)",
    )  # fmt: skip
    for name in ("alternative", "mode", "workers", "start", "end (UTC)", "slots", "notes"):
        table.add_column(name, overflow="fold")
    rows = _alternative_rows(e.alternatives, grouped=not all_trials)
    for row in rows:
        table.add_row(*row)
    console.print(table)
    if not all_trials and len(rows) < len(e.alternatives):
        console.print("  (identical rounding trials shown once; every trial: --trials)")
    if e.resolved.reproduced:
        console.print(_text("re-solve from the stored inputs: reproduced exactly", style="green"))
        return
    console.print(_text("re-solve from the stored inputs: NOT reproduced", style="bold red"))
    if e.resolved.resolve_error:
        console.print(f"  error: {e.resolved.resolve_error}")
    for diff in e.resolved.diff:
        console.print(f"  {diff.field}: stored {diff.stored!r}, re-solved {diff.resolved!r}")


def _alternative_rows(
    alternatives: Sequence[AlternativeRow], *, grouped: bool
) -> list[tuple[str, str, str, str, str, str, str]]:
    """The table rows of ``explain``: one per alternative; with ``grouped``, rounding trials
    with the same outcome (mode, workers, start, end, violations, work) share one row,
    ``trials 0-3,5 (5)``, kept if one of them was."""
    from ...api import FailedAlternative, TrialOutcome

    out: list[tuple[str, str, str, str, str, str, str]] = []
    groups: dict[tuple[object, ...], list[TrialOutcome]] = {}
    slot: dict[tuple[object, ...], int] = {}
    for a in alternatives:
        if isinstance(a, FailedAlternative):
            out.append((a.kind, "", "", "", "", "", a.error))
            continue
        if isinstance(a, TrialOutcome) and not grouped:
            out.append(_trial_row([a], grouped=False))
            continue
        if isinstance(a, TrialOutcome):
            t = a.trial
            placed = t.end_slot is not None and a.end is not None
            key: tuple[object, ...] = (
                a.mode if placed else "", t.workers if placed else None,
                t.start_slot if placed else None, a.end, a.completion_slots, t.violations,
                round(t.work_fraction, 4),
            )  # fmt: skip
            if key in groups:
                groups[key].append(a)
                continue
            groups[key] = [a]
            slot[key] = len(out)
            out.append(_trial_row([a], grouped=True))  # completed below
            continue
        out.append(
            (a.kind, a.mode, str(a.workers), str(a.start_slot),
             _compact_time(a.end), str(a.completion_slots), "")
        )  # fmt: skip
    for key, members in groups.items():
        out[slot[key]] = _trial_row(members, grouped=True)
    return out


def _trial_row(
    members: Sequence[TrialOutcome], *, grouped: bool
) -> tuple[str, str, str, str, str, str, str]:
    first = members[0]
    t = first.trial
    ids = [m.trial.index for m in members]
    if not grouped:
        label = first.kind
    else:
        label = f"trial {ids[0]}" if len(ids) == 1 else f"trials {_ranges(ids)} ({len(ids)})"
    from ...model.decision import work_by_d_text

    notes = [f"before repair: {t.violations} over, {work_by_d_text(t.work_fraction)}"]
    if any(m.kept for m in members):
        notes.append("kept")
    placed = t.end_slot is not None and first.end is not None
    return (
        label,
        first.mode if placed else "",
        str(t.workers or 0) if placed else "",
        str(t.start_slot) if placed else "",
        _compact_time(first.end) if placed else "",
        str(first.completion_slots) if placed else "",
        ", ".join(notes),
    )


def _ranges(ids: Sequence[int]) -> str:
    """``0,1,2,3,5`` -> ``0-3, 5``."""
    parts: list[str] = []
    start = prev = ids[0]
    for n in [*ids[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ", ".join(parts)  # a space: a narrow column wraps between ranges, not in one


def show_export(rows: Sequence[DecisionRow | DecisionView], *, fmt: str) -> None:
    """``mlsub export``: JSON (each decision in full) or CSV (a history row each)."""
    if fmt == "json":
        show_json([r.to_json() for r in rows])
        return
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    from ...api import DecisionRow

    for r in rows:
        row = r if isinstance(r, DecisionRow) else r.row
        writer.writerow(
            {
                **row.to_json(),
                "placement": _placement_csv(row.summary.placement),
                "slurm_job_id": row.summary.slurm_job_id or "",
            }
        )
    typer.echo(buffer.getvalue(), nl=False)


def show_db_current(info: SchemaState, *, as_json: bool) -> None:
    if as_json:
        show_json(info.to_json())
        return
    state = "up to date" if info.up_to_date else "needs: mlsub db upgrade"
    typer.echo(f"{info.url}: revision {info.current or '(empty)'}, head {info.head} ({state})")


def show_db_upgrade(info: SchemaUpgrade, *, as_json: bool) -> None:
    if as_json:
        show_json(info.to_json())
        return
    before = info.before or "(empty)"
    if info.before == info.after:
        typer.echo(f"{info.url}: already at {info.after}")
    else:
        typer.echo(f"{info.url}: upgraded {before} -> {info.after}")


def show_report(written: ReportWritten, *, as_json: bool) -> None:
    """``mlsub report``: where the page is."""
    if as_json:
        show_json(written.to_json())
        return
    typer.echo(
        f"{written.path}: {written.decisions} decision(s) of cluster "
        f"{written.cluster_name} (open it in a browser; it needs no network)"
    )
