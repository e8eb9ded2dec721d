"""The cluster and its admin: ``mlsub cluster``, ``plugins check``/``install``, ``calibrate``.

Printers only: results to stdout (rich, or JSON with ``--json``), nothing else."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from ...api import CalibrationReport, ClusterState
    from ...plugins.check import CheckReport

from .common import (
    _assemble,
    _out,
    _short_time,
    _table,
    _text,
    format_mem_mib,
    show_json,
)


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
            f"{free.gpu:g}/{total.gpu:g}" + _gpu_type(node.record.gpu_type),
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


def _gpu_type(kind: str | None) -> str:
    """`` t4`` after a typed node's GPU counts (nothing for an untyped node)."""
    return "" if kind is None else f" {kind}"


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
