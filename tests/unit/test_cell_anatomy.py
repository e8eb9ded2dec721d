"""A replay cell taken apart (bench/cell_anatomy.py): the rows add up to the replay and to
the relaxed schedule, and a spread run is counted at its own rate."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench.cell_anatomy import (
    IntArray,
    by_width,
    gpu_time,
    held_per_slot,
    in_system,
    plot,
    render,
    width_class,
)
from slurm_mlsched.model import ClusterSnapshot, Machine, Resources
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.sim import SimResult, sim_jobs, simulate
from slurm_mlsched.sim.capped_bound import capped_jobs, relaxed_completions
from tests.conftest import RESNET, make_job

DELTA = 600.0
NU = RESNET.nu_in(DELTA)
# one node of 4 GPUs and four of 1 GPU: a 4-worker job is co-located on the big node or
# spread over the small ones
CLUSTER = ClusterSnapshot(
    (
        Machine("big", Resources(4, 16, 65536)),
        *(Machine(f"one{i}", Resources(1, 8, 65536)) for i in range(4)),
    ),
    slot_seconds=DELTA,
)


def _replay() -> tuple[SimResult, IntArray, IntArray]:
    jobs = sim_jobs(
        [(make_job("A", workers=4, workload=NU * 4 * 300), 0.0)]
        + [(make_job("B", workers=4, workload=NU * 4 * 10), 60.0)]
        + [(make_job(f"s{i}", workers=1, workload=NU * 3), 120.0 * i) for i in range(5)],
        DELTA,
    )
    # without the look-ahead B spreads at once rather than wait (no event would come to
    # re-decide it before A ends)
    result = simulate(jobs, CLUSTER, "yu-rr", PlacementParams(lookahead=False))
    requests = [j.request for j in jobs]
    relaxed = relaxed_completions(requests, CLUSTER)
    fewest = capped_jobs(requests, CLUSTER).fewest.astype(np.int64)
    return result, relaxed, fewest


def test_the_width_rows_add_up_to_the_replay_and_the_relaxed_schedule() -> None:
    result, relaxed, fewest = _replay()
    rows = by_width(result, relaxed, fewest)
    assert [r.width for r in rows] == [1, 4]
    assert sum(r.jobs for r in rows) == 7
    totals = sum(
        o.decision.end_slot - o.job.request.arrival_slot + 1
        for o in result.outcomes
        if o.decision is not None
    )
    assert len(result.outcomes) == 7 and sum(r.total for r in rows) == totals
    assert sum(r.relaxed for r in rows) == int(relaxed.sum())
    for r in rows:
        assert r.total == r.wait + r.fewest + r.longer
        assert r.excess == r.total - r.relaxed
    # both 4-worker jobs cannot hold the big node at once: B runs spread, longer than d_i
    assert rows[1].longer > 0


def test_gpu_time_counts_what_each_run_held_and_a_spread_run_at_its_own_rate() -> None:
    result, _, _ = _replay()
    rows = gpu_time(result)
    assert {r.mode for r in rows} == {"co-located", "spread"}
    held = sum(
        c * p.length * o.job.request.worker.gpu
        for o in result.outcomes
        if o.decision is not None
        for p in o.decision.slots
        for _, c in p.workers
    )
    assert sum(r.gpu_slots for r in rows) == pytest.approx(held)
    for r in rows:
        if r.mode == "co-located":
            assert r.efficiency == pytest.approx(1.0)
        else:  # RESNET trains slower spread than co-located
            ratio = RESNET.nu_ex(DELTA) / RESNET.nu_in(DELTA)
            assert r.efficiency == pytest.approx(ratio)
            assert r.efficiency < 1.0


def test_a_job_left_unplaced_or_a_short_list_is_refused() -> None:
    result, relaxed, fewest = _replay()
    with pytest.raises(ValueError, match="one relaxed completion"):
        by_width(result, relaxed[:-1], fewest)


def test_width_classes_and_the_rendered_tables() -> None:
    assert [width_class(w) for w in (1, 2, 4, 5, 8, 9, 16)] == [
        "1", "2-4", "2-4", "5-8", "5-8", ">8", ">8",
    ]  # fmt: skip
    result, relaxed, fewest = _replay()
    rows = by_width(result, relaxed, fewest)
    res = {
        "cell": "c", "policy": "yu-rr", "jobs": 7, "machines": 5, "gpus": 8.0,
        "slot_seconds": DELTA, "bound_h": 1.0, "relaxed_h": 1.1, "policy_h": 1.3, "wall_s": 0.1,
        "widths": [r.__dict__ for r in rows],
        "gpu": [r.__dict__ | {"efficiency": r.efficiency} for r in gpu_time(result)],
        "machine": {"date": "d", "cpu": "x", "cores": "2"},
    }  # fmt: skip
    text = render(res)
    assert "| 4 | 2 |" in text and "1.30 ×" in text


def test_the_jobs_in_the_system_sum_to_the_completion_times() -> None:
    arrival = np.array([0, 2, 2, 7], dtype=np.int64)
    total = np.array([3, 1, 5, 2], dtype=np.int64)
    curve = in_system(arrival, total)
    assert curve.tolist() == [1, 1, 3, 1, 1, 1, 1, 1, 1]
    assert int(curve.sum()) == int(total.sum())
    # a shorter horizon cuts the curve, never shifts it
    assert in_system(arrival, total, 4).tolist() == [1, 1, 3, 1]


def test_the_gpus_held_per_slot_add_up_to_the_gpu_table_and_the_plot_is_written(
    tmp_path: Path,
) -> None:
    result, relaxed, _ = _replay()
    horizon = max(o.decision.end_slot + 1 for o in result.outcomes if o.decision is not None)
    held = held_per_slot(result, horizon)
    assert sum(float(v.sum()) for v in held.values()) == pytest.approx(
        sum(r.gpu_slots for r in gpu_time(result))
    )
    assert max(float(sum(held.values()).max()), 0.0) <= 8.0  # never more than the GPUs
    arrival = np.array([o.job.request.arrival_slot for o in result.outcomes], dtype=np.int64)
    curve = in_system(arrival, relaxed, horizon)
    png = tmp_path / "a.png"
    plot(
        {"slot_seconds": DELTA, "policy": "yu-rr", "cell": "c", "gpus": 8.0},
        {
            "policy": curve, "relaxed": curve, "policy_wide": curve, "relaxed_wide": curve,
            "held": held,
        },
        png,
    )  # fmt: skip
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
