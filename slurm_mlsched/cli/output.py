"""The one module that prints. Results go to stdout (rich tables, or JSON with
``--json``); errors go to stderr. JSON is ``json.dumps(sort_keys=True, indent=2)`` and
nothing else is ever written to stdout with it."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from ..errors import MlschedError

if TYPE_CHECKING:
    from datetime import datetime

    from rich.console import Console
    from rich.progress import TaskID
    from rich.table import Table
    from rich.text import Text

    from ..model import Decision, JobRequest, NodeCount
    from ..plugins.check import CheckReport
    from ..remote.trust import Trusted
    from ..services.calibrate import CalibrationReport
    from ..services.cluster_state import ClusterState
    from ..services.decision_views import (
        AlternativeRow,
        DecisionRow,
        DecisionView,
        Explanation,
        SchemaState,
        SchemaUpgrade,
        TrialOutcome,
    )
    from ..services.decisions import ReservedPlan
    from ..services.plan import PlanResult, SlotRun
    from ..services.policies import PolicyInfo
    from ..services.reconcile import ReconcileReport
    from ..services.replan import QueueView, ReplanReport
    from ..services.replay import ReplayReport
    from ..services.replay.array import ArraySubmission
    from ..services.replay.cells import CellRun
    from ..services.report import ReportWritten
    from ..services.submit import SubmitOutcome
    from ..sim.queue_estimate import JobEstimate, QueueEstimate


def _out() -> Console:
    from rich.console import Console

    return Console(highlight=False)


def _err() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


#: ``mlsub history`` adds the creation time from this terminal width on, and the policy
#: and mode from ``HISTORY_WIDER`` on.
HISTORY_WIDE = 110
HISTORY_WIDER = 150
#: ``mlsub queue`` adds the Slurm job id from this terminal width on.
QUEUE_WIDE = 110


def _table(*columns: Any, **options: Any) -> Table:
    """A rich table (rich is imported when something is printed: start-up stays light)."""
    from rich.table import Table

    return Table(*columns, **options)


def format_mem_mib(mib: float) -> str:
    """:func:`slurm_mlsched.model.units.format_mem_mib` (the model is imported when a
    table shows memory: start-up stays light)."""
    from ..model.units import format_mem_mib as fmt

    return fmt(mib)


def _assemble(*parts: Any, **options: Any) -> Text:
    from rich.text import Text

    return Text.assemble(*parts, **options)


def _text(text: str = "", **options: Any) -> Text:
    from rich.text import Text

    return Text(text, **options)


def show_json(data: object) -> None:
    typer.echo(json.dumps(data, sort_keys=True, indent=2))


def show_version(version: str) -> None:
    typer.echo(f"mlsub {version}")


def show_error(err: MlschedError) -> None:
    console = _err()
    console.print(_assemble(("error", "bold red"), f"[{err.code}]: {err.message}"), soft_wrap=True)
    if err.hint:
        console.print(_assemble(("hint", "bold yellow"), f": {err.hint}"), soft_wrap=True)


def show_internal_error(exc: BaseException) -> None:
    console = _err()
    console.print(
        _assemble(
            ("error", "bold red"),
            f"[internal]: unexpected {type(exc).__name__}: {exc}",
        ),
        soft_wrap=True,
    )
    console.print(
        _assemble(
            ("hint", "bold yellow"),
            ": this is a bug in mlsub; rerun with MLSUB_DEBUG=1 for a traceback and report it",
        ),
        soft_wrap=True,
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


def _placement_table(rows: Sequence[NodeCount], job: JobRequest, title: str) -> Table:
    from ..model import Role

    table = _table("node", "role", "count", "GPUs", "CPUs", "memory", title=title)
    for row in rows:
        per = job.ps if row.role == Role.PS else job.worker
        n = row.count
        table.add_row(
            row.node,
            str(row.role),
            str(n),
            f"{per.gpu * n:g}",
            f"{per.cpu * n:g}",
            format_mem_mib(per.mem * n),
        )
    return table


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


def _kept_row(d: Decision) -> tuple[tuple[str, str], ...]:
    """The ``kept`` row of plan's and show's tables: which rounding trial the policy kept
    and why (none for a decision without rounding, e.g. the fast path)."""
    return (("kept", d.kept_text),) if d.kept_text else ()


def _job_ids(slurm_job_id: str | None, earlier: Sequence[str]) -> str:
    """The Slurm job id, and the earlier ones of a queued job submitted again."""
    current = slurm_job_id or "—"
    return f"{current} (earlier: {', '.join(earlier)})" if earlier else current


def _short_time(moment: datetime) -> str:
    """``2026-01-01 10:00:00`` (UTC without its offset; another offset is kept)."""
    return moment.isoformat().replace("T", " ").removesuffix("+00:00")


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    text = f"{hours}h {minutes:02d}m" if hours else f"{minutes}m {secs:02d}s"
    return f"{text} ({seconds:.0f} s)"


# --- the decision store ------------------------------------------------------------------------

#: Columns of ``mlsub export --format csv`` (placement as ``node:role:count`` joined by ``;``).
CSV_COLUMNS = (
    "decision_id", "cluster", "created_at", "user", "host", "job_id", "job_name", "policy",
    "form", "mode", "state", "start", "end", "start_slot", "end_slot", "placement",
    "slurm_job_id",
)  # fmt: skip


def _placement_csv(rows: Sequence[NodeCount]) -> str:
    """``node1:ps:1;node1:worker:4``: the export's one-cell form (stable, for scripts)."""
    return ";".join(f"{r.node}:{r.role.value}:{r.count}" for r in rows)


def _placement_text(rows: Sequence[NodeCount]) -> str:
    """``node[1-3]:2w+1ps node4:1w``: nodes holding the same counts share one host list."""
    from ..slurm.hostlist import compress_hostlist

    per: dict[str, dict[str, int]] = {}
    for r in rows:
        per.setdefault(r.node, {}).update({r.role.value: r.count})
    groups: dict[str, list[str]] = {}
    for node, counts in per.items():
        parts = [
            f"{counts[k]}{short}" for k, short in (("worker", "w"), ("ps", "ps")) if counts.get(k)
        ]
        groups.setdefault("+".join(parts), []).append(node)
    return " ".join(f"{compress_hostlist(nodes)}:{what}" for what, nodes in groups.items())


def _compact_time(moment: datetime | None) -> str:
    """``01-01 10:00`` (history's columns); ``—`` for none."""
    if moment is None:
        return "—"
    return _short_time(moment)[5:16]


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
    from ..services.decision_views import FailedAlternative, TrialOutcome

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
    from ..model.decision import work_by_d_text

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
    from ..services.decision_views import DecisionRow

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


def show_cluster(state: ClusterState, *, as_json: bool) -> None:
    """``mlsub cluster``: JSON, or one row per node and a summary."""
    if as_json:
        show_json(state.to_json())
        return
    console = _out()
    version = state.slurm_version or "?"
    console.print(
        _text(
            f"Cluster at {_short_time(state.now)[:19]} UTC: Slurm {version}, "
            f"read with {state.source}"
            + (f" ({state.source_reason})" if state.source_reason else ""),
            style="bold",
        ),
        soft_wrap=True,
    )
    table = _table("node", "state", "GPUs", "CPUs", "memory", title="free now / total")
    table.add_column("running jobs", overflow="fold")
    for node in state.nodes:
        free, total = node.free_now, node.total
        table.add_row(
            node.record.name,
            node.record.state_text.lower() + ("" if node.usable else " (excluded)"),
            f"{free.gpu:g}/{total.gpu:g}",
            f"{free.cpu:g}/{total.cpu:g}",
            f"{format_mem_mib(free.mem)}/{format_mem_mib(total.mem)}",
            ", ".join(node.jobs) or "—",
        )
    console.print(table)
    free, capacity = state.free_now, state.capacity
    usable = sum(1 for n in state.nodes if n.usable)
    console.print(
        f"{usable} usable node(s) of {len(state.nodes)}; free now "
        f"{free.gpu:g}/{capacity.gpu:g} GPUs, {free.cpu:g}/{capacity.cpu:g} "
        f"CPUs, {format_mem_mib(free.mem)}/{format_mem_mib(capacity.mem)}; "
        f"{len(state.jobs)} running job(s)",
        soft_wrap=True,
    )
    for excluded in state.excluded:
        console.print(
            _assemble(("excluded", "bold yellow"), f": {excluded.record.name}: {excluded.reason}"),
            soft_wrap=True,
        )
    for note in state.notes:
        console.print(_assemble(("note", "bold yellow"), f": {note}"), soft_wrap=True)


# --- replay ------------------------------------------------------------------------------------


@contextmanager
def replay_progress(*, enabled: bool = True) -> Iterator[Callable[[str, int, int], None]]:
    """A progress bar per policy on stderr; yields ``update(policy, done, total)``."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err(),
        disable=not enabled,
    ) as bar:
        tasks: dict[str, TaskID] = {}

        def update(policy: str, done: int, total: int) -> None:
            if policy not in tasks:
                tasks[policy] = bar.add_task(policy, total=total)
            bar.update(tasks[policy], completed=done)

        yield update


def show_replay(report: ReplayReport, *, as_json: bool) -> None:
    """Render a replay's report: ``report.to_json()`` (``summary.json``) as JSON, or a
    table of the policies, the counts, the notes and the files written."""
    from ..services.replay.report import COLUMNS, format_value

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
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=_err(),
        disable=not enabled,
    ) as bar:
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


def show_line(text: str) -> None:
    """One plain line on stdout, at once (a batch job's log)."""
    typer.echo(text)
    sys.stdout.flush()


def show_cell(ran: CellRun) -> None:
    """``mlsub replay-cell``: one line per cell into its task's log."""
    cell = ran.cell
    typer.echo(
        f"cell {cell.index} ({cell.policy}, seed {cell.seed}, slice "
        f"{cell.slice + 1}/{ran.slices}): jobs [{ran.lo}, {ran.hi}) "
        f"of {ran.jobs}, {ran.placed} placed, "
        f"{ran.rejected} rejected, {ran.wall_s:.3f} s"
    )


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


# --- the Slurm plugins -------------------------------------------------------------------------


def show_plugin_check(report: CheckReport, *, as_json: bool) -> None:
    """``mlsub plugins check``: one ``FILE: ok`` line per good file, else its problems as
    ``FILE:LINE: error: message`` (the compiler convention editors understand)."""
    if as_json:
        show_json(report.to_json())
        return
    for f in report.files:
        for finding in f.findings:
            where = f.path if finding.line is None else f"{f.path}:{finding.line}"
            typer.echo(f"{where}: {finding.severity}: {finding.message}")
        if f.ok:
            typer.echo(f"{f.path}: ok ({f.kind}, checked with {report.interpreter})")


def show_installed_plugins(paths: Sequence[str]) -> None:
    for path in paths:
        typer.echo(f"wrote {path}")
    typer.echo(
        "next: edit their site tables, then check them: mlsub plugins check "
        + " ".join(paths)
        + " (install: docs/admin-plugins.md)"
    )


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


def show_lines(lines: Sequence[str]) -> None:
    """Plain lines on stdout, nothing else (``plan --for-sbatch``: a machine reads them)."""
    sys.stdout.write("".join(f"{line}\n" for line in lines))


# --- the queue (late binding) ------------------------------------------------------------------


def show_replanned(report: ReplanReport, *, as_json: bool, quiet: bool = False) -> None:
    """``mlsub replan``: the jobs it started, then the queue it left."""
    if as_json:
        show_json(report.to_json())
        return
    if quiet:
        return
    console = _out()
    if report.started:
        from rich import box

        table = _table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), pad_edge=False, show_edge=False)
        for name in ("id", "user", "slurm job", "started", "on", "note"):
            table.add_column(name, overflow="fold")
        for s in report.started:
            table.add_row(
                str(s.decision_id), s.user, s.slurm_job_id or "—", s.action, s.placement, s.note
            )
        console.print(table)
    else:
        console.print("no queued job can start now")
    if report.waiting:
        console.print(f"{len(report.waiting)} job(s) still wait (mlsub queue)")
    for note in report.notes:
        _err().print(f"note: {note}")
    if report.skipped:
        _err().print(
            f"note: {len(report.skipped)} queued job(s) of other users were left to their "
            "owners' or root's re-plan"
        )


def show_queue(view: QueueView, *, as_json: bool) -> None:
    """``mlsub queue``: queue position, estimated start, what each job waits for."""
    if as_json:
        show_json(view.to_json())
        return
    console = _out()
    rows = [*view.would_start, *view.waiting]
    if not rows:
        console.print("no queued jobs")
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
    console.print(bound_line(view.bound, view.bound_reason))


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


def note(text: str) -> None:
    """A ``note:`` line on standard error (never mixed into ``--json`` output)."""
    _err().print(f"note: {text}")


def show_calibration(report: CalibrationReport, *, as_json: bool) -> None:
    """``mlsub calibrate``: per model the runs, the factor and the prediction error."""
    if as_json:
        show_json(report.to_json())
        return
    console = _out()
    rows = report.fits
    if not rows:
        console.print("no completed runs of a profiled model (--model) to fit from")
        return

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{x:.0%}"

    table = _table(
        "model", "runs of", "runs", "factor", "error before", "error after", "version", "note"
    )
    for f in rows:
        factor = "—" if f.factor is None else f"×{f.factor:.3g}"
        number = report.version(f)
        version = "" if number is None else f"v{number}"
        whose = f.scope.removeprefix("user:") or "everyone"
        table.add_row(
            f.model, whose, str(f.samples), factor, pct(f.error_before),
            pct(f.error_after), version, f.skipped or ("reset" if report.reset else ""),
        )  # fmt: skip
    console.print(table)


def show_report(written: ReportWritten, *, as_json: bool) -> None:
    """``mlsub report``: where the page is."""
    if as_json:
        show_json(written.to_json())
        return
    typer.echo(
        f"{written.path}: {written.decisions} decision(s) of cluster "
        f"{written.cluster_name} (open it in a browser; it needs no network)"
    )
