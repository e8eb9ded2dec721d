"""Robustness of the scheduling quality: a sweep of workloads nobody tuned on (issue 28
item 4; ``make bench-sweep``).

Each cell is one replay (``services.replay.run_replay``, the code of ``mlsub replay``) of a
public trace on a cluster shape at an offered load (``mlsub replay --load``: the arrivals
rescaled so the jobs' least work fills that share of the cluster over their submit span,
``sim.load``) and a seed, with every policy on the same synthesized jobs, the same
cluster, the same slot length Δ and the same restart cost (the defaults: 30 s). Every
parameter of every policy is its default: nothing is set per workload.

The cells (:func:`cells`): the Pollux and Sia/Helios workloads at loads 0.5, 1.0 and 1.5 on
16 × 4 (the testbed they were made for); the Philly trace (its first jobs: real durations,
heavy-tailed, 93 % 1-GPU) on 6 × 8 and 64 × 8 at those loads; the Sia/Helios and Philly
workloads on a mixed cluster of 8-, 4- and 1-GPU nodes (``bench/clusters/mixed.yaml``,
the proportions of Alibaba's node inventory); the Pollux workloads on 6 × 8; other seeds
of a few. Each cell reports `yu-rr`'s avg JCT ÷ the best of `optimus`, `drf`,
`tiresias`, `oasis`, `fifo-bf`, ÷ `qssf` and ÷ the lower bound (``sim.bounds``), and
whether the target of issue 28 holds: avg JCT ≤ max(0.90 × best, 1.05 × bound), p50 and
p99 ≤ `fifo-bf`'s, ≤ 0.97 × `qssf`.

Each cell also reports a schedule of the bound's own relaxation (``relaxed``,
``sim.capped_bound.relaxed_schedule``): the relaxation's optimum lies between the bound
and it (docs/formulation.md §15.10).

Results are kept in ``bench/out/sweep/all.json`` (merged across runs; ``--only`` picks
cells by a substring of their key, ``--workers N`` replays N cells at once,
``--render-only`` rewrites the section, ``--rebound`` recomputes the saved cells' lower
bound and ``--relaxed`` their relaxed schedule first).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from slurm_mlsched.model import ClusterSnapshot
from slurm_mlsched.services.clock import WallClock
from slurm_mlsched.services.replay import ReplayOptions, prepare_jobs, run_replay
from slurm_mlsched.sim import SimJob
from slurm_mlsched.sim.bounds import scalable_bound
from slurm_mlsched.sim.capped_bound import relaxed_schedule

from .run import machine_facts
from .sections import write_section

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces"
CLUSTERS = Path(__file__).resolve().parent / "clusters"
BEST_OF = ("optimus", "drf", "tiresias", "oasis", "fifo-bf")
POLICIES = ("yu-rr", "qssf", *BEST_OF)
LOADS = (0.5, 1.0, 1.5)
DELTA = 600.0
PHILLY = "philly-pollux/philly.csv"
PHILLY_JOBS = 2000


@dataclass(frozen=True)
class Cell:
    """One workload of the sweep: a trace (its first ``limit`` jobs) on a shape at a load."""

    trace: str  # under ../shared/traces
    label: str
    shape: str  # "NxG" (e.g. "16x4", "6x8") or a cluster file of bench/clusters ("mixed")
    load: float
    seed: int = 0
    limit: int | None = None
    since: str | None = None  # mlsub replay --since: the jobs from then (bench/holdout.py)

    @property
    def key(self) -> str:
        return f"{self.label}|{self.shape}|load {self.load:g}|seed {self.seed}"

    def options(self, preempt: bool = True) -> ReplayOptions:
        named = re.fullmatch(r"\d+x\d+", self.shape) is None
        return ReplayOptions(
            trace=TRACES / self.trace,
            policies=POLICIES,
            nodes=None if named else self.shape,
            cluster=CLUSTERS / f"{self.shape}.yaml" if named else None,
            seed=self.seed,
            slot_seconds=DELTA,
            limit=self.limit,
            since=self.since,
            load=self.load,
            preempt=preempt,
        )


def cells() -> list[Cell]:
    """Every cell of the sweep (module docstring)."""
    pollux = [
        (f"philly-pollux/pollux-workloads/workload-{i}.csv", f"Pollux {i}") for i in range(1, 9)
    ]
    sia = [(f"helios-saturn-sia/workload-{i}.csv", f"Sia {i}") for i in range(1, 11)]
    out = [Cell(t, lab, "16x4", load) for t, lab in (*pollux, *sia) for load in LOADS]
    philly = f"Philly first {PHILLY_JOBS:,}"
    for shape in ("6x8", "64x8", "mixed"):
        out += [Cell(PHILLY, philly, shape, load, limit=PHILLY_JOBS) for load in LOADS]
    out += [Cell(t, lab, "mixed", 1.0) for t, lab in sia]
    out += [Cell(t, lab, "6x8", 1.0) for t, lab in pollux]
    for seed in (1, 2):
        out += [Cell(t, lab, "16x4", 1.0, seed) for t, lab in (pollux[0], sia[1])]
        out.append(Cell(PHILLY, philly, "6x8", 1.0, seed, PHILLY_JOBS))
    return out


def bound_avg_jct_s(opts: ReplayOptions) -> float:
    """The average JCT no policy can beat on the cell (:func:`bound_avg_jct_of` its
    admitted jobs)."""
    prepared = prepare_jobs(opts)
    return bound_avg_jct_of(prepared.admitted, prepared.cluster)


def bound_and_relaxed_s(opts: ReplayOptions, bound: bool = True) -> dict[str, float]:
    """The cell's ``bound_avg_jct_s`` (:func:`bound_avg_jct_of`; left out when not
    ``bound``) and ``relaxed_avg_jct_s``: the average JCT of a schedule of the bound's own
    relaxation (pooled, elastic, preemptive for free: ``sim.capped_bound.relaxed_schedule``),
    whose optimum lies between the two. The jobs are prepared once."""
    prepared = prepare_jobs(opts)
    jobs, cluster = prepared.admitted, prepared.cluster
    value = relaxed_schedule([j.request for j in jobs], cluster.at_slot(0))
    out = {"relaxed_avg_jct_s": avg_jct_s_of(value, jobs, cluster)}
    if bound:
        out["bound_avg_jct_s"] = bound_avg_jct_of(jobs, cluster)
    return out


def bound_avg_jct_of(jobs: Sequence[SimJob], cluster: ClusterSnapshot) -> float:
    """The average JCT (s) no policy can beat on ``jobs``: the scalable bound of
    ``sim.bounds`` (slots), plus each job's wait for its first slot boundary."""
    value, _ = scalable_bound([j.request for j in jobs], cluster.at_slot(0))
    return avg_jct_s_of(value, jobs, cluster)


def avg_jct_s_of(total_slots: float, jobs: Sequence[SimJob], cluster: ClusterSnapshot) -> float:
    """Σ_i T_i in slots from each job's arrival slot → the average JCT in seconds from
    each job's submission (its wait for its first slot boundary added)."""
    delta = cluster.slot_seconds
    offsets = sum(j.request.arrival_slot * delta - j.submit_s for j in jobs)
    return (total_slots * delta + offsets) / len(jobs)


def run_cell(
    cell: Cell,
    preempt: bool = True,
    policies: tuple[str, ...] = POLICIES,
    old: dict[str, Any] | None = None,
    run: str = "",
) -> dict[str, Any]:
    """One cell's replay: every policy, or only ``policies`` with the other rows kept
    from ``old`` (the same cell's earlier result: the rows of policies whose code did not
    change). Each row records the run that measured it (``run``: when that run began)."""
    opts = replace(cell.options(preempt), policies=policies)
    began = time.perf_counter()
    report = run_replay(opts, WallClock())
    rows = dict(old["rows"]) if old is not None else {}
    rows.update(
        {
            name: {
                "avg_jct_s": m.avg_jct_s,
                "p50_jct_s": m.p50_jct_s,
                "p99_jct_s": m.p99_jct_s,
                "gpu_util": m.gpu_util,
                "measured": run,
            }
            for name, m in report.metrics.items()
        }
    )
    return {
        "label": cell.label,
        "shape": cell.shape,
        "load": cell.load,
        "seed": cell.seed,
        "jobs": report.jobs,
        **bound_and_relaxed_s(opts),
        "rows": rows,
        "wall_s": round(time.perf_counter() - began, 1),
    }


def verdict(c: dict[str, Any]) -> dict[str, Any]:
    """Issue 28's target for one cell."""
    rows = c["rows"]
    ours = rows["yu-rr"]
    best_name = min(BEST_OF, key=lambda n: rows[n]["avg_jct_s"])
    best = rows[best_name]["avg_jct_s"]
    bound = c["bound_avg_jct_s"]
    bf = rows["fifo-bf"]
    target = max(0.90 * best, 1.05 * bound)
    checks = {
        "avg": ours["avg_jct_s"] <= target,
        "p50": ours["p50_jct_s"] <= bf["p50_jct_s"],
        "p99": ours["p99_jct_s"] <= bf["p99_jct_s"],
        "qssf": ours["avg_jct_s"] <= 0.97 * rows["qssf"]["avg_jct_s"],
    }
    return {
        "best": best_name,
        "vs_best": ours["avg_jct_s"] / best,
        "vs_bound": ours["avg_jct_s"] / bound,
        "best_vs_bound": best / bound,
        "vs_qssf": ours["avg_jct_s"] / rows["qssf"]["avg_jct_s"],
        "relaxed_vs_bound": c.get("relaxed_avg_jct_s", math.nan) / bound,
        "target_s": target,
        "checks": checks,
        "ok": all(checks.values()),
    }


def _natural(label: str) -> tuple[str | int, ...]:
    """``label``'s sort key with its numbers as numbers: Sia 2 before Sia 10."""
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", label))


def _r(x: float) -> str:
    return f"{x:.2f}"


def _r_known(x: float) -> str:
    return "—" if math.isnan(x) else _r(x)


def _spread(values: list[float]) -> str:
    return f"{_r(min(values))} / {_r(statistics.median(values))} / {_r(max(values))}"


def _spread_known(values: list[float]) -> str:
    known = [v for v in values if not math.isnan(v)]
    return _spread(known) if known else "—"


def _dates(done: list[dict[str, Any]]) -> str:
    """A sentence naming when each policy's rows were measured, when they differ (a
    ``--policies`` run re-measures only the policies a change touched)."""
    by_date: dict[str, set[str]] = {}
    for c in done:
        for name, row in c["rows"].items():
            by_date.setdefault(row.get("measured", "?"), set()).add(name)
    if len(by_date) < 2:
        return ""
    parts = [
        f"{', '.join(sorted(names, key=POLICIES.index))} in {date}"
        for date, names in sorted(by_date.items())
    ]
    return " Rows measured (same code for each policy's rows): " + "; ".join(parts) + "."


def _rebounded(done: list[dict[str, Any]]) -> str:
    """A sentence saying when the saved cells' bounds (or relaxed schedules) were
    recomputed without replaying a policy (``--rebound``, ``--relaxed``), if they were."""
    dates = sorted({c["bounded"] for c in done if c.get("bounded")})
    if not dates:
        return ""
    when = f"on {dates[0]}" if len(dates) == 1 else f"between {dates[0]} and {dates[-1]}"
    return (
        f" Lower bounds and relaxed schedules recomputed {when} without replaying a "
        "policy (`--rebound`, `--relaxed`; both are functions of the jobs and the cluster "
        "alone)."
    )


def render(
    res: dict[str, Any],
    preempt: bool = True,
    heading: tuple[str, str, str] | None = None,
) -> str:
    """The section of ``res``; ``heading`` = (title, how it is written, what the cells
    are) in place of the sweep's own (``bench/holdout.py``)."""
    m = res["machine"]
    done = sorted(
        res["cells"].values(),
        key=lambda c: (c["shape"], _natural(c["label"]), c["load"], c["seed"]),
    )
    verdicts = [verdict(c) for c in done]
    title = "## Robustness sweep: workloads nobody tuned on"
    how = (
        "`make bench-sweep` (`python -m bench.sweep`: the replay's defaults, so late binding "
        "with checkpoint-restart preemption, docs/formulation.md §16, for `yu-rr` and "
        "`qssf`); raw results in `bench/out/sweep/"
    )
    if not preempt:
        title += ", without preemption (`--no-preempt`)"
        how = (
            "`python -m bench.sweep --no-preempt` (late binding without checkpoint-restart "
            "preemption, docs/formulation.md §16, for `yu-rr` and `qssf`: the default until "
            "2026-12-04; the re-sharing baselines pause and resize as always, at the same "
            "restart cost); raw results in `bench/out/sweep-no-preempt/"
        )
    what = (
        "public traces × cluster shape × offered load (`mlsub replay --load`, `sim.load`: "
        "the jobs' least work ÷ the cluster's capacity over their submit span) × seed"
    )
    if heading is not None:
        title, how, what = heading
    lines = [
        title,
        "",
        f"Written by {how}all.json`. Machine: {m['cpu']}, {m['cores']} cores; date of the "
        f"last cell: {m['date']}. {len(done)} cells: {what}, Δ = 600 s, every policy at its "
        "defaults "
        "(restart cost 30 s for all; nothing set per workload). *target* = avg JCT ≤ "
        "max(0.90 × best of optimus, drf, tiresias, oasis, fifo-bf; 1.05 × lower bound), "
        "p50 and p99 ≤ `fifo-bf`'s, ≤ 0.97 × `qssf` (issue 28). *bound*: the lower bound of "
        "docs/formulation.md §15.3 (the rank bound and the pooled LP with rate caps and each "
        "job's resource curve, Lemma 2′, with one GPU pool per node size on the mixed "
        "cluster, Lemma 2″). *relaxed*: a schedule of that bound's own "
        "relaxation (every resource pooled, each job elastic up to its rate cap on its "
        "resource curve, preempted and resized for free; smallest remaining share first, "
        "`sim.capped_bound.relaxed_schedule`): the relaxation's optimum lies between the "
        "bound and it, so *relaxed ÷ bound* near 1 says the bound is as high as its "
        "relaxation allows and a policy's distance from it is what that relaxation's "
        "freedoms are worth (docs/formulation.md §15.10)." + _dates(done) + _rebounded(done),
        "",
        "### Summary (min / median / max over the cells)",
        "",
        "| cells | yu-rr ÷ best baseline | yu-rr ÷ bound | best baseline ÷ bound | relaxed ÷ "
        "bound | yu-rr ÷ qssf | target met | avg ✓ | p50 ✓ | p99 ✓ | qssf ✓ |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[str, list[int]] = {"all": list(range(len(done)))}
    for i, c in enumerate(done):
        groups.setdefault(f"shape {c['shape']}", []).append(i)
        groups.setdefault(f"load {c['load']:g}", []).append(i)
    for name, idx in groups.items():
        vs = [verdicts[i] for i in idx]
        lines.append(
            f"| {name} ({len(idx)}) | {_spread([v['vs_best'] for v in vs])} | "
            f"{_spread([v['vs_bound'] for v in vs])} | "
            f"{_spread([v['best_vs_bound'] for v in vs])} | "
            f"{_spread_known([v['relaxed_vs_bound'] for v in vs])} | "
            f"{_spread([v['vs_qssf'] for v in vs])} | {sum(v['ok'] for v in vs)} | "
            + " | ".join(
                str(sum(v["checks"][k] for v in vs)) for k in ("avg", "p50", "p99", "qssf")
            )
            + " |"
        )
    if done:
        worst = max(range(len(done)), key=lambda i: verdicts[i]["vs_bound"])
        worst_best = max(range(len(done)), key=lambda i: verdicts[i]["vs_best"])
        lines += [
            "",
            f"Worst cell ÷ bound: {done[worst]['label']} on {done[worst]['shape']} at load "
            f"{done[worst]['load']:g} (seed {done[worst]['seed']}): "
            f"{_r(verdicts[worst]['vs_bound'])} × the bound, the best baseline "
            f"({verdicts[worst]['best']}) {_r(verdicts[worst]['best_vs_bound'])} ×, "
            f"the relaxed schedule {_r_known(verdicts[worst]['relaxed_vs_bound'])} ×. "
            f"Worst cell ÷ best baseline: {done[worst_best]['label']} on "
            f"{done[worst_best]['shape']} at load {done[worst_best]['load']:g}: "
            f"{_r(verdicts[worst_best]['vs_best'])} × {verdicts[worst_best]['best']}.",
        ]
    lines += [
        "",
        "### Every cell",
        "",
        "| workload | shape | load | seed | jobs | bound (h) | relaxed ÷ bound | yu-rr (h) "
        "| ÷ bound | best | best ÷ bound | ÷ best | ÷ qssf | target |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c, v in zip(done, verdicts, strict=True):
        failed = ", ".join(k for k, ok in v["checks"].items() if not ok)
        lines.append(
            f"| {c['label']} | {c['shape']} | {c['load']:g} | {c['seed']} | {c['jobs']} | "
            f"{c['bound_avg_jct_s'] / 3600:.2f} | {_r_known(v['relaxed_vs_bound'])} | "
            f"{c['rows']['yu-rr']['avg_jct_s'] / 3600:.2f} | "
            f"{_r(v['vs_bound'])} | {v['best']} | {_r(v['best_vs_bound'])} | "
            f"{_r(v['vs_best'])} | {_r(v['vs_qssf'])} | {'✓' if v['ok'] else '✗ ' + failed} |"
        )
    return "\n".join(lines) + "\n"


def main(
    argv: Sequence[str] | None = None,
    *,
    cell_list: Callable[[], list[Cell]] | None = None,
    raw_default: str | None = None,
    section_name: str | None = None,
    heading: tuple[str, str, str] | None = None,
    doc: str | None = None,
) -> None:
    """The sweep's command; ``bench/holdout.py`` runs it on its own cells (``cell_list``),
    raw directory, docs section and heading."""
    cell_list = cell_list or cells
    ap = argparse.ArgumentParser(description=doc or __doc__)
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--raw", default=raw_default, help="bench/out/sweep (-no-preempt) by default")
    ap.add_argument(
        "--no-preempt",
        dest="preempt",
        action="store_false",
        help="Replay with --no-preempt (the defaults preempt).",
    )
    ap.add_argument("--only", default="", help="Run only cells whose key contains this text.")
    ap.add_argument("--render-only", action="store_true", help="Rewrite the section only.")
    ap.add_argument(
        "--rebound",
        action="store_true",
        help="Recompute the lower bound of every saved cell (no policy is replayed).",
    )
    ap.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Replay this many cells at once (processes; the walls then share the cores).",
    )
    ap.add_argument(
        "--relaxed",
        action="store_true",
        help="Compute the relaxed schedule of every saved cell (no policy is replayed).",
    )
    ap.add_argument(
        "--policies",
        default="",
        help="Re-run only these policies (comma-separated) and keep the other rows of "
        "each cell from the saved results (for a change that touches only these).",
    )
    args = ap.parse_args(argv)
    raw = Path(args.raw or ("bench/out/sweep" if args.preempt else "bench/out/sweep-no-preempt"))
    saved = raw / "all.json"
    res: dict[str, Any] = {"machine": machine_facts(), "cells": {}}
    if saved.exists():
        old = json.loads(saved.read_text())
        res["cells"] = old.get("cells", {})
        for cell in res["cells"].values():  # rows of runs before rows were dated
            for row in cell["rows"].values():
                row.setdefault("measured", "the run ending " + old["machine"]["date"])
        if args.render_only:
            res["machine"] = old["machine"]
    if args.rebound or args.relaxed:
        by_key = {c.key: c for c in cell_list()}
        stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")  # when this run began
        for key, saved_cell in res["cells"].items():
            if key in by_key and args.only in key:
                opts = by_key[key].options(args.preempt)
                saved_cell.update(bound_and_relaxed_s(opts, bound=args.rebound))
                saved_cell["bounded"] = stamp
        raw.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(res, indent=1))
    if not args.render_only:
        todo = [c for c in cell_list() if args.only in c.key]
        policies = POLICIES
        if args.policies:
            policies = tuple(p.strip() for p in args.policies.split(",") if p.strip())
            unknown = sorted(set(policies) - set(POLICIES))
            missing = [c.key for c in todo if c.key not in res["cells"]]
            if unknown or missing:
                ap.error(
                    f"--policies re-runs some rows of cells already measured: unknown "
                    f"{unknown or '—'}, cells never measured {missing[:3] or '—'}"
                )
        run = "the run begun " + datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
            running = {
                pool.submit(
                    run_cell,
                    c,
                    args.preempt,
                    policies,
                    res["cells"].get(c.key) if args.policies else None,
                    run,
                ): c.key
                for c in todo
            }
            for n, done in enumerate(as_completed(running), 1):  # saved as each finishes
                key = running[done]
                res["cells"][key] = done.result()
                raw.mkdir(parents=True, exist_ok=True)
                saved.write_text(json.dumps(res, indent=1))
                v = verdict(res["cells"][key])
                print(
                    f"[{n}/{len(todo)}] {key}: ÷best {v['vs_best']:.2f} "
                    f"÷bound {v['vs_bound']:.2f} ({res['cells'][key]['wall_s']} s)",
                    flush=True,
                )
    section = section_name or ("sweep" if args.preempt else "sweep-no-preempt")
    text = render(res, args.preempt, heading)
    write_section(Path(args.out), section, text)
    print(text)


if __name__ == "__main__":
    main()
