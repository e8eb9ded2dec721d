"""``mlsub report``: the decision history as one self-contained HTML page (issue 20).

:func:`report_data` reads the store once (``SqlDecisionStore.report_rows``: three
queries, the read path, no planning lock) and turns each decision into a compact row —
planned window, what Slurm did (start, end, state, from the transitions reconcile
recorded with Slurm's times), time pending, predicted and actual runtime, GPUs — plus the
aggregates the page shows: counts per user and state, the prediction error by model and
by user, queue length over time, GPU-hours planned vs used per day, and the speed-profile
fits in force (``mlsub calibrate``). :func:`render_page` puts that JSON into the page
template (``data/report.html``: its script and styles inline, nothing fetched at view
time). Both are pure; :func:`write_report` writes the page and says where
(:class:`ReportWritten`, what ``mlsub report`` prints).

Size: the page draws at most ``MAX_BARS`` timeline bars and ``MAX_POINTS`` scatter points
of the filtered decisions (the newest; the page says how many it left out); the
aggregates always cover every decision of the report.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from .. import __version__
from ..files.atomic import write_atomically
from ..model import Role
from ..model.calibration import ProfileFit
from ..storage import ReportRow, codec
from .plan import predicted_runtime_s

#: Timeline bars and scatter points the page draws at most (the newest of the filter).
MAX_BARS = 2000
MAX_POINTS = 5000
#: Points of the queue-length series.
QUEUE_POINTS = 400

_ENDED = ("completed", "failed", "cancelled")


def _ts(moment: datetime | None) -> float | None:
    return None if moment is None else round(moment.timestamp(), 1)


def decision_row(r: ReportRow) -> dict[str, Any]:
    """One decision for the page (short keys: the page holds up to 100,000 of them)."""
    s = r.summary
    times: dict[str, datetime] = {}
    for state, at in r.transitions:
        times.setdefault(state, at)
    try:
        decision = codec.decode_decision(codec.loads(r.decision_json))
        request = codec.decode_request(codec.loads(r.request_json))
    except (codec.CodecError, ValueError, KeyError, TypeError):
        return _unreadable_row(r, times)
    slots = max(1, s.end_slot - s.start_slot + 1)
    slot_seconds = (s.end - s.start).total_seconds() / slots
    predicted = predicted_runtime_s(decision, request, slot_seconds) if slot_seconds > 0 else None
    started = times.get("running")
    ended = next((times[k] for k in _ENDED if k in times), None)
    actual = (ended - started).total_seconds() if started and ended else None
    gpus = sum(
        c.count * (request.worker.gpu if c.role == Role.WORKER else request.ps.gpu)
        for c in s.placement
    )
    per_node: dict[str, list[str]] = {}
    for c in s.placement:
        per_node.setdefault(c.node, []).append(f"{c.count}{'w' if c.role == Role.WORKER else 'ps'}")
    queued_until = times.get("starting") or times.get("submitted") if "queued" in times else None
    ids = [*r.earlier_job_ids, *([s.slurm_job_id] if s.slurm_job_id else [])]
    return {
        "i": s.decision_id,
        "u": s.user,
        "j": s.job_name,
        "s": s.state.value,
        "n": list(per_node),
        "p": ",".join(f"{n}:{'+'.join(v)}" for n, v in per_node.items()),
        "c": _ts(s.created_at),
        "ps": _ts(s.start),
        "pe": _ts(s.end),
        "as": _ts(started),
        "ae": _ts(ended),
        "q": _ts(queued_until),
        "pr": _finite(predicted),
        "ar": _finite(actual),
        "g": gpus,
        "m": request.profile.name,
        "sj": ids,
        "po": s.policy,
        "mo": s.mode,
        "so": f"{r.solver} · {r.trials} trial(s)" if r.solver else "",
        "lp": _finite(r.lp_value, 6),
        "k": decision.kept_summary,
        "no": list(decision.notes[:4]),
        "rp": len(decision.repair_actions),
    }


def _finite(value: float | None, digits: int = 1) -> float | None:
    """A number the page's JSON can hold (NaN and infinities become null)."""
    if value is None or not math.isfinite(value):
        return None
    return round(value, digits)


def _unreadable_row(r: ReportRow, times: Mapping[str, datetime]) -> dict[str, Any]:
    """A decision whose stored plan this mlsub cannot read (edited by hand, or written by
    another version): shown with what its summary says, and said so."""
    s = r.summary
    ended = next((times[k] for k in _ENDED if k in times), None)
    return {
        "i": s.decision_id, "u": s.user, "j": s.job_name, "s": s.state.value,
        "n": list(dict.fromkeys(c.node for c in s.placement)), "p": "", "c": _ts(s.created_at),
        "ps": _ts(s.start), "pe": _ts(s.end), "as": _ts(times.get("running")),
        "ae": _ts(ended), "q": None, "pr": None, "ar": None, "g": 0, "m": "",
        "sj": [*r.earlier_job_ids, *([s.slurm_job_id] if s.slurm_job_id else [])],
        "po": s.policy, "mo": s.mode, "so": "", "lp": None, "k": "",
        "no": ["its stored plan could not be read (see: mlsub show)"], "rp": 0,
    }  # fmt: skip


def _median_error(pairs: Sequence[tuple[float, float]]) -> float | None:
    errors = [abs(p - a) / a for p, a in pairs if a > 0]
    return statistics.median(errors) if errors else None


def aggregates(rows: Sequence[Mapping[str, Any]], now: datetime) -> dict[str, Any]:
    """The report's tables and series over every row (pure)."""
    by_state = Counter(r["s"] for r in rows)
    by_user: dict[str, Counter[str]] = defaultdict(Counter)
    for r in rows:
        by_user[r["u"]][r["s"]] += 1
    pairs_model: dict[str, list[tuple[float, float]]] = defaultdict(list)
    pairs_user: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for r in rows:
        if r["s"] == "completed" and r["pr"] and r["ar"]:
            pairs_model[r["m"]].append((r["pr"], r["ar"]))
            pairs_user[r["u"]].append((r["pr"], r["ar"]))

    def errors(groups: Mapping[str, list[tuple[float, float]]]) -> list[dict[str, Any]]:
        return [
            {"key": k, "runs": len(v), "median_error": _median_error(v)}
            for k, v in sorted(groups.items())
        ]

    # GPU-hours per day (of the planned start): planned window vs what ran
    days: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for r in rows:
        if r["ps"] is None or r["pe"] is None:
            continue
        day = datetime.fromtimestamp(r["ps"], UTC).strftime("%Y-%m-%d")
        days[day][0] += r["g"] * (r["pe"] - r["ps"]) / 3600.0
        if r["as"] is not None and r["ae"] is not None:
            days[day][1] += r["g"] * (r["ae"] - r["as"]) / 3600.0
    return {
        "by_state": dict(sorted(by_state.items())),
        "by_user": {u: dict(sorted(c.items())) for u, c in sorted(by_user.items())},
        "error_by_model": errors(pairs_model),
        "error_by_user": errors(pairs_user),
        "gpu_hours": [
            {"day": d, "planned": round(v[0], 2), "used": round(v[1], 2)}
            for d, v in sorted(days.items())
        ],
        "queue": queue_series(rows, now),
    }


def queue_series(rows: Sequence[Mapping[str, Any]], now: datetime) -> list[list[float]]:
    """Jobs waiting (created, not yet started) over time: ``[[t, count], ...]`` at up to
    ``QUEUE_POINTS`` times, the maximum within each interval (so no peak is lost)."""
    end_now = now.timestamp()
    events: list[tuple[float, int]] = []
    for r in rows:
        if r["c"] is None:
            continue
        left = r["as"] if r["as"] is not None else (r["ae"] if r["ae"] is not None else None)
        if left is None and r["s"] in ("queued", "submitting", "submitted", "starting"):
            left = end_now
        if left is None or left <= r["c"]:
            continue
        events.append((r["c"], 1))
        events.append((left, -1))
    if not events:
        return []
    events.sort()
    t0, t1 = events[0][0], max(events[-1][0], events[0][0] + 1.0)
    width = (t1 - t0) / QUEUE_POINTS
    peaks = [0] * (QUEUE_POINTS + 1)
    level = 0
    for t, step in events:
        level += step
        k = min(QUEUE_POINTS, int((t - t0) / width))
        peaks[k] = max(peaks[k], level)
    return [[round(t0 + k * width, 1), p] for k, p in enumerate(peaks)]


def report_data(
    rows: Sequence[ReportRow],
    *,
    now: datetime,
    cluster_name: str,
    filters: Mapping[str, Any],
    fits: Mapping[str, ProfileFit],
) -> dict[str, Any]:
    """Everything the page shows (pure)."""
    decisions = [decision_row(r) for r in rows]
    nodes = sorted({n for d in decisions for n in d["n"]}, key=_natural)
    return {
        "mlsub_version": __version__,
        "generated_at": now.isoformat(),
        "cluster_name": cluster_name,
        "filters": dict(filters),
        "max_bars": MAX_BARS,
        "max_points": MAX_POINTS,
        "nodes": nodes,
        "users": sorted({d["u"] for d in decisions}),
        "states": sorted({d["s"] for d in decisions}),
        "decisions": decisions,
        "aggregates": aggregates(decisions, now),
        "fits": [
            {
                "model": f.model,
                "scope": f.scope,
                "version": f.version,
                "factor": f.factor,
                "samples": f.samples,
                "error_before": f.error_before,
                "error_after": f.error_after,
            }
            for f in sorted(fits.values(), key=lambda f: (f.model, f.scope))
        ],
    }


def _natural(name: str) -> tuple[str, int]:
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return (head, int(tail) if tail else -1)


def render_page(data: Mapping[str, Any]) -> str:
    """The page: the template with ``data`` inlined (``<``, ``>``, ``&`` as JSON escapes,
    so no string in the data can end the script element)."""
    template = resources.files("slurm_mlsched").joinpath("data/report.html").read_text("utf-8")
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False)  # numbers: _finite
    # "<" ">" "&" occur in JSON only inside strings: as \u escapes no stored text can end
    # the script element or open a comment in it
    payload = payload.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return template.replace("/*MLSUB_REPORT_DATA*/null", payload, 1)


@dataclass(frozen=True)
class ReportWritten:
    """``mlsub report``: the page written (``path``), how many decisions it shows and of
    which cluster."""

    path: Path
    decisions: int
    cluster_name: str

    def to_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "decisions": self.decisions,
            "cluster_name": self.cluster_name,
        }


def write_report(
    out: Path,
    rows: Sequence[ReportRow],
    *,
    now: datetime,
    cluster_name: str,
    filters: Mapping[str, Any],
    fits: Mapping[str, ProfileFit],
) -> ReportWritten:
    """Write ``report.html`` of ``rows`` into the directory ``out`` (mode 0600)."""
    data = report_data(rows, now=now, cluster_name=cluster_name, filters=filters, fits=fits)
    page = out / "report.html"
    # mode 0600: the page shows every user's jobs an admin sees
    write_atomically(page, render_page(data).encode("utf-8"), mode=0o600)
    return ReportWritten(page, len(rows), cluster_name)
