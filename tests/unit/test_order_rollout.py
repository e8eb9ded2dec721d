"""The rollout-order probe (bench/order_rollout.py): the rollout puts first the candidate
whose list schedule costs least, only within its candidates, the swapped functions are back
afterwards, and the section reports what the rows hold."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

import pytest

from bench.order_rollout import (
    SWAPPED,
    RolloutOrder,
    merged,
    render,
    replay_total,
    rolled_order,
    rolled_out,
    summary,
)
from slurm_mlsched.model import ClusterSnapshot, Machine, Resources
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.yu_rr import joint, late_binding
from slurm_mlsched.placement.yu_rr.late_binding import PendingJob, ordered
from slurm_mlsched.sim import sim_jobs
from tests.conftest import RESNET, make_job

DELTA = 600.0
NU = RESNET.nu_in(DELTA)
NODE = ClusterSnapshot((Machine("n0", Resources(4, 16, 65536)),), slot_seconds=DELTA)
PARAMS = PlacementParams(lookahead=False)


def _queue() -> list[PendingJob]:
    # one 4-GPU node. "narrow": 1 worker for 8 slots (8 GPU-slots, the smaller service:
    # first in key order); "wide": 4 workers for 3 slots (12 GPU-slots). Listed narrow
    # first, the wide job waits for the whole node: terms 8 + 11 = 19 slots; wide first:
    # 3 + 11 = 14.
    narrow = make_job("narrow", workers=1, workload=NU * 8 - 1)
    wide = make_job("wide", workers=4, workload=NU * 4 * 3 - 1)
    pending = [PendingJob(narrow, 0), PendingJob(wide, 1)]
    return ordered(pending, NODE.at_slot(0), PARAMS)


def test_the_key_order_puts_the_narrow_long_job_first() -> None:
    assert [p.request.job_id for p in _queue()] == ["narrow", "wide"]


def test_the_rollout_puts_first_the_candidate_whose_schedule_costs_least() -> None:
    out = rolled_order(_queue(), NODE.at_slot(0), PARAMS, RolloutOrder(1, 2, 24))
    assert [p.request.job_id for p in out] == ["wide", "narrow"]


def test_a_job_past_the_candidates_keeps_its_place() -> None:
    # a second narrow job (9 slots) between them: the wide job is third in key order.
    # Wide first costs 3 + 11 + 12 = 26 slots, narrow first 8 + 9 + 12 = 29.
    pending = [
        PendingJob(make_job("narrow", workers=1, workload=NU * 8 - 1), 0),
        PendingJob(make_job("narrow2", workers=1, workload=NU * 9 - 1), 1),
        PendingJob(make_job("wide", workers=4, workload=NU * 4 * 3 - 1), 2),
    ]
    snapshot = NODE.at_slot(0)
    queue = ordered(pending, snapshot, PARAMS)
    assert [p.request.job_id for p in queue] == ["narrow", "narrow2", "wide"]
    two = rolled_order(queue, snapshot, PARAMS, RolloutOrder(1, 2, 24))
    assert [p.request.job_id for p in two][-1] == "wide"
    three = rolled_order(queue, snapshot, PARAMS, RolloutOrder(1, 3, 24))
    assert [p.request.job_id for p in three] == ["wide", "narrow", "narrow2"]


def test_one_candidate_leaves_the_key_order_and_depth_one_scores_each_alone() -> None:
    snapshot = NODE.at_slot(0)
    out = rolled_order(_queue(), snapshot, PARAMS, RolloutOrder(1, 1))
    assert [p.request.job_id for p in out] == ["narrow", "wide"]
    # depth 1: each candidate is scored alone (the narrow job 8 slots, the wide one 3)
    out = rolled_order(_queue(), snapshot, PARAMS, RolloutOrder(1, 2, depth=1))
    assert [p.request.job_id for p in out] == ["wide", "narrow"]


def test_the_swapped_functions_are_back_afterwards_also_on_an_error() -> None:
    def now() -> list[object]:
        return [getattr(module, name) for module, name in SWAPPED]

    before = now()
    with rolled_out(RolloutOrder(1, 2)):
        assert all(a is not b for a, b in zip(now(), before, strict=True))
    assert now() == before
    with pytest.raises(RuntimeError), rolled_out(RolloutOrder(1, 2)):
        raise RuntimeError("a replay that fails")
    assert now() == before
    assert [m for m, _ in SWAPPED] == [late_binding, joint]


def test_the_rollout_scores_requested_widths_and_loses_to_the_width_yu_rr_chooses() -> None:
    # why the probe has no signal, in two jobs: the rollout prices each order with every
    # job at its requested width, and puts the wide job first (3 + 11 = 14 slots); in key
    # order yu-rr's own decision starts the wide job now on the 3 GPUs the narrow one
    # leaves, which the list schedule never considers (8 + 4 = 12 slots)
    jobs = sim_jobs(
        [
            (make_job("narrow", workers=1, workload=NU * 8 - 1), 0.0),
            (make_job("wide", workers=4, workload=NU * 4 * 3 - 1), 0.0),
        ],
        DELTA,
    )
    params = PlacementParams(lookahead=False, preempt=False)
    base, placed, _ = replay_total(jobs, NODE, params, None)
    rolled, placed_rolled, _ = replay_total(jobs, NODE, params, RolloutOrder(1, 2, 24))
    assert placed == placed_rolled == 2
    assert (base, rolled) == (12, 14)


def _row(cell: str, base: int, slots: int, base_ratio: float, ratio: float) -> dict[str, object]:
    return {
        "cell": cell,
        "base_slots": base,
        "base_placed": 10,
        "base_ratio": base_ratio,
        "base_wall_s": 1.0,
        "runs": [
            {"config": asdict(RolloutOrder()), "slots": slots, "placed": 10, "ratio": ratio,
             "wall_s": 2.0}
        ],
        "measured": "2026-12-06 23:00 UTC",
    }  # fmt: skip


def test_the_summary_and_the_section_report_what_the_rows_hold() -> None:
    rows = [
        _row("a", 100, 90, 1.20, 1.08),
        _row("b", 100, 110, 1.10, 1.21),
        _row("c", 100, 100, 1.00, 1.00),
    ]
    s = summary(rows, asdict(RolloutOrder()))
    assert s["mean"] == pytest.approx(1.0)
    assert (s["better"], s["worse"]) == (1, 1)
    assert (s["worst_base"], s["worst"]) == (1.20, 1.21)
    assert (s["above_base"], s["above"]) == (1, 1)
    assert s["time"] == pytest.approx(2.0)
    text = render(rows, {"cpu": "cpu", "cores": "2", "python": "3.11"})
    line = next(x for x in text.splitlines() if x.startswith("| the head, 4 candidates"))
    assert "| 3 | 1.0000 | 1 / 1 | 1.200 → 1.210 | 1 → 1 | 2.00 |" in line


def test_a_run_keeps_the_rows_of_the_cells_it_did_not_re_run(tmp_path: Path) -> None:
    raw = tmp_path / "order-rollout.jsonl"
    raw.write_text('{"cell": "a", "base_slots": 1}\n{"cell": "b", "base_slots": 2}\n')
    rows = merged(raw, [{"cell": "b", "base_slots": 3}])
    assert {r["cell"]: r["base_slots"] for r in rows} == {"a": 1, "b": 3}
    assert merged(tmp_path / "none.jsonl", [{"cell": "x"}]) == [{"cell": "x"}]
