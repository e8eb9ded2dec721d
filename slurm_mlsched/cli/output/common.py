"""What every printer shares: the consoles, tables and text, JSON, errors, plain lines,
and the placement's table, CSV and text (shown by ``plan``, ``show`` and ``submit``)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer

from ...errors import MlschedError

if TYPE_CHECKING:
    from datetime import datetime

    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ...model import Decision, JobRequest, NodeCount


def _out() -> Console:
    from rich.console import Console

    return Console(highlight=False)


def _err() -> Console:
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def _table(*columns: Any, **options: Any) -> Table:
    """A rich table (rich is imported when something is printed: start-up stays light)."""
    from rich.table import Table

    return Table(*columns, **options)


def format_mem_mib(mib: float) -> str:
    """:func:`slurm_mlsched.model.units.format_mem_mib` (the model is imported when a
    table shows memory: start-up stays light)."""
    from ...model.units import format_mem_mib as fmt

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


def _placement_table(rows: Sequence[NodeCount], job: JobRequest, title: str) -> Table:
    from ...model import Role

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
    from ...slurm.hostlist import compress_hostlist

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


# --- replay ------------------------------------------------------------------------------------


def show_line(text: str) -> None:
    """One plain line on stdout, at once (a batch job's log)."""
    typer.echo(text)
    sys.stdout.flush()


# --- the Slurm plugins -------------------------------------------------------------------------


def show_lines(lines: Sequence[str]) -> None:
    """Plain lines on stdout, nothing else (``plan --for-sbatch``: a machine reads them)."""
    sys.stdout.write("".join(f"{line}\n" for line in lines))


# --- the queue (late binding) ------------------------------------------------------------------


def note(text: str) -> None:
    """A ``note:`` line on standard error (never mixed into ``--json`` output)."""
    _err().print(f"note: {text}")
