"""One placement parameter against another, ``yu-rr`` alone, over every cell we measure
(``make bench-param``; issue 28: an idea is kept only if it wins on the average of all
cells, not one).

The cells are the 16 of ``bench.policy_table`` (8 workloads × Δ 600 and 60 s) and the 87 of
``bench.sweep`` (traces × shape × offered load × seed), each replayed as ``mlsub replay``
replays it (``services.replay.prepare_jobs`` and ``replay_params``: the same jobs, cluster,
slot length and restart cost), with ``PlacementParams`` overrides given as ``--set
name=value`` (JSON values). Only ``yu-rr`` runs: the baselines do not read these
parameters.

    python -m bench.param_ladder run --tag slot --set preempt_cost='"slot"'
    python -m bench.param_ladder run --tag exact
    python -m bench.param_ladder render --base slot --other exact --title "…"
    python -m bench.param_ladder run --tag srtf --policy srtf   # a reference policy

``--policy`` replays another policy on the same cells (a reference run such as the
clairvoyant ``srtf``): rendered as ``--other`` against a ``yu-rr`` run, its rows stand in
``yu-rr``'s place in the target's clauses, and the section names both policies.

``run`` appends one JSON line per cell to ``bench/out/ladder/TAG.jsonl`` (``--only`` picks
cells by a substring of their key; ``--workers 2`` replays two cells at once, in the order
they finish); ``render`` writes the section ``param-ladder`` of
docs/benchmarks.md: the mean and geometric mean of other ÷ base over the cells both
measured, by family, and every cell that moved by more than 1 %; and issue 28's target
cell by cell with each run's ``yu-rr`` figures beside every other policy's saved ones
(``--refs``: the raw files of ``bench.policy_table`` and ``bench.sweep``): how many cells
meet it with each, and every cell whose verdict changes, with the clause that changed (a
rule that wins on the mean may cost a tail clause: :func:`clause_changes`).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from slurm_mlsched.services.replay import ReplayOptions, prepare_jobs
from slurm_mlsched.services.replay.run import replay_params
from slurm_mlsched.sim import SimResult, simulate

from . import policy_table
from .run import machine_facts
from .sections import write_section
from .sweep import cells, verdict

OUT = Path("bench/out/ladder")
#: Every other policy's figures for the target's clauses: the 16 cells (keyed
#: ``workload@Δ``) and the sweep's (keyed as the ladder keys them).
REFS = (Path("bench/out/policies-now/all.json"), Path("bench/out/sweep/all.json"))


def todo() -> list[tuple[str, ReplayOptions]]:
    """(key, options) of every cell: the 16 policy cells, then the sweep's."""
    out = [
        (f"{key}|{delta:g}", policy_table.cell_options(key, delta))
        for key in policy_table.WORKLOADS
        for delta in (600.0, 60.0)
    ]
    out += [(c.key, replace(c.options(), policies=("yu-rr",))) for c in cells()]
    return out


def run_cell(
    opts: ReplayOptions, overrides: dict[str, Any], policy: str = "yu-rr"
) -> dict[str, float]:
    """``policy`` (``yu-rr`` unless told) on one cell with ``overrides``: avg, p50 and p99
    JCT (h), wall (s)."""
    prepared = prepare_jobs(opts)
    jobs, cluster = prepared.admitted, prepared.cluster
    params = replace(replay_params(opts, opts.seed), **overrides)
    began = time.perf_counter()
    figures = jct_hours(simulate(jobs, cluster, policy, params))
    return {**figures, "wall": time.perf_counter() - began}


def jct_hours(result: SimResult) -> dict[str, float]:
    """avg, p50 and p99 JCT (h) of the placed jobs, each from its submission to the end
    of its last slot (as ``mlsub replay`` reports them, ``sim.metrics``)."""
    delta = result.cluster.slot_seconds
    jct = np.array(
        [(o.decision.end_slot + 1) * delta - o.job.submit_s for o in result.outcomes if o.decision]
    )
    hours = jct / 3600.0
    return {
        "avg": float(hours.mean()),
        "p50": float(np.percentile(hours, 50)),
        "p99": float(np.percentile(hours, 99)),
    }


def _load(tag: str) -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in (OUT / f"{tag}.jsonl").read_text().splitlines()]
    return {r["key"]: r for r in rows}


def _policy(rows: dict[str, dict[str, Any]]) -> str:
    """The policy a run replayed (rows written before ``--policy`` existed: ``yu-rr``)."""
    names = {str(r.get("policy", "yu-rr")) for r in rows.values()}
    if len(names) != 1:
        raise SystemExit(f"a ladder run mixes policies: {sorted(names)}")
    return names.pop()


def _family(key: str) -> str:
    head = key.split("|")[0]
    if "|" in key and key.split("|")[1] in ("600", "60"):
        return "16 policy cells"
    return "sweep: " + head.split(" ")[0]


def references(paths: tuple[Path, ...] = REFS) -> dict[str, dict[str, Any]]:
    """The saved replays (every policy) of the ladder's cells, keyed as the ladder keys
    them (``philly5k|600`` for the policy table's ``philly5k@600``); files that do not
    exist are skipped."""
    out: dict[str, dict[str, Any]] = {}
    for path in paths:
        if path.exists():
            for key, cell in json.loads(path.read_text())["cells"].items():
                out[key.replace("@", "|", 1) if "|" not in key else key] = cell
    return out


CLAUSES = ("avg", "p50", "p99", "qssf")


def clauses(cell: dict[str, Any], row: dict[str, Any]) -> dict[str, bool]:
    """Issue 28's clauses (:func:`bench.sweep.verdict`) for the saved ``cell`` with
    ``yu-rr``'s avg, p50 and p99 (hours) taken from a ladder ``row``."""
    ours = {
        "avg_jct_s": row["avg"] * 3600.0,
        "p50_jct_s": row["p50"] * 3600.0,
        "p99_jct_s": row["p99"] * 3600.0,
    }
    checks: dict[str, bool] = verdict({**cell, "rows": {**cell["rows"], "yu-rr": ours}})["checks"]
    return checks


def clause_changes(
    a: dict[str, dict[str, Any]], b: dict[str, dict[str, Any]], refs: dict[str, dict[str, Any]]
) -> tuple[int, int, int, list[tuple[str, list[str]]]]:
    """Over the cells both runs and ``refs`` hold: how many, how many meet the target with
    ``a``'s and with ``b``'s ``yu-rr``, and each cell where a clause changes, with what
    changed (``"p99 ✓ → ✗ (38.5 → 46.1 h, fifo-bf 43.7 h)"``)."""
    keys = [k for k in a if k in b and k in refs]
    met_a = met_b = 0
    changed: list[tuple[str, list[str]]] = []
    for k in keys:
        ca, cb = clauses(refs[k], a[k]), clauses(refs[k], b[k])
        met_a += all(ca.values())
        met_b += all(cb.values())
        if ca == cb:
            continue
        rows = refs[k]["rows"]
        what = []
        for name in CLAUSES:
            if ca[name] == cb[name]:
                continue
            turn = f"{name} {'✓' if ca[name] else '✗'} → {'✓' if cb[name] else '✗'}"
            if name in ("p50", "p99"):
                ref = rows["fifo-bf"][f"{name}_jct_s"] / 3600.0
                turn += f" ({a[k][name]:.2f} → {b[k][name]:.2f} h, fifo-bf {ref:.2f} h)"
            else:
                turn += f" (avg {a[k]['avg']:.3f} → {b[k]['avg']:.3f} h)"
            what.append(turn)
        changed.append((k, what))
    return len(keys), met_a, met_b, changed


def render(base: str, other: str, title: str, refs: dict[str, dict[str, Any]] | None = None) -> str:
    """The section: other ÷ base per family, the cells that moved by more than 1 %, and
    the target's verdicts with each (``refs``: :func:`references`, read when None)."""
    a, b = _load(base), _load(other)
    keys = [k for k in a if k in b]
    ratio = {k: b[k]["avg"] / a[k]["avg"] for k in keys}
    pa, pb = (_policy(rows) for rows in (a, b))
    who = (
        f"`{pa}` alone, every other parameter at its default"
        if pa == pb
        else f"`{base}`: `{pa}`, `{other}`: `{pb}`, each at its defaults"
    )
    lines = [
        f"## {title}",
        "",
        f"Written by `python -m bench.param_ladder render --base {base} --other {other}` "
        f"from `bench/out/ladder/{base}.jsonl` and `{other}.jsonl` ({who}; "
        "the 16 policy cells and the 87 sweep cells). "
        f"Machine: {machine_facts()['cpu']}; rendered {datetime.now(UTC):%Y-%m-%d %H:%M} UTC. "
        f"*ratio* = avg JCT with `{other}` ÷ with `{base}` (< 1: `{other}` better).",
        "",
        "| cells | n | mean ratio | geometric mean | better (< 0.999) | worse (> 1.001) "
        "| min | max | replay time, summed: other ÷ base |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    members: dict[str, list[str]] = {"all": list(keys)}
    for k in keys:
        members.setdefault(_family(k), []).append(k)
    for name, ks in members.items():
        rs = [ratio[k] for k in ks]
        geo = math.exp(sum(math.log(x) for x in rs) / len(rs))
        wall = sum(b[k]["wall"] for k in ks) / max(sum(a[k]["wall"] for k in ks), 1e-9)
        lines.append(
            f"| {name} | {len(rs)} | {sum(rs) / len(rs):.4f} | {geo:.4f} | "
            f"{sum(x < 0.999 for x in rs)} | {sum(x > 1.001 for x in rs)} | "
            f"{min(rs):.3f} | {max(rs):.3f} | {wall:.2f} |"
        )
    moved = [k for k in keys if abs(ratio[k] - 1) > 0.01]
    lines += [
        "",
        "Cells that moved by more than 1 % (avg JCT in hours, p99 beside it):",
        "",
        f"| cell | {base} avg (p99) | {other} avg (p99) | ratio |",
        "|---|---|---|---|",
    ]
    for k in moved:
        label = k.replace("|", " · ")  # a '|' would split the table's cell
        lines.append(
            f"| {label} | {a[k]['avg']:.3f} ({a[k]['p99']:.2f}) | {b[k]['avg']:.3f} "
            f"({b[k]['p99']:.2f}) | {ratio[k]:.3f} |"
        )
    n, met_a, met_b, changed = clause_changes(a, b, references() if refs is None else refs)
    if n:
        lines += [
            "",
            "Issue 28's target (avg ≤ max(0.90 × best, 1.05 × bound), p50 and p99 ≤ "
            "`fifo-bf`'s, ≤ 0.97 × `qssf`), "
            + (
                "each run's `yu-rr`"
                if pa == pb == "yu-rr"
                else f"each run's policy in `yu-rr`'s place (`{pa}`, `{pb}`)"
            )
            + " beside every other policy's "
            f"saved figures ({', '.join(f'`{p}`' for p in REFS)}): met in **{met_a}** of "
            f"{n} cells with `{base}`, **{met_b}** with `{other}`."
            + (" Cells where a clause changes:" if changed else " No clause changes in any cell."),
        ]
        if changed:
            lines += ["", "| cell | what changes |", "|---|---|"]
            lines += [f"| {k.replace('|', ' · ')} | {'; '.join(w)} |" for k, w in changed]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--tag", required=True)
    r.add_argument("--set", action="append", default=[], help="name=JSON value")
    r.add_argument("--only", default="")
    r.add_argument(
        "--policy",
        default="yu-rr",
        help="Replay this policy instead of yu-rr (a reference run: render it as --other "
        "against a yu-rr run; the target's clauses then read its figures in yu-rr's place).",
    )
    r.add_argument(
        "--workers",
        type=int,
        default=1,
        help="Replay this many cells at once (processes; the walls then share the cores).",
    )
    w = sub.add_parser("render")
    w.add_argument("--base", required=True)
    w.add_argument("--other", required=True)
    w.add_argument("--title", default="A placement parameter against another")
    w.add_argument("--out", default="docs/benchmarks.md")
    w.add_argument("--section", default="param-ladder", help="The docs section to write.")
    args = ap.parse_args()
    if args.cmd == "render":
        write_section(Path(args.out), args.section, render(args.base, args.other, args.title))
        return
    overrides = {k: json.loads(v) for k, v in (s.split("=", 1) for s in args.set)}
    OUT.mkdir(parents=True, exist_ok=True)
    cells_to_run = [(key, opts) for key, opts in todo() if not args.only or args.only in key]
    with (
        (OUT / f"{args.tag}.jsonl").open("a") as out,
        ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool,
    ):
        running = {
            pool.submit(run_cell, opts, overrides, args.policy): key for key, opts in cells_to_run
        }
        for done in as_completed(running):  # each cell's line as soon as it is measured
            key = running[done]
            row = {"key": key, "policy": args.policy, **done.result()}
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(args.tag, key, f"{row['avg']:.4f}", flush=True)


if __name__ == "__main__":
    main()
