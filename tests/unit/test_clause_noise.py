"""The clause-noise probe (bench/clause_noise.py): the threshold is the reference policy's
figure × the clause's factor, the draws are seeded and counted against it, and each clause
replays its table's cell."""

from __future__ import annotations

import math

import pytest

from bench.clause_noise import CLAUSES, Clause, figures, measure, render
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.yu_rr import queue_order
from slurm_mlsched.sim import SimJob
from tests.conftest import one_node_burst

CLUSTER = one_node_burst()[1]
PARAMS = PlacementParams(lookahead=False, preempt=True, preempt_resize=True)


def _jobs() -> list[SimJob]:
    return one_node_burst()[0]


def test_the_threshold_is_the_reference_times_the_factor_and_the_draws_count_against_it() -> None:
    jobs = _jobs()
    clause = Clause("test", "the 16 cells", "x|600", "avg", "qssf", 0.97, 6)
    row = measure(clause, jobs, CLUSTER, PARAMS, draws=6, seed=2, sigma=0.5)
    qssf = figures(jobs, CLUSTER, "qssf", PARAMS)["avg"]
    assert row["threshold"] == pytest.approx(0.97 * qssf)
    assert row["default"] == figures(jobs, CLUSTER, "yu-rr", PARAMS)["avg"]
    assert row["default_holds"] == (row["default"] <= row["threshold"])
    assert len(row["values"]) == 6
    assert row["holds"] == sum(v <= row["threshold"] for v in row["values"])
    assert row["min"] <= row["median"] <= row["max"]
    assert len(set(row["values"])) > 1  # σ = 0.5 moves this burst's order
    again = measure(clause, jobs, CLUSTER, PARAMS, draws=6, seed=2, sigma=0.5)
    assert again["values"] == row["values"]  # seeded
    assert queue_order.keyer.__module__ == "slurm_mlsched.placement.yu_rr.queue_order"


def test_a_p99_clause_reads_the_reference_policys_p99() -> None:
    jobs = _jobs()
    clause = Clause("test", "held out", "x", "p99", "fifo-bf")
    row = measure(clause, jobs, CLUSTER, PARAMS, draws=1)
    assert row["threshold"] == figures(jobs, CLUSTER, "fifo-bf", PARAMS)["p99"]
    assert row["draws"] == 1 and row["sigma"] == 0.05


def test_the_section_gives_each_clause_its_threshold_and_the_draws_that_meet_it() -> None:
    row = {
        "clause": "Mustang 2012-02-07 at Δ = 600 s",
        "source": "the 16 cells",
        "metric": "avg",
        "reference_policy": "qssf",
        "factor": 0.97,
        "threshold": 2.0378,
        "default": 2.0407,
        "default_holds": False,
        "min": 2.0404,
        "median": 2.043,
        "max": 2.0458,
        "holds": 0,
        "draws": 16,
        "measured": "2026-12-06 23:00 UTC",
    }
    text = render([row], {"cpu": "cpu", "cores": "2", "python": "3.11"})
    line = next(x for x in text.splitlines() if x.startswith("| avg"))
    assert line == (
        "| avg ≤ 0.97 × `qssf`'s (the 16 cells) | Mustang 2012-02-07 at Δ = 600 s | 2.0378 | "
        "2.0407 (misses) | 2.0404 / 2.0430 / 2.0458 | 0 of 16 |"
    )


def test_each_clause_replays_its_tables_cell() -> None:
    by_cell = {c.cell: c for c in CLAUSES}
    mustang = by_cell["mustang1|600"].options()
    assert mustang.slot_seconds == 600.0 and mustang.cpu_jobs == "per-node"
    assert mustang.trace.name == "mustang_week_2012-02-07.csv"
    held = by_cell["Pollux 5|8x8|load 1.25|seed 3"].options()
    assert held.trace.name == "workload-5.csv" and held.seed == 3
    assert all(c.draws > 0 and not math.isnan(c.factor) for c in CLAUSES)
