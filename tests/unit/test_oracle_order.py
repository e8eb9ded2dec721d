"""The oracle-order probe (bench/oracle_order.py): the scaled keys reach every queue order
and are gone afterwards, and the search keeps only what lowers Σ T_i, reproducibly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.oracle_order import (
    DEFAULT_CELLS,
    KEY_READERS,
    by_width,
    merged,
    noise,
    render,
    replay_total,
    scaled_keys,
    search,
)
from slurm_mlsched.model import ClusterSnapshot, Machine, Resources
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.yu_rr import queue_order
from slurm_mlsched.placement.yu_rr.late_binding import PendingJob, ordered
from slurm_mlsched.sim import SimJob
from tests.conftest import RESNET, make_job, one_node_burst

DELTA = 600.0
NU = RESNET.nu_in(DELTA)
CLUSTER = ClusterSnapshot((Machine("n0", Resources(4, 16, 65536)),), slot_seconds=DELTA)
PARAMS = PlacementParams(lookahead=False, preempt=True, preempt_resize=True)


def _jobs() -> list[SimJob]:
    return one_node_burst()[0]


def test_scaled_keys_reach_the_queue_order_and_are_gone_afterwards() -> None:
    snapshot = CLUSTER.at_slot(0)
    pending = [
        PendingJob(make_job("big", workload=NU * 400), 0),
        PendingJob(make_job("small", workload=NU * 4), 1),
    ]
    assert [p.request.job_id for p in ordered(pending, snapshot, PARAMS)] == ["small", "big"]
    original = queue_order.keyer
    with scaled_keys({"big": 1e-6}):
        assert [p.request.job_id for p in ordered(pending, snapshot, PARAMS)] == ["big", "small"]
        assert all(m.keyer is queue_order.keyer for m in KEY_READERS)
        assert queue_order.keyer is not original
    assert all(m.keyer is original for m in KEY_READERS)
    with pytest.raises(RuntimeError), scaled_keys({"big": 2.0}):
        raise RuntimeError("a replay that fails")
    assert all(m.keyer is original for m in KEY_READERS)


def test_a_job_moved_to_the_front_of_the_order_ends_sooner() -> None:
    jobs = _jobs()
    _, default, _ = replay_total(jobs, CLUSTER, PARAMS, {})
    _, first, _ = replay_total(jobs, CLUSTER, PARAMS, {"w2": 1e-9})
    assert first["w2"] < default["w2"]


def test_the_search_keeps_only_what_lowers_the_total_and_is_reproducible() -> None:
    jobs = _jobs()
    found = search(jobs, CLUSTER, PARAMS, evals=12, seed=3)
    assert found.steps and found.best < found.start  # seed 3 finds a better order here
    assert [t for _, t in found.steps] == sorted({t for _, t in found.steps}, reverse=True)
    assert all(t < found.start for _, t in found.steps)
    assert sum(found.after.values()) == found.best
    assert sum(found.before.values()) == found.start
    total, _, _ = replay_total(jobs, CLUSTER, PARAMS, found.scale)
    assert total == found.best  # the multipliers reported replay to the total reported
    again = search(jobs, CLUSTER, PARAMS, evals=12, seed=3)
    assert (again.best, again.scale, again.steps) == (found.best, found.scale, found.steps)
    rows = by_width(found, jobs)
    assert sum(r["jobs"] for r in rows) == len(jobs)
    assert sum(r["after"] for r in rows) == found.best


def test_the_key_noise_is_seeded_and_leaves_the_order_as_it_was() -> None:
    jobs = _jobs()
    first = noise(jobs, CLUSTER, PARAMS, draws=4, sigma=0.5, seed=1)
    assert len(first) == 4
    assert noise(jobs, CLUSTER, PARAMS, draws=4, sigma=0.5, seed=1) == first
    start, _, _ = replay_total(jobs, CLUSTER, PARAMS, {})
    assert start == search(jobs, CLUSTER, PARAMS, evals=0).start  # nothing left scaled


def test_the_section_keeps_a_cell_key_in_one_table_column() -> None:
    found = search(_jobs(), CLUSTER, PARAMS, evals=3, seed=3)
    row = {
        "cell": "Pollux 2|6x8|load 1|seed 0",
        "jobs": 7,
        "bound_avg_jct_s": 3600.0,
        "start_ratio": 1.2,
        "best_ratio": 1.1,
        "noise_ratio_median": 1.15,
        "noise_slots": {"min": 80, "median": 85.0, "max": 90},
        "start_slots": found.start,
        "best_slots": found.best,
        "steps": found.steps,
        "evals": 3,
        "moved": len(found.scale),
        "by_width": by_width(found, _jobs()),
        "measured": "2026-12-06 21:30 UTC",
    }
    text = render([row], {"cpu": "cpu", "cores": "2", "python": "3.11"})
    first = next(line for line in text.splitlines() if line.startswith("| Pollux 2"))
    assert first.startswith("| Pollux 2 · 6x8 · load 1 · seed 0 |")
    assert first.count("|") == 10  # nine columns, the key in one of them


def test_a_run_keeps_the_rows_of_the_cells_it_did_not_re_run(tmp_path: Path) -> None:
    raw = tmp_path / "oracle-order.json"
    raw.write_text(
        json.dumps(
            [{"cell": "elsewhere", "best_slots": 1}, {"cell": DEFAULT_CELLS[1], "best_slots": 2}]
        )
    )
    rows = merged(raw, [{"cell": DEFAULT_CELLS[1], "best_slots": 3}, {"cell": DEFAULT_CELLS[0]}])
    assert [r["cell"] for r in rows] == [DEFAULT_CELLS[0], DEFAULT_CELLS[1], "elsewhere"]
    assert rows[1]["best_slots"] == 3  # the cell re-run has its new row
    assert merged(tmp_path / "none.json", [{"cell": "x"}]) == [{"cell": "x"}]
