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

from . import sweep
from .sweep import PHILLY, PHILLY_JOBS, Cell

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
    """``bench.sweep``'s command (its options: ``--workers``, ``--only``, ``--policies``,
    ``--render-only`` …) on the held-out cells, their raw directory and section."""
    sweep.main(
        cell_list=holdout_cells,
        raw_default="bench/out/holdout",
        section_name="holdout",
        heading=(TITLE, HOW, WHAT),
        doc=__doc__,
    )


if __name__ == "__main__":
    main()
