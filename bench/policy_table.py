"""Every policy on the public traces under the same rules: the results tables of
docs/benchmarks.md (``make bench-policies``; issue 14 items 4, 4b–4d, 7).

Each cell is one ``mlsub replay`` (seed 0) of a workload on its cluster at one slot
length Δ, with every policy on the same synthesized jobs (MODEL.md §7):

* all policies at the default restart cost (30 s of no progress per re-allocation,
  MODEL.md §6): late-binding ``yu-rr`` (the joint program; non-elastic, what Slurm runs),
  ``qssf``, ``fifo-ff``, ``fifo-bf``, ``oasis``, ``optimus``, ``drf``, ``tiresias``;
* the re-allocating policies again with restart cost 0 (re-allocation free);
* ``yu-rr`` variants: without the look-ahead of narrow starts (``--no-lookahead``), the
  joint program over the head of the queue (``--queue-program joint``), early binding
  (``--binding early``: §4 read literally) and the elastic form (early binding; its
  slot-by-slot changes pay the restart cost in its plan).

Each cell also gets the scalable lower bound (``sim.bounds``: every job's fewest slots on
the cluster and pooled-resource SRPT, combined by rank, or the pooled LP with rate caps of
``sim.capped_bound`` when that is higher; proofs in docs/formulation.md §15) as an
average JCT no policy can beat. The target (issue 28, :func:`verdict`): ``yu-rr``'s
avg JCT ≤ max(0.90 × the best of BEST_OF, 1.05 × the bound), p50 and p99 ≤ ``fifo-bf``'s,
≤ 0.97 × ``qssf``; the tables give every policy ÷ the bound.

The workloads: Philly (first 5,000 jobs, 64 × 8 GPUs), Pollux workloads 1–3 and Sia/Helios
workloads 1–2 (16 × 4 GPUs, the Pollux testbed), and both LANL Mustang weeks on a CPU
cluster (``bench/clusters/mustang.yaml``: 1,600 nodes × 24 cores, one worker a node).
``--workloads`` and ``--deltas`` pick a subset; results of earlier runs in
``bench/out/policies/all.json`` are kept and merged; ``--render-only --rebound`` recomputes
the saved cells' bounds and rewrites the section without replaying a policy.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from slurm_mlsched.services.replay import ReplayOptions

from .run import machine_facts
from .sections import write_section
from .sweep import bound_avg_jct_s

ROOT = Path(__file__).resolve().parents[1]
TRACES = ROOT.parent / "shared" / "traces"
MLSUB = str(Path(sys.executable).parent / "mlsub")
MAIN = ("yu-rr", "qssf", "fifo-ff", "fifo-bf", "oasis", "optimus", "drf", "tiresias", "srtf")
REALLOC = ("optimus", "drf", "tiresias")
BEST_OF = ("optimus", "drf", "tiresias", "oasis", "fifo-bf")
POLLUX = "philly-pollux/pollux-workloads"
MUSTANG = "lanl-mustang-slurm/mustang_week"
CLUSTERS = Path(__file__).resolve().parent / "clusters"
WORKLOADS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "philly5k": ("Philly, first 5,000 jobs, 64×8", "philly-pollux/philly.csv",
                 ("--limit", "5000", "--nodes", "64x8")),
    "pollux1": ("Pollux workload 1, 16×4", f"{POLLUX}/workload-1.csv", ("--nodes", "16x4")),
    "pollux2": ("Pollux workload 2, 16×4", f"{POLLUX}/workload-2.csv", ("--nodes", "16x4")),
    "pollux3": ("Pollux workload 3, 16×4", f"{POLLUX}/workload-3.csv", ("--nodes", "16x4")),
    "sia1": ("Sia/Helios workload 1, 16×4", "helios-saturn-sia/workload-1.csv",
             ("--nodes", "16x4")),
    "sia2": ("Sia/Helios workload 2, 16×4", "helios-saturn-sia/workload-2.csv",
             ("--nodes", "16x4")),
    "mustang1": ("Mustang week 2012-02-07, 1600×24 CPUs", f"{MUSTANG}_2012-02-07.csv",
                 ("--cluster", str(CLUSTERS / "mustang.yaml"), "--cpu-jobs", "per-node")),
    "mustang2": ("Mustang week 2012-12-13, 1600×24 CPUs", f"{MUSTANG}_2012-12-13.csv",
                 ("--cluster", str(CLUSTERS / "mustang.yaml"), "--cpu-jobs", "per-node")),
}  # fmt: skip
#: (row label, policies, extra flags) of the runs in one cell
RUNS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("", MAIN, ()),
    (" (restart 0)", REALLOC, ("--restart-cost", "0")),
    (" no look-ahead", ("yu-rr",), ("--no-lookahead",)),
    (" joint", ("yu-rr",), ("--queue-program", "joint")),
    (" early", ("yu-rr",), ("--binding", "early")),
    (" elastic (early)", ("yu-rr",),
     ("--binding", "early", "--form", "elastic")),
)  # fmt: skip


def replay(trace: Path, extra: tuple[str, ...], policies: tuple[str, ...]) -> dict[str, Any]:
    argv = [MLSUB, "replay", str(trace), *extra, "--json"]
    for policy in policies:
        argv += ["--policy", policy]
    began = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=14_400)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{done.stderr}")
    summary: dict[str, Any] = json.loads(done.stdout)
    summary["command_s"] = round(time.perf_counter() - began, 1)
    return summary


def cell(
    key: str, delta: float, runs: int, only: tuple[str, ...] = (), old: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One cell: the first ``runs`` runs of :data:`RUNS`; with ``only``, just those
    policies of the first run, the other rows kept from ``old`` (the saved cell)."""
    label, rel, extra = WORKLOADS[key]
    rows: dict[str, Any] = dict(old["rows"]) if old and only else {}
    head: dict[str, Any] = {}
    for suffix, policies, flags in RUNS[:runs]:
        if only:
            policies = tuple(p for p in policies if p in only)
            if suffix or not policies:
                continue
        summary = replay(TRACES / rel, (*extra, "--slot-seconds", f"{delta:g}", *flags), policies)
        head = head or summary
        for name, metrics in summary["policies"].items():
            rows[name + suffix] = metrics
        print(f"  {key} Δ={delta:g}{suffix}: {summary['command_s']} s", flush=True)
    return {
        "label": label,
        "delta": delta,
        "bound_avg_jct_s": bound_avg_jct(key, delta),
        "jobs": head["jobs"],
        "skipped": head["skipped"],
        "unplaceable": head["unplaceable"],
        "rows": rows,
    }


def cell_options(key: str, delta: float) -> ReplayOptions:
    """The replay options of workload ``key`` at Δ = ``delta`` (its flags in
    :data:`WORKLOADS`), ``yu-rr`` only: what the bound and the one-policy ladders read."""
    _, rel, extra = WORKLOADS[key]
    flag = dict(zip(extra[::2], extra[1::2], strict=True))
    return ReplayOptions(
        trace=TRACES / rel,
        policies=("yu-rr",),
        nodes=flag.get("--nodes"),
        cluster=Path(flag["--cluster"]) if "--cluster" in flag else None,
        slot_seconds=delta,
        limit=int(flag["--limit"]) if "--limit" in flag else None,
        cpu_jobs=flag.get("--cpu-jobs", "off"),
    )


def bound_avg_jct(key: str, delta: float) -> float:
    """The average JCT no policy can beat on the cell (``bench.sweep.bound_avg_jct_s``)."""
    return bound_avg_jct_s(cell_options(key, delta))


def _h(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds / 3600:.2f}"


def _r(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


#: The target of issue 28 (docs/formulation.md §15.5): avg JCT ≤ max(BEST_SHARE × the best
#: of BEST_OF, BOUND_SHARE × the lower bound), p50 and p99 ≤ fifo-bf's, ≤ QSSF_SHARE × qssf.
BEST_SHARE, BOUND_SHARE, QSSF_SHARE = 0.90, 1.05, 0.97


def verdict(c: dict[str, Any]) -> dict[str, Any]:
    """The target of issue 28 for one cell (the ladder's middle step only when the
    per-job run was made). A cell saved before the bound was recorded has the baseline
    line alone."""
    rows = c["rows"]
    ours = rows["yu-rr"]
    best_name = min(BEST_OF, key=lambda n: rows[n]["avg_jct_s"])
    best = rows[best_name]["avg_jct_s"]
    bound = c.get("bound_avg_jct_s")
    by_bound = BOUND_SHARE * bound if bound else 0.0
    target = max(BEST_SHARE * best, by_bound)
    bf = rows["fifo-bf"]
    out = {
        "vs_best": ours["avg_jct_s"] / best,
        "best": best_name,
        "vs_bound": ours["avg_jct_s"] / bound if bound else None,
        "vs_qssf": ours["avg_jct_s"] / rows["qssf"]["avg_jct_s"],
        "p50_ok": ours["p50_jct_s"] <= bf["p50_jct_s"],
        "p99_ok": ours["p99_jct_s"] <= bf["p99_jct_s"],
        "ladder": [
            rows["qssf"]["avg_jct_s"],
            rows.get("yu-rr no look-ahead", {}).get("avg_jct_s"),
            ours["avg_jct_s"],
            rows.get("yu-rr joint", {}).get("avg_jct_s"),
        ],
        "target_s": target,
        "target_by": "bound" if by_bound > BEST_SHARE * best else "baseline",
        "avg_ok": ours["avg_jct_s"] <= target,
    }
    out["qssf_ok"] = out["vs_qssf"] <= QSSF_SHARE
    # the qssf line is not restated against the bound (the issue's target, not ours): say
    # where it lies below the bound, so that no schedule at all can meet it
    out["qssf_below_bound"] = bool(bound) and QSSF_SHARE * rows["qssf"]["avg_jct_s"] < bound
    out["met"] = out["avg_ok"] and out["qssf_ok"] and out["p50_ok"] and out["p99_ok"]
    return out


def _ok(flag: bool) -> str:
    return "✓" if flag else "✗"


def render(res: dict[str, Any], tag: str = "", how: str = "", raw: str = "") -> str:
    """The section: ``tag`` is added to its headings (a second section of the same tables,
    e.g. a re-run of the main rows under newer defaults), ``how`` names the command that
    wrote it and ``raw`` the raw file."""
    m = res["machine"]
    how = how or "`make bench-policies` (`python -m bench.policy_table`)"
    raw = raw or "bench/out/policies/all.json"
    lines = [
        "## All policies on public traces, under the same rules" + tag,
        "",
        f"Written by {how}; raw summaries in "
        f"`{raw}`. Machine: {m['cpu']}, {m['cores']} cores. Date of the "
        f"last cell: {m['date']}. One run per cell, seed 0. Every policy replays the same "
        "synthesized jobs (MODEL.md §7) on the same cluster and slot length Δ, with the same "
        "time model: a running job whose allocation changes (resize, migration, preemption "
        "and resume) makes no progress for the restart cost, 30 s unless a row says "
        "otherwise. `yu-rr` is the default: non-elastic (what Slurm can run), late binding, "
        "one LP + rounding per job in queue order, and the look-ahead of narrow starts; "
        "*joint* rows solve one program over the head of the queue instead. Times in hours; "
        "*÷ yu-rr* = "
        "`yu-rr`'s avg JCT ÷ this row's (< 1: `yu-rr` better); *÷ bound* = this row's avg JCT "
        "÷ the lower bound's (docs/formulation.md §15: no schedule is below 1.00). "
        "`oasis-x0.5`/`-x2` are left "
        "out: they took the same decisions as `oasis` on these workloads. `srtf` (where "
        "measured) is the clairvoyant reference, shortest remaining time first re-packed on "
        "machines at every event (docs/formulation.md §14.5): reported beside the baselines, "
        "not one of the target's.",
        "",
        "### Summary: the target of issue 28" + tag,
        "",
        "Target (docs/formulation.md §15.5): `yu-rr`'s avg JCT ≤ max(0.90 × best of optimus, "
        "drf, tiresias, oasis, fifo-bf; 1.05 × bound), its p50 and p99 ≤ `fifo-bf`'s, and its "
        "avg JCT ≤ 0.97 × `qssf`'s. *line* says which term of the max sets the target.",
        "",
        "| workload | Δ (s) | yu-rr avg JCT ≤ target (h) | line | met | yu-rr ÷ best | best "
        "| yu-rr ÷ bound | ÷ qssf (≤ 0.97) | p50 ≤ fifo-bf | p99 ≤ fifo-bf | lower bound (h) "
        "| ladder avg JCT (h): qssf → + LP per job → + look-ahead (default) · joint program |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cells = sorted(res["cells"].values(), key=lambda c: (c["label"], -c["delta"]))
    verdicts = [verdict(c) for c in cells]
    for c, v in zip(cells, verdicts, strict=True):
        ladder = " → ".join(_h(x) for x in v["ladder"][:3]) + f" · {_h(v['ladder'][3])}"
        lines.append(
            f"| {c['label']} | {c['delta']:g} | {_h(v['ladder'][2])} ≤ {_h(v['target_s'])} "
            f"{_ok(v['avg_ok'])} | {v['target_by']} | {_ok(v['met'])} | {_r(v['vs_best'])} | "
            f"{v['best']} | {_r(v['vs_bound'], 3)} | {_r(v['vs_qssf'])} {_ok(v['qssf_ok'])}"
            f"{' (below the bound)' if v['qssf_below_bound'] else ''} | "
            f"{_ok(v['p50_ok'])} | {_ok(v['p99_ok'])} | {_h(c.get('bound_avg_jct_s'))} | "
            f"{ladder} |"
        )
    by_bound = [
        f"{c['label']} at {c['delta']:g} s"
        for c, v in zip(cells, verdicts, strict=True)
        if v["target_by"] == "bound"
    ]
    below = [
        f"{c['label']} at {c['delta']:g} s"
        for c, v in zip(cells, verdicts, strict=True)
        if v["qssf_below_bound"]
    ]
    ratios = [v["vs_bound"] for v in verdicts if v["vs_bound"] is not None]
    refs = [
        c["rows"]["yu-rr"]["avg_jct_s"] / c["rows"]["srtf"]["avg_jct_s"]
        for c in cells
        if "srtf" in c["rows"] and "yu-rr" in c["rows"]
    ]
    lines += [
        "",
        f"Met in this run: the target in {sum(v['met'] for v in verdicts)} of {len(cells)} "
        f"cells (avg JCT ≤ target in {sum(v['avg_ok'] for v in verdicts)}; ≤ 0.97 × `qssf` in "
        f"{sum(v['qssf_ok'] for v in verdicts)}; p50 and p99 no worse than `fifo-bf` in "
        f"{sum(v['p50_ok'] and v['p99_ok'] for v in verdicts)}). "
        + (
            f"`yu-rr` ÷ bound: min {min(ratios):.2f}, median "
            f"{statistics.median(ratios):.2f}, max {max(ratios):.2f}. "
            if ratios
            else ""
        )
        + (
            f"The bound sets the target (0.90 × the best baseline lies below 1.05 × the "
            f"bound) in: {'; '.join(by_bound)}. "
            if by_bound
            else ""
        )
        + (
            f"0.97 × `qssf` lies below the lower bound, so that no schedule meets the "
            f"`qssf` line (which, unlike the baseline line, is not restated against the "
            f"bound), in: {'; '.join(below)}. "
            if below
            else ""
        )
        + (
            f"`yu-rr` ÷ the clairvoyant `srtf`: min {min(refs):.2f}, median "
            f"{statistics.median(refs):.2f}, max {max(refs):.2f} ({len(refs)} cells). "
            if refs
            else ""
        )
        + "A failed cell is analysed in docs/formulation.md §12 (known limits).",
    ]
    for c in cells:
        rows = c["rows"]
        ours = rows["yu-rr"]["avg_jct_s"]
        bound = c.get("bound_avg_jct_s")
        lines += [
            "",
            f"### {c['label']}, Δ = {c['delta']:g} s{tag}",
            "",
            f"{c['jobs']} jobs replayed, {c['skipped']} skipped, {c['unplaceable']} unplaceable. "
            f"Lower bound on the avg JCT: {_h(bound)} h.",
            "",
            "| policy | avg JCT (h) | ÷ bound | p50 JCT (h) | p99 JCT (h) | avg wait (h) "
            "| makespan (h) | GPU util | ÷ yu-rr | decision p99 (ms) | wall (s) |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, p in rows.items():
            ratio = None if not p["avg_jct_s"] else ours / p["avg_jct_s"]
            over = p["avg_jct_s"] / bound if bound and p["avg_jct_s"] is not None else None
            lines.append(
                f"| {name} | {_h(p['avg_jct_s'])} | {_r(over)} | {_h(p['p50_jct_s'])} | "
                f"{_h(p['p99_jct_s'])} | {_h(p['avg_wait_s'])} | {_h(p['makespan_s'])} | "
                f"{_r(p['gpu_util'])} | {'—' if name == 'yu-rr' else _r(ratio)} | "
                f"{_r(p['decision_p99_ms'], 1)} | {_r(p['wall_s'], 1)} |"
            )
    return "\n".join(lines) + "\n"


def partial_runs(
    saved: dict[str, Any] | None, policies: list[str], began: str, saved_date: str
) -> dict[str, Any]:
    """Which run measured which rows, after a ``--policies`` run begun ``began``: its
    policies leave the earlier partial runs they were in (a run left with none is
    dropped) and form the newest; the rows of no partial run are from ``others`` (the
    last whole run, or ``saved_date`` when nothing was partial). A file written before
    runs were listed holds one run as ``policies`` and ``run``."""
    saved = saved or {}
    kept = [
        {"policies": [p for p in r["policies"] if p not in policies], "run": r["run"]}
        for r in _runs(saved)
    ]
    kept = [r for r in kept if r["policies"]]
    return {
        "runs": [*kept, {"policies": policies, "run": began}],
        "others": saved.get("others") or saved_date,
    }


def _runs(partial: dict[str, Any]) -> list[dict[str, Any]]:
    """The partial runs of a saved ``partial`` (one run as ``policies`` and ``run`` in a
    file written before runs were listed; none in an empty one)."""
    if partial.get("runs"):
        return list(partial["runs"])
    if partial.get("policies"):
        return [{"policies": list(partial["policies"]), "run": partial["run"]}]
    return []


def provenance(partial: dict[str, Any]) -> str:
    """The section's sentence on which run measured which rows (:func:`partial_runs`)."""
    said = "; ".join(
        f"rows of {', '.join(r['policies'])} re-measured by `--policies` in the run begun "
        f"{r['run']}"
        for r in _runs(partial)
    )
    return f"{said}; every other row from the run ending {partial['others']}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--raw", default="bench/out/policies")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--deltas", default="600,60")
    ap.add_argument(
        "--runs", type=int, default=len(RUNS), help="Only the first N runs of a cell (RUNS)."
    )
    ap.add_argument(
        "--render-only", action="store_true", help="Rewrite the section from the raw file."
    )
    ap.add_argument(
        "--rebound",
        action="store_true",
        help="Recompute the lower bound of every saved cell (cheap: no policy is replayed).",
    )
    ap.add_argument(
        "--section",
        default="policies",
        help="The docs section to write (a second one keeps the first, e.g. main rows "
        "re-run under newer defaults with --runs 1).",
    )
    ap.add_argument("--tag", default="", help="Text added to the section's headings.")
    ap.add_argument(
        "--policies",
        default="",
        help="Re-run only these policies (comma-separated) of the main run and keep every "
        "other row of each saved cell (for a change that touches only these).",
    )
    args = ap.parse_args()
    only = tuple(p.strip() for p in args.policies.split(",") if p.strip())
    raw = Path(args.raw)
    saved_path = raw / "all.json"
    res: dict[str, Any] = {"machine": machine_facts(), "cells": {}}
    saved_date = ""
    if saved_path.exists():
        old = json.loads(saved_path.read_text())
        res["cells"] = old.get("cells", {})
        saved_date = old["machine"]["date"]
        if old.get("partial"):
            res["partial"] = old["partial"]
        if args.render_only:
            res["machine"] = old["machine"]
    if args.rebound:
        for c in res["cells"].values():
            key = next(k for k, w in WORKLOADS.items() if w[0] == c["label"])
            c["bound_avg_jct_s"] = bound_avg_jct(key, c["delta"])
        saved_path.write_text(json.dumps(res, indent=1))
    if not args.render_only:
        unknown = sorted(set(only) - set(MAIN))
        missing = [
            f"{k}@{d}"
            for k in args.workloads.split(",")
            for d in args.deltas.split(",")
            if only and f"{k}@{float(d):g}" not in res["cells"]
        ]
        if unknown or missing:
            ap.error(f"--policies: unknown {unknown or '—'}, cells never measured {missing or '—'}")
        todo = {
            f"{k}@{float(d):g}" for k in args.workloads.split(",") for d in args.deltas.split(",")
        }
        if not only and todo >= set(res["cells"]):
            res.pop("partial", None)  # every saved row is re-measured now
        else:
            began = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
            res["partial"] = partial_runs(res.get("partial"), list(only), began, saved_date)
        for key in args.workloads.split(","):
            for delta in (float(d) for d in args.deltas.split(",")):
                name = f"{key}@{delta:g}"
                res["cells"][name] = cell(key, delta, args.runs, only, res["cells"].get(name))
                raw.mkdir(parents=True, exist_ok=True)
                saved_path.write_text(json.dumps(res, indent=1))
    how = "`make bench-policies` (`python -m bench.policy_table`)"
    if args.section != "policies" or args.runs != len(RUNS) or only:
        how = (
            f"`python -m bench.policy_table --runs {args.runs} --raw {args.raw} "
            f"--section {args.section}`"
        )
    if res.get("partial"):
        how += " (" + provenance(res["partial"]) + ")"
    text = render(res, args.tag, how, str(saved_path))
    write_section(Path(args.out), args.section, text)
    print(text)


if __name__ == "__main__":
    main()
