"""The one module that prints. Results go to stdout (rich tables, or JSON with
``--json``); errors go to stderr. JSON is ``json.dumps(sort_keys=True, indent=2)`` and
nothing else is ever written to stdout with it."""

from __future__ import annotations

import csv
import io
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import typer

from ..errors import MlschedError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ..services.replan import QueueView, ReplanReport
    from ..services.replay import ReplayReport
    from ..services.replay.array import ArraySubmission
    from ..services.replay.cells import CellRun


def _out() -> Console:
    from rich.console import Console

    return Console(highlight=False)


def _err() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


#: ``mlsub history`` adds the creation time from this terminal width on.
HISTORY_WIDE = 110


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


def show_policies(policies: Sequence[Mapping[str, str]], *, as_json: bool) -> None:
    if as_json:
        show_json(list(policies))
        return
    table = _table("policy", "summary", box=None)
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
        _text(
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
    table = _table("node", "role", "count", "GPUs", "CPUs", "memory", title=title)
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
    table = _table("slots", "start (UTC)", "mode", "workers", "PSs", title="schedule")
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
    table = _table(show_header=False, box=None, title="summary", title_justify="left")
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


def _job_ids(d: Mapping[str, Any]) -> str:
    """The Slurm job id, and the earlier ones of a queued job submitted again."""
    current = d["slurm_job_id"] or "—"
    earlier = d.get("earlier_slurm_job_ids") or []
    return f"{current} (earlier: {', '.join(earlier)})" if earlier else current


def _short_time(iso: str) -> str:
    """``2026-01-01T10:00:00+00:00`` -> ``2026-01-01 10:00:00``."""
    return iso.replace("T", " ").removesuffix("+00:00")


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


def _placement_csv(rows: Sequence[Mapping[str, Any]]) -> str:
    """``node1:ps:1;node1:worker:4``: the export's one-cell form (stable, for scripts)."""
    return ";".join(f"{r['node']}:{r['role']}:{r['count']}" for r in rows)


def _placement_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """``node[1-3]:2w+1ps node4:1w``: nodes holding the same counts share one host list."""
    from ..slurm.hostlist import compress_hostlist

    per: dict[str, dict[str, int]] = {}
    for r in rows:
        per.setdefault(str(r["node"]), {}).update({str(r["role"]): int(r["count"])})
    groups: dict[str, list[str]] = {}
    for node, counts in per.items():
        parts = [
            f"{counts[k]}{short}" for k, short in (("worker", "w"), ("ps", "ps")) if counts.get(k)
        ]
        groups.setdefault("+".join(parts), []).append(node)
    return " ".join(f"{compress_hostlist(nodes)}:{what}" for what, nodes in groups.items())


def _compact_time(iso: str | None) -> str:
    """``2026-01-01T10:00:00+00:00`` -> ``01-01 10:00`` (history's columns)."""
    if not iso:
        return "—"
    return _short_time(iso)[5:16]


def show_reserved(plan: Mapping[str, Any], *, as_json: bool) -> None:
    """``mlsub plan --reserve``: the plan, then the id it was recorded under."""
    show_plan(plan, as_json=as_json)
    if not as_json:
        _out().print(
            f"reserved as decision {plan['decision_id']} (state {plan['state']}, cluster "
            f"{plan['cluster_name']}); give it back with: mlsub release {plan['decision_id']}"
        )


def show_released(row: Mapping[str, Any], *, as_json: bool) -> None:
    if as_json:
        show_json(row)
        return
    _out().print(f"decision {row['decision_id']} released")


def show_trusted(row: Mapping[str, Any], *, as_json: bool) -> None:
    if as_json:
        show_json(row)
        return
    what = f"{row['host']} {row['key_type']} {row['fingerprint']}"
    if row["added"]:
        typer.echo(f"trusted {what}: added to {row['known_hosts']}")
    else:
        typer.echo(f"{what} is already in {row['known_hosts']}: nothing to do")


def show_history(rows: Sequence[Mapping[str, Any]], *, as_json: bool) -> None:
    if as_json:
        show_json(list(rows))
        return
    from rich import box

    console = _out()
    wide = console.width >= HISTORY_WIDE
    table = _table(box=box.SIMPLE_HEAD, padding=0, pad_edge=False, show_edge=False)
    columns = ["id", *(["created (UTC)"] if wide else []), "user", "job", "state"]
    columns += ["start (UTC)", "end", "placement", "slurm job"]
    for name in columns:
        table.add_column(name, overflow="fold")
    for r in rows:
        created = [_compact_time(r["created_at"])] if wide else []
        table.add_row(
            str(r["decision_id"]),
            *created,
            r["user"],
            r["job_id"],
            r["state"],
            _compact_time(r["start"]),
            _compact_time(r["end"]),
            _placement_text(r["placement"]),
            r["slurm_job_id"] or "—",
        )
    console.print(table)


def show_decision(d: Mapping[str, Any], *, as_json: bool) -> None:
    if as_json:
        show_json(d)
        return
    console = _out()
    console.print(
        _text(f"Decision {d['decision_id']}: job {d['job_id']!r} of {d['user']}", style="bold")
    )
    table = _table(show_header=False, box=None)
    rows = [
        ("state", d["state"]),
        ("cluster", d["cluster"]),
        ("created", f"{_short_time(d['created_at'])} on {d['host']}"),
        ("policy", f"{d['policy']} ({d['form']}), seed {d['seed']}"),
        ("mode", d["mode"]),
        ("start", f"{_short_time(d['start'])} (slot {d['start_slot']})"),
        ("end", f"{_short_time(d['end'])} (end of slot {d['end_slot']})"),
        ("placement", _placement_text(d["placement"])),
        ("solver", f"{d['solver'] or '—'} {d['solver_version']} · {d['trials']} trial(s)"),
        ("LP deadline", "—" if d["lp_deadline_slot"] is None else f"slot {d['lp_deadline_slot']}"),
        ("snapshot", f"sha256 {d['snapshot_sha256'][:16]}…"),
        ("slurm job", _job_ids(d)),
    ]
    for key, value in rows:
        table.add_row(key, str(value))
    console.print(table)
    history = _table("state", "at (UTC)", "detail", title="state history")
    for t in d["transitions"]:
        history.add_row(t["state"], _short_time(t["at"]), t["detail"])
    console.print(history)


def show_explanation(e: Mapping[str, Any], *, as_json: bool, all_trials: bool = False) -> None:
    if as_json:
        show_json(e)
        return
    from rich import box

    console = _out()
    console.print(
        _text(
            f"Decision {e['decision_id']}: {e['mode']} ({e['policy']}, {e['form']})", style="bold"
        )
    )
    for line in e["why"]:
        console.print(f"  • {line}")
    for b in e["binding"]:
        console.print(f"  • {b['node']}: tightest resource {b['resource']} at {b['share']:.0%}")
    table = _table(
        box=box.SIMPLE_HEAD, padding=0, pad_edge=False, show_edge=False,
        title="alternatives (completion = end slot − arrival + 1)",
    )  # fmt: skip
    for name in ("alternative", "mode", "workers", "start", "end (UTC)", "slots", "notes"):
        table.add_column(name, overflow="fold")
    rows = e["alternatives"] if all_trials else _grouped_trials(e["alternatives"])
    for a in rows:
        if "error" in a:
            table.add_row(a["kind"], "", "", "", "", "", a["error"])
            continue
        notes = []
        if "violations" in a:
            notes.append(
                f"before repair: {a['violations']} over, {a['work_fraction']:.0%} of work by D"
            )
            if a.get("kept"):
                notes.append("kept")
        table.add_row(
            a["kind"],
            a.get("mode", ""),
            str(a.get("workers", "")),
            str(a.get("start_slot", "")),
            _compact_time(a["end"]) if a.get("end") else "",
            str(a.get("completion_slots", "")),
            ", ".join(notes),
        )
    console.print(table)
    if not all_trials and len(rows) < len(e["alternatives"]):
        console.print("  (identical rounding trials shown once; every trial: --trials)")
    if e["reproduced"]:
        console.print(_text("re-solve from the stored inputs: reproduced exactly", style="green"))
        return
    console.print(_text("re-solve from the stored inputs: NOT reproduced", style="bold red"))
    if e["resolve_error"]:
        console.print(f"  error: {e['resolve_error']}")
    for diff in e["diff"]:
        console.print(
            f"  {diff['field']}: stored {diff['stored']!r}, re-solved {diff['resolved']!r}"
        )


def _grouped_trials(alternatives: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The rounding trials with the same outcome (mode, workers, start, end, violations,
    work) as one row, ``trials 0-3,5 (5)``, kept if one of them was; the other rows as
    they are, in order."""
    keys = ("mode", "workers", "start_slot", "end", "completion_slots", "violations")
    out: list[dict[str, Any]] = []
    seen: dict[tuple[object, ...], dict[str, Any]] = {}
    for a in alternatives:
        kind = str(a.get("kind", ""))
        if not kind.startswith("rounding trial") or "error" in a:
            out.append(dict(a))
            continue
        key = (*(a.get(k) for k in keys), round(float(a.get("work_fraction", 0.0)), 4))
        row = seen.get(key)
        if row is None:
            row = {**a, "trials": []}
            seen[key] = row
            out.append(row)
        row["trials"].append(int(kind.rsplit(" ", 1)[-1]))
        row["kept"] = bool(row.get("kept")) or bool(a.get("kept"))
    for row in seen.values():
        ids = row.pop("trials")
        row["kind"] = f"trial {ids[0]}" if len(ids) == 1 else f"trials {_ranges(ids)} ({len(ids)})"
    return out


def _ranges(ids: Sequence[int]) -> str:
    """``0,1,2,3,5`` -> ``0-3,5``."""
    parts: list[str] = []
    start = prev = ids[0]
    for n in [*ids[1:], None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if n is not None:
            start = prev = n
    return ",".join(parts)


def show_export(rows: Sequence[Mapping[str, Any]], *, fmt: str) -> None:
    if fmt == "json":
        show_json(list(rows))
        return
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for r in rows:
        writer.writerow(
            {
                **r,
                "placement": _placement_csv(r["placement"]),
                "slurm_job_id": r["slurm_job_id"] or "",
            }
        )
    typer.echo(buffer.getvalue(), nl=False)


def show_db_current(info: Mapping[str, Any], *, as_json: bool) -> None:
    if as_json:
        show_json(info)
        return
    state = "up to date" if info["up_to_date"] else "needs: mlsub db upgrade"
    typer.echo(
        f"{info['url']}: revision {info['current'] or '(empty)'}, head {info['head']} ({state})"
    )


def show_db_upgrade(info: Mapping[str, Any], *, as_json: bool) -> None:
    if as_json:
        show_json(info)
        return
    before = info["before"] or "(empty)"
    if info["before"] == info["after"]:
        typer.echo(f"{info['url']}: already at {info['after']}")
    else:
        typer.echo(f"{info['url']}: upgraded {before} -> {info['after']}")


def show_cluster(state: Mapping[str, Any], *, as_json: bool) -> None:
    """Render ``ClusterState.as_dict()``: JSON, or one row per node and a summary."""
    if as_json:
        show_json(state)
        return
    console = _out()
    version = state["slurm_version"] or "?"
    console.print(
        _text(
            f"Cluster at {_short_time(state['now'])[:19]} UTC: Slurm {version}, "
            f"read with {state['source']}"
            + (f" ({state['source_reason']})" if state.get("source_reason") else ""),
            style="bold",
        ),
        soft_wrap=True,
    )
    table = _table("node", "state", "GPUs", "CPUs", "memory", title="free now / total")
    table.add_column("running jobs", overflow="fold")
    for node in state["nodes"]:
        free, total = node["free_now"], node["total"]
        table.add_row(
            node["name"],
            node["state"].lower() + ("" if node["usable"] else " (excluded)"),
            f"{free['gpus']:g}/{total['gpus']:g}",
            f"{free['cpus']:g}/{total['cpus']:g}",
            f"{format_mem_mib(free['mem_mib'])}/{format_mem_mib(total['mem_mib'])}",
            ", ".join(node["jobs"]) or "—",
        )
    console.print(table)
    free, capacity = state["free_now"], state["capacity"]
    usable = sum(1 for n in state["nodes"] if n["usable"])
    console.print(
        f"{usable} usable node(s) of {len(state['nodes'])}; free now "
        f"{free['gpus']:g}/{capacity['gpus']:g} GPUs, {free['cpus']:g}/{capacity['cpus']:g} "
        f"CPUs, {format_mem_mib(free['mem_mib'])}/{format_mem_mib(capacity['mem_mib'])}; "
        f"{len(state['jobs'])} running job(s)",
        soft_wrap=True,
    )
    for excluded in state["excluded"]:
        console.print(
            _assemble(("excluded", "bold yellow"), f": {excluded['name']}: {excluded['reason']}"),
            soft_wrap=True,
        )
    for note in state["notes"]:
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
        tasks: dict[str, Any] = {}

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


def show_submitted(result: Mapping[str, Any], *, as_json: bool, show_script: bool) -> None:
    """``mlsub submit`` / ``mlsub plan SCRIPT`` (live): the plan, the script, the outcome."""
    if as_json:
        show_json(result)
        return
    show_plan(result, as_json=False)
    console = _out()
    excluded = result["cluster"].get("excluded") or []
    if excluded:
        console.print("not used: " + ", ".join(f"{e['name']} ({e['reason']})" for e in excluded))
    if show_script:
        console.print(_text("sbatch script:", style="bold"))
        console.print(_text(result["script"]), soft_wrap=True)
    begin = f", begins {_short_time(result['begin'])}" if result.get("begin") else ""
    waits = (
        f"; it cannot start now: it would wait in mlsub's queue (estimated start "
        f"{_short_time(result['start'])})"
        if result.get("waits")
        else ""
    )
    if result.get("decision_id") is None:
        console.print(f"dry run: nothing recorded or submitted{begin}{waits}")
        return
    if result.get("waits"):
        console.print(
            f"decision {result['decision_id']} waits in mlsub's queue, held as Slurm job "
            f"{result['slurm_job_id']} (state {result['state']}; estimated start "
            f"{_short_time(result['start'])}); a re-plan starts it when resources free up: "
            "mlsub queue shows where it stands"
        )
        for warning in result.get("warnings") or ():
            _err().print(f"warning: {warning}")
        return
    console.print(
        f"decision {result['decision_id']} submitted as Slurm job {result['slurm_job_id']}"
        f"{begin} (state {result['state']}); follow it with: mlsub show "
        f"{result['decision_id']}, squeue -j {result['slurm_job_id']}"
    )
    for warning in result.get("warnings") or ():
        _err().print(f"warning: {warning}")


def show_reconciled(report: Mapping[str, Any], *, as_json: bool) -> None:
    """``mlsub reconcile``: one row per open decision looked at."""
    if as_json:
        show_json(report)
        return
    console = _out()
    rows = report["decisions"]
    if not rows:
        console.print("no open decisions to reconcile")
    else:
        table = _table("decision", "slurm job", "before", "after", "found in", "note")
        for r in rows:
            table.add_row(
                str(r["decision_id"]),
                r["slurm_job_id"] or "",
                r["before"],
                r["after"],
                r["found_in"] or "",
                r["note"],
            )
        console.print(table)
    for note in report["notes"]:
        _err().print(f"note: {note}")


# --- the Slurm plugins -------------------------------------------------------------------------


def show_plugin_check(report: Mapping[str, Any], *, as_json: bool) -> None:
    """``mlsub plugins check``: one ``FILE: ok`` line per good file, else its problems as
    ``FILE:LINE: error: message`` (the compiler convention editors understand)."""
    if as_json:
        show_json(report)
        return
    for f in report["files"]:
        for finding in f["findings"]:
            where = f["path"] if finding["line"] is None else f"{f['path']}:{finding['line']}"
            typer.echo(f"{where}: {finding['severity']}: {finding['message']}")
        if f["ok"]:
            typer.echo(f"{f['path']}: ok ({f['kind']}, checked with {report['interpreter']})")


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
        table = _table("decision", "user", "slurm job", "started", "on", "note")
        for s in report.started:
            table.add_row(
                str(s.decision_id), s.user, s.slurm_job_id or "", s.action, s.placement, s.note
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
    table = _table("pos", "decision", "user", "job", "slurm job", "est. start", "waits for")
    for w in rows:
        start = "" if w.estimated_start is None else f"{w.estimated_start:%m-%d %H:%M}"
        table.add_row(
            str(w.position) if w.position else "now",
            str(w.decision_id),
            w.user,
            w.job_name,
            w.slurm_job_id or "",
            start,
            w.reason,
        )
    console.print(table)


def note(text: str) -> None:
    """A ``note:`` line on standard error (never mixed into ``--json`` output)."""
    _err().print(f"note: {text}")


def show_calibration(report: Mapping[str, Any], *, as_json: bool) -> None:
    """``mlsub calibrate``: per model the runs, the factor and the prediction error."""
    if as_json:
        show_json(report)
        return
    console = _out()
    rows = report["models"]
    if not rows:
        console.print("no completed runs of a profiled model (--model) to fit from")
        return

    def pct(x: float | None) -> str:
        return "—" if x is None else f"{x:.0%}"

    table = _table(
        "model", "runs of", "runs", "factor", "error before", "error after", "version", "note"
    )
    for r in rows:
        factor = "—" if r["factor"] is None else f"×{r['factor']:.3g}"
        version = "" if r["version"] is None else f"v{r['version']}"
        whose = (r["scope"] or "").removeprefix("user:") or "everyone"
        table.add_row(
            r["model"], whose, str(r["samples"]), factor, pct(r["error_before"]),
            pct(r["error_after"]), version, r["skipped"] or ("reset" if report["reset"] else ""),
        )  # fmt: skip
    console.print(table)


def show_report(result: Mapping[str, Any], *, as_json: bool) -> None:
    """``mlsub report``: where the page is."""
    if as_json:
        show_json(result)
        return
    typer.echo(
        f"{result['path']}: {result['decisions']} decision(s) of cluster "
        f"{result['cluster_name']} (open it in a browser; it needs no network)"
    )
