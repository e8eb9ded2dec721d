"""The width look-ahead, measured (``lookahead_widths``, docs/formulation.md §14.7;
``make bench-widths``).

On cells of the robustness sweep (``bench.sweep.cells``: by default ``KEYS``, chosen
where `yu-rr` lost to the best baseline or sat far above the bound, and some where it
won; ``--all``: every cell but the 2,000-job Philly ones), `yu-rr` at
its defaults is replayed beside `yu-rr` with ``lookahead_widths`` on: the same jobs,
cluster, Δ, restart cost and seed (``services.replay.prepare_jobs``, ``sim.simulate``).
The section gives each cell's avg JCT both ways, the ratio, the decision wall time both
ways, and the mean ratio over the cells. Results are kept in
``bench/out/widths/all.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any

from .param_ladder import run_cell
from .run import machine_facts
from .sections import write_section
from .sweep import Cell, cells

#: The cells measured: keys of ``bench.sweep.cells``.
KEYS = (
    "Pollux 4|6x8|load 1|seed 0",
    "Pollux 5|6x8|load 1|seed 0",
    "Pollux 7|6x8|load 1|seed 0",
    "Pollux 5|16x4|load 0.5|seed 0",
    "Pollux 1|16x4|load 1|seed 0",
    "Sia 2|16x4|load 1|seed 0",
    "Sia 4|16x4|load 1.5|seed 0",
    "Sia 10|16x4|load 1|seed 0",
)


def avg_jct_h(cell: Cell, widths: bool) -> tuple[float, float]:
    """`yu-rr`'s avg JCT (h) on ``cell`` with ``lookahead_widths`` as given, and the
    replay's wall time (s) (``bench.param_ladder.run_cell``)."""
    got = run_cell(cell.options(preempt=True), {"lookahead_widths": widths})
    return got["avg"], got["wall"]


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    rows = sorted(res["cells"].values(), key=lambda r: r["key"])
    lines = [
        "## Width look-ahead (`lookahead_widths`, docs/formulation.md §14.7)",
        "",
        "Written by `make bench-widths` (`python -m bench.width_ladder`); raw results in "
        f"`bench/out/widths/all.json`. Machine: {m['cpu']}, {m['cores']} cores (shared with "
        f"other work); date: {m['date']}. {len(rows)} cells of the robustness sweep, Δ = "
        "600 s, each cell's seed, restart cost 30 s, preemption "
        f"{'on' if res.get('preempt', False) else 'off'}; `yu-rr` at its defaults beside "
        "`yu-rr` whose start now is also weighed against the same job with W/2, W/4, … 1 "
        "workers by the look-ahead's rollout.",
        "",
        "| cell | yu-rr avg JCT (h) | + widths (h) | ÷ | wall yu-rr / + widths (s) |",
        "|---|---|---|---|---|",
    ]
    ratios = []
    for r in rows:
        ratio = r["widths_h"] / r["plain_h"]
        ratios.append(ratio)
        label = r["key"].replace("|", ", ")
        lines.append(
            f"| {label} | {r['plain_h']:.3f} | {r['widths_h']:.3f} | {ratio:.3f} | "
            f"{r['plain_wall_s']:.1f} / {r['widths_wall_s']:.1f} |"
        )
    if ratios:
        better = sum(x < 1 for x in ratios)
        lines += [
            "",
            f"Mean ratio over the {len(ratios)} cells: {statistics.mean(ratios):.3f} "
            f"(best {min(ratios):.3f}, worst {max(ratios):.3f}; better in {better}, worse in "
            f"{sum(x > 1 for x in ratios)}).",
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--raw", default="bench/out/widths")
    ap.add_argument(
        "--all",
        action="store_true",
        help="Every sweep cell but the 2,000-job Philly ones (mostly 1-GPU jobs: few widths "
        "to choose), not only KEYS.",
    )
    args = ap.parse_args()
    saved = Path(args.raw) / "all.json"
    res: dict[str, Any] = {"machine": machine_facts(), "cells": {}, "preempt": True}
    by_key = {c.key: c for c in cells()}
    keys = [k for k, c in by_key.items() if c.limit is None] if args.all else list(KEYS)
    for n, key in enumerate(keys, 1):
        plain, plain_wall = avg_jct_h(by_key[key], False)
        widths, widths_wall = avg_jct_h(by_key[key], True)
        res["cells"][key] = {
            "key": key,
            "plain_h": plain,
            "widths_h": widths,
            "plain_wall_s": plain_wall,
            "widths_wall_s": widths_wall,
        }
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(res, indent=1))
        print(f"[{n}/{len(keys)}] {key}: {plain:.3f} h -> {widths:.3f} h", flush=True)
    write_section(Path(args.out), "widths", render(res))
    print(render(res))


if __name__ == "__main__":
    main()
