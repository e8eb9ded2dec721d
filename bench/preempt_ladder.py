"""The preemption ladder of docs/benchmarks.md (``make bench-preempt``; issue 28 item 3).

Each cell replays one workload on its cluster at one slot length Δ (seed 0, the default
restart cost of 30 s for every policy) under:

* ``yu-rr``: the default (non-elastic, late binding, look-ahead);
* ``yu-rr +preempt``: with checkpoint-restart preemption (``preempt``; docs/formulation.md
  §16), every pause charged the restart cost;
* ``drf``: the best re-sharing baseline, which already pauses and resizes jobs at every
  event under the same restart cost (so it needs no preemption added).

Backfill of short jobs into the plan's holes with its reservations kept (issue 28's idea
(b)) is not a rung: late binding already does it at every event (docs/formulation.md §16).

Workloads: windows of consecutive Philly jobs (the heavy-tailed, 93 % 1-GPU proxy of the
held-out trace) on 6×8, rebased to start at 0, and the 16 cells of ``bench.policy_table``
(``--cells``). Results are merged into ``bench/out/preempt/all.json``; the section is
rendered from it (``--render-only``).
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.services.replay import ReplayOptions, prepare_jobs
from slurm_mlsched.sim import SimJob, compute_metrics, draw_utilities, sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems

from .policy_table import TRACES, WORKLOADS, cell_options
from .run import machine_facts
from .sections import write_section
from .sweep import bound_avg_jct_of

PHILLY = TRACES / "philly-pollux" / "philly.csv"
WINDOW = 1000  # consecutive jobs per Philly window
OFFSETS = (10_000, 30_000, 50_000, 70_000)  # first job of each window (submit order)
VARIANTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("yu-rr", "yu-rr", {"preempt": False}),
    ("yu-rr +preempt", "yu-rr", {"preempt": True}),
    ("drf", "drf", {}),
)


def _options(key: str, delta: float) -> ReplayOptions:
    if key.startswith("philly-w"):
        return ReplayOptions(PHILLY, ("yu-rr",), nodes="6x8", slot_seconds=delta)
    return cell_options(key, delta)


def _window(jobs: tuple[SimJob, ...], offset: int, delta: float) -> list[SimJob]:
    """``WINDOW`` consecutive jobs from ``offset``, submit times rebased to the first."""
    part = jobs[offset : offset + WINDOW]
    t0 = part[0].submit_s
    return sim_jobs(((j.request, j.submit_s - t0) for j in part), delta)


def cell(key: str, delta: float) -> dict[str, Any]:
    prepared = prepare_jobs(_options(key, delta))
    cluster = prepared.cluster
    jobs: list[SimJob] = list(prepared.admitted)
    label = WORKLOADS[key][0] if key in WORKLOADS else ""
    if key.startswith("philly-w"):
        offset = int(key.removeprefix("philly-w"))
        jobs = _window(prepared.admitted, offset, delta)
        label = f"Philly jobs {offset:,}–{offset + WINDOW - 1:,}, 6×8"
    bound = bound_avg_jct_of(jobs, cluster)
    utilities = draw_utilities((j.job_id for j in jobs), 0)
    rows: dict[str, Any] = {}
    for name, policy, extra in VARIANTS:
        params = replace(PlacementParams(), **extra)
        began = time.perf_counter()
        result = simulate(jobs, cluster, policy, params)
        wall = time.perf_counter() - began
        broken = capacity_violations(result) + decision_problems(result)
        if broken:
            raise RuntimeError(f"{key} Δ={delta:g} {name}: {broken[:3]}")
        m = compute_metrics(result, utilities, None, round(wall, 2))
        restarts = [dict(d.stats).get("restarts", 0.0) for d in result.decisions]
        rows[name] = {
            "avg_jct_s": m.avg_jct_s,
            "p50_jct_s": m.p50_jct_s,
            "p99_jct_s": m.p99_jct_s,
            "avg_wait_s": m.avg_wait_s,
            "preempted_jobs": sum(r > 0 for r in restarts),
            "restarts": sum(restarts),
            "wall_s": round(wall, 1),
        }
        if m.avg_jct_s is not None and m.avg_jct_s < bound - 1e-6:
            raise RuntimeError(f"{key} Δ={delta:g} {name}: avg JCT below the lower bound")
        print(f"  {key} Δ={delta:g} {name}: {_h(m.avg_jct_s)} h, {wall:.0f} s", flush=True)
    return {
        "label": label,
        "delta": delta,
        "jobs": len(jobs),
        "bound_avg_jct_s": bound,
        "rows": rows,
    }


def _h(x: float | None) -> str:
    return "—" if x is None else f"{x / 3600:.2f}"


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    cells = sorted(
        res["cells"].values(),
        key=lambda c: (not c["label"].startswith("Philly"), c["label"], -c["delta"]),
    )
    lines = [
        "## Preemption ladder (issue 28 item 3)",
        "",
        "Written by `make bench-preempt` (`python -m bench.preempt_ladder`); raw results in "
        f"`bench/out/preempt/all.json`. Machine: {m['cpu']}, {m['cores']} cores (shared). "
        f"Date: {m['date']}. Seed 0, restart cost 30 s for every policy. *+preempt*: "
        "checkpoint-restart preemption (`preempt`, docs/formulation.md §16); `drf` already "
        "re-shares (pauses and resizes) at every event under the same restart cost. "
        "Backfill into the plan's holes with its reservations kept is not a rung: late "
        "binding already does it. Times in hours; *÷* = avg JCT ÷ `yu-rr`'s.",
        "",
        "| workload | Δ (s) | jobs | bound | yu-rr avg (p50 / p99) | +preempt avg (p50 / p99) "
        "| ÷ | preempted jobs (restarts) | drf avg (p50 / p99) | ÷ | wall yu-rr / +preempt (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    ratios: list[float] = []
    philly: list[float] = []
    beats_drf = 0
    p99_up: list[float] = []
    for c in cells:
        r = c["rows"]
        a, b, d = r["yu-rr"], r["yu-rr +preempt"], r["drf"]
        q = b["avg_jct_s"] / a["avg_jct_s"]
        ratios.append(q)
        if c["label"].startswith("Philly jobs"):
            philly.append(q)
        beats_drf += b["avg_jct_s"] < d["avg_jct_s"]
        p99_up.append(b["p99_jct_s"] / a["p99_jct_s"])

        def trio(x: dict[str, Any]) -> str:
            return f"{_h(x['avg_jct_s'])} ({_h(x['p50_jct_s'])} / {_h(x['p99_jct_s'])})"

        lines.append(
            f"| {c['label']} | {c['delta']:g} | {c['jobs']} | {_h(c['bound_avg_jct_s'])} | "
            f"{trio(a)} | {trio(b)} | {q:.3f} | {b['preempted_jobs']} ({b['restarts']:g}) | "
            f"{trio(d)} | {d['avg_jct_s'] / a['avg_jct_s']:.3f} | {a['wall_s']} / {b['wall_s']} |"
        )
    if ratios:
        mean = sum(ratios) / len(ratios)
        rest = len(ratios) - len(philly)
        rest_mean = (sum(ratios) - sum(philly)) / max(rest, 1)
        lines += [
            "",
            f"Mean of +preempt ÷ yu-rr over the {len(ratios)} cells: {mean:.3f} "
            f"(Philly windows: {sum(philly) / max(len(philly), 1):.3f} over {len(philly)}; "
            f"the other {rest} cells: {rest_mean:.3f}; best {min(ratios):.3f}, worst "
            f"{max(ratios):.3f}). `yu-rr` +preempt beats `drf` (which re-shares under the "
            f"same restart cost) in {beats_drf} of {len(ratios)} cells. The long jobs pay "
            f"for it: p99 JCT rises in {sum(x > 1 for x in p99_up)} of {len(ratios)} cells "
            f"(at most {max(p99_up):.2f} ×). "
            + (
                "It wins on the average of all cells measured, and on the robustness sweep "
                "(below), so it is on by default in `mlsub replay` (`--no-preempt` turns it "
                "off); live, a site turns it on with `preempt = true` and a job consents with "
                "`#SBATCH --signal` (docs/formulation.md §16)."
                if mean < 1.0
                else "It does not win on the average of all cells measured."
            ),
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--raw", default="bench/out/preempt")
    ap.add_argument(
        "--cells",
        default=",".join(f"philly-w{o}" for o in OFFSETS),
        help="philly-wOFFSET windows and/or bench.policy_table workload keys",
    )
    ap.add_argument("--deltas", default="600,60")
    ap.add_argument("--render-only", action="store_true")
    args = ap.parse_args()
    raw = Path(args.raw)
    path = raw / "all.json"
    res: dict[str, Any] = {"machine": machine_facts(), "cells": {}}
    if path.exists():
        old = json.loads(path.read_text())
        res["cells"] = old.get("cells", {})
        if args.render_only:
            res["machine"] = old["machine"]
    if not args.render_only:
        for key in args.cells.split(","):
            for delta in (float(d) for d in args.deltas.split(",")):
                res["cells"][f"{key}@{delta:g}"] = cell(key, delta)
                raw.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(res, indent=1))
    write_section(Path(args.out), "preempt", render(res))
    print(render(res))


if __name__ == "__main__":
    main()
