"""Held-out cells: scheduling quality on workloads no parameter was ever measured on
(issue 28: "quality must hold on traces and cluster shapes nobody tuned on";
``make bench-holdout``).

Every rule and default of ``yu-rr`` was kept or dropped on the 16 policy cells and the
87 sweep cells (``bench/param_ladder.py`` runs both). Those cells are therefore no longer
an honest test of how the defaults generalize. The cells here were fixed before they
were first replayed (2026-12-05) and are not to be used to choose a parameter: a rule
measured here is measured on its ladder first, then reported here, never tuned here.
(Said plainly: their replay with shrink in place, after it had been made a default on the
ladder, was one of the two reasons it was turned off again the same night; so they have
informed one decision, to keep the defaults as they were. They stay held out for every
rule not yet measured.)

* **Philly, later in the trace.** The sweep replays Philly's first 2,000 jobs (submitted
  2017-09-04 to 2017-09-26). Here: the first 2,000 submitted on or after each of three
  Mondays, 2017-10-16, 2017-11-13 and 2017-12-04 (US Pacific days, as the trace's
  timestamps; ``mlsub replay --since DATE --limit 2000``), on 6 × 8 and on the mixed
  cluster, at load 1: 6 cells.
* **Pollux and Sia on a shape, a load and a seed no cell used.** Every Pollux (1–8) and
  Sia/Helios (1–10) workload on 8 × 8 (no cell used 8 nodes of 8 GPUs), at load 1.25 (the
  sweep's loads are 0.5, 1 and 1.5), seed 3 (the sweep's are 0, 1 and 2): 18 cells.

Each cell is replayed and judged as a sweep cell (``bench.sweep.run_cell``, ``verdict``):
every policy at its defaults, the same jobs, cluster, Δ = 600 s and restart cost, the
target of issue 28 and the lower bound. Raw results: ``bench/out/holdout/all.json``.
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ProcessPoolExecutor, as_completed
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .run import machine_facts
from .sections import write_section
from .sweep import PHILLY, PHILLY_JOBS, Cell, render, run_cell

#: The Mondays from which Philly's held-out windows start (US Pacific).
PHILLY_SINCE = ("2017-10-16", "2017-11-13", "2017-12-04")
HOLDOUT_SHAPE = "8x8"
HOLDOUT_LOAD = 1.25
HOLDOUT_SEED = 3

TITLE = "## Held-out cells: workloads no parameter was measured on"
HOW = (
    "`make bench-holdout` (`python -m bench.holdout`, the replay's defaults); raw results in "
    "`bench/out/holdout/"
)
WHAT = (
    "Philly's first 2,000 jobs from each of 2017-10-16, 2017-11-13 and 2017-12-04 (`mlsub "
    "replay --since DATE --limit 2000`; the sweep's Philly cells are the trace's first "
    "2,000, from 2017-09-04) on 6 × 8 and the mixed cluster at load 1, and every Pollux and "
    "Sia/Helios workload on 8 × 8 at load 1.25, seed 3 (a shape, a load and a seed no sweep "
    "cell has). Fixed before their first replay and never used to choose a parameter "
    "(bench/holdout.py)"
)


def holdout_cells() -> list[Cell]:
    """Every held-out cell (module docstring)."""
    out = [
        Cell(PHILLY, f"Philly from {since}", shape, 1.0, limit=PHILLY_JOBS, since=since)
        for since in PHILLY_SINCE
        for shape in ("6x8", "mixed")
    ]
    pollux = [
        (f"philly-pollux/pollux-workloads/workload-{i}.csv", f"Pollux {i}") for i in range(1, 9)
    ]
    sia = [(f"helios-saturn-sia/workload-{i}.csv", f"Sia {i}") for i in range(1, 11)]
    out += [
        Cell(trace, label, HOLDOUT_SHAPE, HOLDOUT_LOAD, HOLDOUT_SEED)
        for trace, label in (*pollux, *sia)
    ]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--raw", default="bench/out/holdout")
    ap.add_argument("--only", default="", help="Run only cells whose key contains this text.")
    ap.add_argument("--render-only", action="store_true", help="Rewrite the section only.")
    ap.add_argument("--workers", type=int, default=1, help="Replay this many cells at once.")
    args = ap.parse_args()
    raw = Path(args.raw)
    saved = raw / "all.json"
    res: dict[str, Any] = {"machine": machine_facts(), "cells": {}}
    if saved.exists():
        old = json.loads(saved.read_text())
        res["cells"] = old.get("cells", {})
        if args.render_only:
            res["machine"] = old["machine"]
    if not args.render_only:
        todo = [c for c in holdout_cells() if args.only in c.key]
        run = "the run begun " + datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
        raw.mkdir(parents=True, exist_ok=True)
        with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
            running = {pool.submit(run_cell, c, True, run=run): c for c in todo}
            for done in as_completed(running):
                cell = running[done]
                res["cells"][cell.key] = done.result()
                res["machine"] = machine_facts()
                saved.write_text(json.dumps(res, indent=1))
                print(f"{cell.key}: {res['cells'][cell.key]['wall_s']} s", flush=True)
    write_section(Path(args.out), "holdout", render(res, heading=(TITLE, HOW, WHAT)))


if __name__ == "__main__":
    main()
