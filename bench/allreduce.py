"""The all-reduce reading of GPU traces (issue 31 item 4): the quality table beside the PS
reading (``python -m bench.allreduce``; docs/benchmarks.md, "All-reduce reading").

Each workload is replayed twice on the same cluster with the same synthesized jobs, every
policy at its defaults (restart cost 30 s, Δ = 600 s): as the trace reader gives it (every
job ``ps``), and read as all-reduce (``sim.as_allreduce``: every job of 2 or more GPUs
becomes an ``allreduce`` job, no PS, the same workers and workload). Reported per policy:
avg JCT, p50, p99 and avg JCT ÷ the lower bound (``sim.lower_bound``), and issue 28's
target for `yu-rr`: avg JCT ≤ max(0.90 × the best of optimus, drf, tiresias, oasis,
fifo-bf; 1.05 × bound). Nothing is set per trace.

Until the replay service has an option for it, the reading is applied here to the jobs
``services.replay.prepare_jobs`` admits (no services code changes). Every schedule is
checked (``sim.check``: capacity, work at the real rates, no PS for allreduce) before its
figures are kept.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.services.replay import ReplayOptions, prepare_jobs
from slurm_mlsched.sim import (
    SimJob,
    admit,
    as_allreduce,
    compute_metrics,
    draw_utilities,
    lower_bound,
    simulate,
)
from slurm_mlsched.sim.check import capacity_violations, decision_problems

from .run import machine_facts
from .sections import write_section

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces"
BEST_OF = ("optimus", "drf", "tiresias", "oasis", "fifo-bf")
POLICIES = ("yu-rr", "qssf", *BEST_OF, "fifo-ff")
DELTA = 600.0
OUT = ROOT / "bench" / "out" / "allreduce.json"


@dataclass(frozen=True)
class Workload:
    trace: str  # under ../shared/traces
    label: str
    nodes: str = "6x8"
    limit: int | None = None
    load: float | None = None


WORKLOADS = (
    Workload("philly-pollux/philly.csv", "Philly first 2,000, load 1", limit=2000, load=1.0),
    *(Workload(f"helios-saturn-sia/workload-{i}.csv", f"Sia/Helios {i}") for i in range(1, 11)),
    *(
        Workload(f"philly-pollux/pollux-workloads/workload-{i}.csv", f"Pollux {i}")
        for i in range(1, 9)
    ),
)
#: Workloads whose per-policy table is printed (the others: the summary row only).
DETAILED = ("Philly first 2,000, load 1", "Sia/Helios 1")


def run(w: Workload, reading: str) -> dict[str, Any]:
    opts = ReplayOptions(
        trace=TRACES / w.trace, policies=POLICIES, nodes=w.nodes, seed=0,
        slot_seconds=DELTA, limit=w.limit, load=w.load,
    )  # fmt: skip
    prepared = prepare_jobs(opts)
    cluster = prepared.cluster
    jobs: Sequence[SimJob] = prepared.admitted
    if reading == "allreduce":
        jobs, _ = admit(as_allreduce(jobs), cluster)
    bound = lower_bound(jobs, cluster)
    utilities = draw_utilities((j.job_id for j in jobs), 0)
    delta = cluster.slot_seconds
    offsets = sum(j.request.arrival_slot * delta - j.submit_s for j in jobs)
    bound_jct = None if bound.value is None else (bound.value * delta + offsets) / len(jobs)
    rows: dict[str, Any] = {}
    for policy in POLICIES:
        began = time.perf_counter()
        result = simulate(jobs, cluster, policy, PlacementParams())
        problems = capacity_violations(result) + decision_problems(result)
        if problems:  # no figure from an infeasible schedule
            raise RuntimeError(f"{w.label} {reading} {policy}: {problems[:3]}")
        m = compute_metrics(result, utilities, bound.value)
        rows[policy] = {
            "avg_jct_s": m.avg_jct_s,
            "p50_jct_s": m.p50_jct_s,
            "p99_jct_s": m.p99_jct_s,
            "rejected": m.rejected,
            "wall_s": round(time.perf_counter() - began, 1),
        }
    share = sum(j.request.is_allreduce for j in jobs) / max(len(jobs), 1)
    return {"jobs": len(jobs), "allreduce_share": share, "bound_avg_jct_s": bound_jct,
            "bound_note": bound.note, "rows": rows}  # fmt: skip


def _f(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def _summary(cell: dict[str, Any]) -> dict[str, Any]:
    rows, bound = cell["rows"], cell["bound_avg_jct_s"]
    best = min(BEST_OF, key=lambda p: rows[p]["avg_jct_s"] or float("inf"))
    ours, best_jct = rows["yu-rr"]["avg_jct_s"], rows[best]["avg_jct_s"]
    target = max(0.9 * best_jct, 1.05 * bound) if bound else None
    return {
        "best": best,
        "ours": ours,
        "best_jct": best_jct,
        "ours_bound": ours / bound if bound else None,
        "best_bound": best_jct / bound if bound else None,
        "verdict": "—" if target is None else ("✓" if ours <= target else "✗"),
    }


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    facts = f"{m['cpu']}, {m['cores']} cores (shared with other work), Python {m['python']}"
    lines = [
        f"Run {m['date']} on {facts}: `python -m bench.allreduce` "
        f"({res['wall_s']:.0f} s). Every policy at its defaults; the replay's `--nodes 6x8` "
        "(6 nodes × 8 GPUs), Δ = 600 s, restart cost 30 s. "
        "`ps`: the jobs as the trace reader gives them; `allreduce`: every job of ≥ 2 GPUs "
        "read as a ring all-reduce job (`sim.as_allreduce`; two-level ring, "
        "docs/formulation.md §18). JCT in hours; ÷ bound = avg JCT ÷ the lower bound's. "
        "Target (issue 28): `yu-rr`'s avg JCT ≤ max(0.90 × the best of "
        f"{', '.join(BEST_OF)}; 1.05 × bound).",
        "",
        "| workload | reading | jobs | allreduce | yu-rr avg JCT (h) | best baseline | "
        "yu-rr ÷ best | yu-rr ÷ qssf | yu-rr ÷ bound | best ÷ bound | target |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    met = {"ps": [0, 0], "allreduce": [0, 0]}
    for key, cell in res["cells"].items():
        label, reading = key.split("|")
        s = _summary(cell)
        met[reading][1] += 1
        met[reading][0] += s["verdict"] == "✓"
        lines.append(
            f"| {label} | {reading} | {cell['jobs']} | {100 * cell['allreduce_share']:.0f} % | "
            f"{s['ours'] / 3600:.2f} | {s['best']} | {s['ours'] / s['best_jct']:.2f} | "
            f"{s['ours'] / cell['rows']['qssf']['avg_jct_s']:.2f} | {_f(s['ours_bound'])} | "
            f"{_f(s['best_bound'])} | {s['verdict']} |"
        )
    lines += [
        "",
        f"Target met: ps reading {met['ps'][0]} of {met['ps'][1]}, all-reduce reading "
        f"{met['allreduce'][0]} of {met['allreduce'][1]}.",
        "",
    ]
    for key, cell in res["cells"].items():
        label, reading = key.split("|")
        if label not in DETAILED:
            continue
        s = _summary(cell)
        best, ours, verdict = s["best"], s["ours"], s["verdict"]
        rows, bound = cell["rows"], cell["bound_avg_jct_s"]
        lines += [
            f"**{label}, {reading} reading** ({cell['jobs']} jobs, "
            f"{100 * cell['allreduce_share']:.0f} % allreduce; bound: {cell['bound_note']}): "
            f"`yu-rr` ÷ best baseline ({best}) {ours / rows[best]['avg_jct_s']:.2f}, "
            f"target {verdict}",
            "",
            "| policy | avg JCT (h) | p50 (h) | p99 (h) | ÷ bound | rejected | wall (s) |",
            "|---|---|---|---|---|---|---|",
        ]
        for p in POLICIES:
            r = rows[p]
            ratio = None if not bound or r["avg_jct_s"] is None else r["avg_jct_s"] / bound
            lines.append(
                f"| {p} | {_f(r['avg_jct_s'] and r['avg_jct_s'] / 3600)} | "
                f"{_f(r['p50_jct_s'] and r['p50_jct_s'] / 3600)} | "
                f"{_f(r['p99_jct_s'] and r['p99_jct_s'] / 3600)} | {_f(ratio)} | "
                f"{r['rejected']} | {r['wall_s']} |"
            )
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="workloads whose label contains this")
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args()
    if not args.render_only:
        began = time.perf_counter()
        cells = {}
        for w in WORKLOADS:
            if args.only and args.only not in w.label:
                continue
            for reading in ("ps", "allreduce"):
                cells[f"{w.label}|{reading}"] = run(w, reading)
                print(w.label, reading, "done", flush=True)
        res = {
            "machine": machine_facts(),
            "wall_s": time.perf_counter() - began,
            "cells": cells,
        }
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(json.dumps(res, indent=1))
    res = json.loads(OUT.read_text())
    write_section(ROOT / "docs" / "benchmarks.md", "allreduce", render(res))


if __name__ == "__main__":
    main()
