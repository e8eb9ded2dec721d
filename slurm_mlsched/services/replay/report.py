"""The files of a replay: ``summary.json``, ``metrics.json``, the plots (PNG) and one
self-contained ``report.html`` (the PNGs embedded as base64). Writes files; never prints.

Plots (matplotlib, Agg backend, imported only here): the JCT CDF (log-scaled hours), GPU
utilization over time and queue length over time, one line per policy. Series longer than
:data:`MAX_POINTS` slots are averaged into that many bins so that the lines stay readable.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError
from ...sim.metrics import SUMMARY_KEYS, PolicyMetrics
from .types import ReplayFiles, ReplayReport

MAX_POINTS = 1500
LINE_STYLES = ("-", "--", ":", "-.")
PLOTS = {
    "jct_cdf": "jct_cdf.png",
    "gpu_util": "gpu_util.png",
    "queue": "queue_length.png",
}

#: summary key -> (column title, how to show the value)
COLUMNS: dict[str, tuple[str, str]] = {
    "avg_jct_s": ("avg JCT", "duration"),
    "p50_jct_s": ("p50 JCT", "duration"),
    "p95_jct_s": ("p95 JCT", "duration"),
    "p99_jct_s": ("p99 JCT", "duration"),
    "makespan_s": ("makespan", "duration"),
    "total_utility": ("utility", "number"),
    "avg_wait_s": ("avg wait", "duration"),
    "gpu_util": ("GPU util", "percent"),
    "colocated_share": ("co-located", "percent"),
    "lp_bound_ratio": ("/ LP bound", "ratio"),
    "decision_p50_ms": ("decision p50", "ms"),
    "decision_p99_ms": ("decision p99", "ms"),
    "wall_s": ("wall", "seconds"),
}
assert tuple(COLUMNS) == SUMMARY_KEYS


def format_value(value: float | None, kind: str) -> str:
    """A metric as the table and the HTML show it (— for None)."""
    if value is None:
        return "—"
    if kind == "duration":
        return human_duration(value)
    if kind == "percent":
        return f"{100 * value:.1f}%"
    if kind == "ratio":
        return f"{value:.3f}"
    if kind == "ms":
        return f"{value:.2f} ms"
    if kind == "seconds":
        return f"{value:.1f} s"
    return f"{value:,.1f}"


def human_duration(seconds: float) -> str:
    if abs(seconds) < 120:
        return f"{seconds:.0f} s"
    if abs(seconds) < 2 * 3600:
        return f"{seconds / 60:.1f} min"
    if abs(seconds) < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def write_outputs(report: ReplayReport, out_dir: Path) -> ReplayFiles:
    """Write every file of the report into ``out_dir`` (created); return their paths."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot create output directory {out_dir}: {exc.strerror or exc}",
            hint="pass a writable --out DIR",
            context={"option": "--out", "value": str(out_dir)},
        ) from None
    files = {"summary": "summary.json", "metrics": "metrics.json", "html": "report.html"}
    files.update(PLOTS)
    paths = {kind: str(out_dir / name) for kind, name in files.items()}
    _write(out_dir / "summary.json", _json(report.to_json()))
    pngs = render_plots(report.metrics)
    for kind, png in pngs.items():
        (out_dir / PLOTS[kind]).write_bytes(png)
    _write(out_dir / "metrics.json", _json({**report.details(), "files": paths}))
    _write(out_dir / "report.html", render_html(report, pngs))
    return ReplayFiles(**paths)


def _json(data: object) -> str:
    return json.dumps(data, sort_keys=True, indent=2) + "\n"


def _write(path: Path, text: str) -> None:
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"cannot write {path}: {exc.strerror or exc}",
            hint="pass a writable --out DIR",
            context={"file": str(path)},
        ) from None


# --- plots ---------------------------------------------------------------------------------


def _time_unit(slots: int, slot_seconds: float) -> tuple[str, float]:
    """Hours for replays up to three days long, days beyond: (name, seconds per unit)."""
    return ("hours", 3600.0) if slots * slot_seconds <= 3 * 86400 else ("days", 86400.0)


def _binned(values: Sequence[float], slot_seconds: float, unit_s: float) -> tuple[Any, Any]:
    """(start of each slot or bin in ``unit_s`` units, value), averaged into at most
    MAX_POINTS bins."""
    y = np.asarray(values, dtype=np.float64)
    t = np.arange(len(y)) * slot_seconds / unit_s
    if len(y) <= MAX_POINTS:
        return t, y
    width = int(np.ceil(len(y) / MAX_POINTS))
    pad = (-len(y)) % width
    yb = np.pad(y, (0, pad), constant_values=np.nan).reshape(-1, width)
    tb = np.pad(t, (0, pad), mode="edge").reshape(-1, width)
    return tb[:, 0], np.nanmean(yb, axis=1)


def render_plots(metrics: Mapping[str, PolicyMetrics]) -> dict[str, bytes]:
    """The three plots as PNG bytes, by kind (:data:`PLOTS`). Policies get their own line
    style too, so that identical results stay visible one over the other."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    out: dict[str, bytes] = {}
    order = {name: i for i, name in enumerate(metrics)}

    def _style(name: str) -> dict[str, Any]:
        return {"linestyle": LINE_STYLES[order[name] % len(LINE_STYLES)]}

    def save(fig: Any) -> bytes:
        buf = io.BytesIO()
        fig.tight_layout()
        fig.savefig(buf, format="png", dpi=110)
        plt.close(fig)
        return buf.getvalue()

    from matplotlib.ticker import FuncFormatter

    fig, ax = plt.subplots(figsize=(8, 4.5))
    for name, m in metrics.items():
        if m.jct_s:
            x = np.sort(np.asarray(m.jct_s)) / 3600.0
            ax.step(x, np.arange(1, len(x) + 1) / len(x), where="post", label=name, **_style(name))
    ax.set_xscale("log")
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    ax.xaxis.set_major_formatter(plain)
    lo, hi = ax.get_xlim()
    # label the minor ticks too when the axis spans less than two decades
    ax.xaxis.set_minor_formatter(plain if hi < 100 * lo else FuncFormatter(lambda v, _: ""))
    ax.set_xlabel("job completion time (hours, log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.01)
    ax.set_title("JCT CDF")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="lower right")
    out["jct_cdf"] = save(fig)

    longest = max((len(m.series.queue) for m in metrics.values()), default=0)
    slot_s = next(iter(metrics.values())).series.slot_seconds if metrics else 600.0
    unit, unit_s = _time_unit(longest, slot_s)
    for kind, title, label, scale in (
        ("gpu_util", "GPU utilization over time", "GPUs busy (%)", 100.0),
        ("queue", "Queue length over time", "jobs waiting to start", 1.0),
    ):
        fig, ax = plt.subplots(figsize=(8, 4.5))
        for name, m in metrics.items():
            series = m.series.gpu_util if kind == "gpu_util" else m.series.queue
            if series:
                t, y = _binned([float(v) * scale for v in series], m.series.slot_seconds, unit_s)
                ax.step(t, y, where="post", label=name, linewidth=1.2, **_style(name))
        ax.set_xlabel(f"time since the first submission ({unit})")
        ax.set_ylabel(label)
        ax.set_title(title)
        ax.grid(True, alpha=0.3)
        ax.set_ylim(0, max(1.0, ax.get_ylim()[1]))
        ax.legend(loc="best")
        out[kind] = save(fig)
    return out


# --- HTML ----------------------------------------------------------------------------------


def _algorithm_table(report: ReplayReport) -> str:
    """Per policy: how its decisions were taken (``PolicyMetrics.algorithm``)."""
    esc = html.escape
    keys: list[str] = []
    for m in report.metrics.values():
        keys += [k for k, _ in m.algorithm if k not in keys]
    if not keys:
        return "<p>(not recorded)</p>"
    head = "".join(f"<th>{esc(k.replace('_', ' '))}</th>" for k in keys)
    rows = []
    for name, m in report.metrics.items():
        got = dict(m.algorithm)
        cells = "".join(f"<td>{'—' if got.get(k) is None else f'{got[k]:.3g}'}</td>" for k in keys)
        rows.append(f"<tr><th>{esc(name)}</th>{cells}</tr>")
    return f"<table><tr><th>policy</th>{head}</tr>{''.join(rows)}</table>"


def render_html(report: ReplayReport, pngs: Mapping[str, bytes]) -> str:
    """One self-contained page: what was replayed, the results table, notes, the plots."""
    esc = html.escape
    total = report.cluster.total_capacity()
    head = "".join(f"<th>{esc(title)}</th>" for title, _ in COLUMNS.values())
    rows = []
    for name, m in report.metrics.items():
        cells = "".join(
            f"<td>{esc(format_value(getattr(m, key), kind))}</td>"
            for key, (_, kind) in COLUMNS.items()
        )
        rows.append(f"<tr><th>{esc(name)}</th>{cells}<td>{m.rejected}</td></tr>")
    facts = [
        ("trace", f"{report.trace} ({report.source})"),
        (
            "jobs",
            f"{report.jobs} replayed · {report.skipped} skipped · "
            f"{len(report.unplaceable)} unplaceable",
        ),
        (
            "cluster",
            f"{report.cluster_label}: {len(report.cluster.machines)} nodes, {total.gpu:g} GPUs, "
            f"{total.cpu:g} CPUs; Δ = {report.cluster.slot_seconds:g} s",
        ),
        ("form / seed", f"{report.params.form.value} / {report.params.seed}"),
        (
            "binding / restart cost",
            f"{report.params.binding.value} (yu-rr) / {report.params.restart_s:g} s of no "
            "progress per re-allocation, every policy",
        ),
        (
            "yu-rr queue program / look-ahead",
            f"{report.params.queue_program} / {'on' if report.params.lookahead else 'off'}",
        ),
        ("epoch (slot 0)", report.cluster.epoch.isoformat()),
    ]
    fact_rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in facts)
    notes = list(report.notes)
    for u in report.unplaceable[:20]:
        notes.append(f"unplaceable {u.job.job_id}: {u.reason}")
    if len(report.unplaceable) > 20:
        notes.append(f"… and {len(report.unplaceable) - 20} more unplaceable (metrics.json)")
    for name, m in report.metrics.items():
        for job_id, error in m.rejected_jobs[:5]:
            notes.append(f"{name} rejected {job_id}: {error}")
    note_items = "".join(f"<li>{esc(n)}</li>" for n in notes if n)
    images = "".join(
        f'<figure><img alt="{esc(kind)}" src="data:image/png;base64,'
        f'{base64.b64encode(png).decode("ascii")}"></figure>'
        for kind, png in pngs.items()
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>mlsub replay: {esc(report.trace)}</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
th, td {{ border: 1px solid #ccc; padding: 0.3em 0.6em; text-align: right; }}
th {{ background: #f3f3f3; }}
table.facts th, table.facts td {{ text-align: left; }}
figure {{ margin: 1em 0; }} img {{ max-width: 100%; }}
</style></head><body>
<h1>Replay of {esc(report.trace)}</h1>
<table class="facts">{fact_rows}</table>
<h2>Results</h2>
<table><tr><th>policy</th>{head}<th>rejected</th></tr>{"".join(rows)}</table>
<p>JCT = finish − submit; wait = start − submit; GPU util = mean over the replay;
co-located = share of job-slots; "/ LP bound" = total completion time ÷ the LP lower bound
(small replays only). Definitions: docs/replay-guide.md.</p>
<h2>What the algorithm did</h2>
{_algorithm_table(report)}
<h2>Notes</h2><ul>{note_items}</ul>
<h2>Plots</h2>{images}
</body></html>
"""
