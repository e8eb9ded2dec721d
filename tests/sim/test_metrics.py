"""Metrics (sim/metrics.py, MODEL.md §8) on a hand-computed example, and the utility draws.

Two machines of 2 GPUs, Δ = 600 s:

* A: submitted at 0 s (a = 0), co-located 1 worker + 1 PS on m1 in slots 0–1;
* B: submitted at 300 s (a = 1), distributed in slot 2: a worker on m1, a worker and a
  PS on m2.

JCT: A = 2·600 − 0 = 1200 s, B = 3·600 − 300 = 1500 s → mean 1350, p50 1350,
p95 = 1200 + 0.95·300 = 1485, p99 = 1497 (linear interpolation). Makespan 1800 − 0.
Waits: 0 and 1200 − 300 = 900 → mean 450. Completion terms: 2 + 2 = 4 slots. GPUs busy per
slot: 1, 1, 2 of 4 → utilization 0.25, 0.25, 0.5, mean 1/3. Job-slots: 2 co-located of 3.
Queue: B waits in slot 1 only → 0, 1, 0; running 1, 1, 1. Decision latency 1 and 3 ms →
p50 2, p99 2.98. Utility: A γ = (10, 0, ·) → 10/2 = 5; B γ = (20, 1, 2) at d = 2 → 10.
"""

from __future__ import annotations

import pytest

from slurm_mlsched.errors import BelowBoundError
from slurm_mlsched.model import (
    ClusterSnapshot,
    Decision,
    Form,
    Machine,
    Mode,
    Resources,
    SlotPlan,
)
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.sim import (
    SUMMARY_KEYS,
    JobOutcome,
    SimJob,
    SimResult,
    compute_metrics,
    lower_bound,
)
from slurm_mlsched.sim.metrics import check_placed
from slurm_mlsched.sim.utility import CLASSES, Utility, draw_utility, total_utility
from tests.conftest import make_job

CLUSTER = ClusterSnapshot(
    (Machine("m1", Resources(2, 8, 65536)), Machine("m2", Resources(2, 8, 65536))),
    slot_seconds=600.0,
)


def decision(job_id: str, a: int, plan: SlotPlan, ms: float) -> Decision:
    return Decision(
        job_id=job_id,
        policy="hand",
        form=Form.ELASTIC,
        seed=0,
        slots=(plan,),
        start_slot=plan.slot,
        end_slot=plan.stop - 1,
        work_covered=1.0,
        arrival_slot=a,
        timings_ms=(("all", ms),),
    )


def hand_result() -> SimResult:
    a = SimJob(make_job("A", workers=1, arrival=0), 0.0)
    b = SimJob(make_job("B", workers=2, arrival=1), 300.0)
    da = decision("A", 0, SlotPlan(0, Mode.COLOCATED, (("m1", 1),), (("m1", 1),), 2), 1.0)
    db = decision(
        "B", 1, SlotPlan(2, Mode.DISTRIBUTED, (("m1", 1), ("m2", 1)), (("m2", 1),), 1), 3.0
    )
    return SimResult(
        "hand", PlacementParams(), CLUSTER, (JobOutcome(a, da), JobOutcome(b, db)), 2, 4
    )


UTILITIES = {"A": Utility("time-insensitive", 10.0, 0.0, 5.0), "B": Utility("x", 20.0, 1.0, 2.0)}


def test_metrics_on_the_hand_computed_example() -> None:
    m = compute_metrics(hand_result(), UTILITIES, bound=2.0, wall_s=0.5)
    assert m.jct_s == (1200.0, 1500.0)
    assert m.avg_jct_s == pytest.approx(1350.0)
    assert m.p50_jct_s == pytest.approx(1350.0)
    assert m.p95_jct_s == pytest.approx(1485.0)
    assert m.p99_jct_s == pytest.approx(1497.0)
    assert m.makespan_s == pytest.approx(1800.0)
    assert m.avg_wait_s == pytest.approx(450.0)
    assert m.total_completion_slots == 4
    assert m.lp_bound_ratio == pytest.approx(2.0)
    assert m.gpu_util == pytest.approx(1 / 3)
    assert m.series.gpu_util == (0.25, 0.25, 0.5)
    assert m.series.queue == (0, 1, 0)
    assert m.series.running == (1, 1, 1)
    assert m.colocated_share == pytest.approx(2 / 3)
    assert m.decision_p50_ms == pytest.approx(2.0)
    assert m.decision_p99_ms == pytest.approx(2.98)
    assert m.total_utility == pytest.approx(15.0)
    assert m.wall_s == 0.5 and m.placed == 2 and m.rejected == 0
    assert tuple(m.summary()) == SUMMARY_KEYS


def test_no_lp_ratio_when_a_job_was_rejected() -> None:
    r = hand_result()
    c = SimJob(make_job("C"), 0.0)
    rejected = SimResult(
        "hand", r.params, r.cluster, (*r.outcomes, JobOutcome(c, None, "never-fits: x")), 2, 5
    )
    m = compute_metrics(rejected, UTILITIES, bound=2.0)
    assert m.lp_bound_ratio is None and m.rejected == 1
    assert m.rejected_jobs == (("C", "never-fits: x"),)


def test_metrics_of_an_empty_replay_are_none_not_errors() -> None:
    empty = SimResult("hand", PlacementParams(), CLUSTER, (), 0, 0)
    m = compute_metrics(empty, {})
    assert m.avg_jct_s is None and m.gpu_util is None and m.total_utility == 0.0


def test_utility_draws_are_per_job_deterministic_and_in_range() -> None:
    assert draw_utility(3, "j1") == draw_utility(3, "j1")
    assert draw_utility(3, "j1") != draw_utility(4, "j1")
    draws = [draw_utility(0, f"j{i}") for i in range(3000)]
    for u in draws:
        assert 1 <= u.gamma1 <= 100 and 1 <= u.gamma3 <= 15
        lo, hi = {name: bounds for name, _, bounds in CLASSES}[u.kind]
        assert lo <= u.gamma2 <= hi
    for name, share, _ in CLASSES:
        got = sum(u.kind == name for u in draws) / len(draws)
        assert got == pytest.approx(share, abs=0.03), name


def test_total_utility_matches_the_formula() -> None:
    u = Utility("time-critical", 50.0, 5.0, 3.0)
    assert u.value(3) == pytest.approx(25.0)
    assert u.value(100) == pytest.approx(0.0, abs=1e-9)  # no overflow far past the target
    assert total_utility({"x": 3}, {"x": u}) == pytest.approx(25.0)


def test_a_total_below_the_bound_fails_loudly() -> None:
    # a deliberately broken bound: 5 slots for a replay whose total is 4
    with pytest.raises(BelowBoundError) as err:
        compute_metrics(hand_result(), UTILITIES, bound=5.0)
    assert err.value.code == "below-lower-bound" and err.value.exit_code == 1
    assert "'hand'" in err.value.message and err.value.context["bound"] == 5.0
    assert compute_metrics(hand_result(), UTILITIES, bound=4.0).lp_bound_ratio == 1.0


def test_a_result_faster_than_physics_is_caught_by_the_real_bound() -> None:
    # the hand decisions cover 1 mini-batch each; the jobs' workloads (4,000 mini-batches)
    # need at least 8 and 4 slots on this cluster: the replay's own bound catches them
    r = hand_result()
    bound = lower_bound([o.job for o in r.outcomes], CLUSTER)
    assert bound.value is not None and bound.value > r.decisions[0].completion_slots + 2
    with pytest.raises(BelowBoundError):
        compute_metrics(r, UTILITIES, bound=bound.value)


def test_a_replay_with_rejections_checks_its_placed_jobs_alone() -> None:
    r = hand_result()
    c = SimJob(make_job("C"), 0.0)
    rejected = SimResult(
        "hand", r.params, r.cluster, (*r.outcomes, JobOutcome(c, None, "never-fits: x")), 2, 5
    )
    with pytest.raises(BelowBoundError):
        check_placed(rejected)
    check_placed(r)  # nothing rejected: compute_metrics checks it against the replay's bound
