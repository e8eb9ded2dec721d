"""oasis (placement/baselines/oasis*.py) on small hand-checked scenarios.

Machines of (4 GPU, 16 CPU, 64 GiB) unless said; a worker (1, 1, 8 GiB), a PS (0, 1, 4 GiB):
in machine units α̂ = (1/4, 1/16, 1/8), β̂ = (0, 1/16, 1/16), Σ = 9/16. RESNET's distributed
rate ν_ex per worker and slot (Δ = 600 s): workloads are whole multiples of it. Utilities
come from ``placement.utility.draw_utility(0, id)``: ``job0`` is time-insensitive (γ2 = 0),
``job22`` time-critical, ``job1`` time-sensitive.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from slurm_mlsched.model import Mode, Reservation, Resources
from slurm_mlsched.placement import PlacementParams, place
from slurm_mlsched.placement.baselines import oasis_search
from slurm_mlsched.placement.baselines.oasis import (
    RejectedError,
    _context,
    _fast_path,
    _searched,
)
from slurm_mlsched.placement.baselines.oasis_prices import (
    log_prices,
    log_task_cost,
    logaddexp,
    prepare_oasis,
    price_bounds,
)
from slurm_mlsched.placement.baselines.oasis_search import (
    Schedule,
    Steps,
    _dominates,
    curves,
    segments,
)
from slurm_mlsched.placement.baselines.reserved import Reserved
from slurm_mlsched.placement.program.verify import check_decision
from slurm_mlsched.placement.utility import draw_utility
from slurm_mlsched.sim import SimJob, compute_metrics, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_cluster, make_job

NU = RESNET.nu_ex(600.0)
CHEAP = PlacementParams(oasis_ln_u=5.0, oasis_ln_l=-1000.0)  # prices ≪ any utility


def cluster(n: int = 1):  # type: ignore[no-untyped-def]
    return make_cluster(n, gpus=4, cpus=16, mem=65536)


def test_price_bounds_by_hand() -> None:
    job = make_job("job1", workers=4, workload=4 * NU * 3)  # 3 slots at 4 workers
    f = draw_utility(0, "job1")
    b = price_bounds([job], {"job1": f}, cluster(2))
    # U: utility at the shortest duration (3 slots) over the smallest positive α̂ (1/16)
    assert b.ln_u == pytest.approx(f.log_value(3) - math.log(1 / 16))
    # T = 0 + 12 − 1 (one worker from arrival); η = 4 GPUs of 8; W = 12 worker-slots
    assert (b.horizon, b.eta) == (11, 0.5)
    expect_l = f.log_value(12) - math.log(12 * 9 / 16) - math.log(4 * 0.5)
    assert b.ln_l == pytest.approx(min(expect_l, b.ln_u))


def test_prices_run_from_l_on_an_idle_machine_to_u_on_a_full_one() -> None:
    cap = np.array([[4.0, 16.0, 65536.0]])
    for share, expect in ((0.0, -2.0), (1.0, 3.0), (0.5, 0.5)):
        got = log_prices(cap * share, cap, ln_u=3.0, ln_l=-2.0)
        assert np.allclose(got, expect)
    # a task's cost: ln Σ_r P_r·d̂_r; a flat price e^c makes it c + ln Σ d̂
    flat = np.full((1, 3), 2.0)
    assert log_task_cost(flat, np.array([0.25, 1 / 16, 1 / 8]))[0] == pytest.approx(
        2.0 + math.log(7 / 16)
    )


def test_steps_follow_the_ps_rule() -> None:
    auto = Steps.of(make_job(workers=5))
    assert auto.workers.tolist() == [1] * 5 and auto.ps.tolist() == [1, 0, 0, 0, 1]
    assert auto.tasks[:3] == (True, False, False)  # the PS first, then its worker
    fixed = Steps.of(make_job(workers=6, ps_count=2))
    assert fixed.workers.tolist() == [2, 1, 1, 1, 1] and fixed.ps.tolist() == [2, 0, 0, 0, 0]


def test_a_flat_price_costs_the_usage_and_the_variants_scale_it() -> None:
    # flat price e^c per machine unit: 2 slots of (worker + PS) cost 2·e^c·9/16
    job = make_job("job1", workers=1, workload=NU * 2)
    c = -20.0
    costs = {}
    for policy, factor in (("oasis", 1.0), ("oasis-x2", 2.0), ("oasis-x0.5", 0.5)):
        d = place(job, cluster(), policy, PlacementParams(oasis_ln_u=c, oasis_ln_l=c))
        stats = dict(d.stats)
        costs[policy] = stats["ln_cost"]
        assert stats["ln_cost"] == pytest.approx(c + math.log(factor) + math.log(2 * 9 / 16))
        assert (d.start_slot, d.end_slot) == (0, 1)
    assert costs["oasis-x2"] - costs["oasis"] == pytest.approx(math.log(2))


def test_runs_distributed_at_the_network_rate_even_on_one_machine() -> None:
    job = make_job("job1", workers=2, workload=2 * NU * 3)
    d = place(job, cluster(), "oasis", CHEAP)
    assert all(p.mode is Mode.DISTRIBUTED for p in d.slots)
    assert (d.start_slot, d.end_slot) == (0, 2)  # 2 workers × ν_ex × 3 slots
    assert d.work_covered == pytest.approx(job.workload)
    assert check_decision(d, job, cluster()) == []
    assert d.solver == "oasis-greedy" and d.timings_ms


def test_tasks_spread_to_the_cheapest_machines() -> None:
    # exponential prices: the PS goes to the empty node1, the worker to the empty node2
    job = make_job("job1", workers=1, workload=NU)
    d = place(job, cluster(2), "oasis", CHEAP)
    assert d.slots[0].ps == (("node1", 1),) and d.slots[0].workers == (("node2", 1),)


def test_time_insensitive_job_waits_for_cheap_slots_time_critical_does_not() -> None:
    # one machine half taken until slot 10; the job needs 6 worker-slots (2 workers × 3)
    busy = cluster().with_reservations((Reservation("node1", 0, 10, Resources(2, 2, 16384), "x"),))
    lazy = place(make_job("job0", workers=2, workload=2 * NU * 3), busy, "oasis", CHEAP)
    # γ2 = 0: the utility does not fall, so the cheapest candidate wins: one worker per
    # slot on the empty machine after slot 10 (candidate end 16, used until 15)
    assert (lazy.start_slot, lazy.end_slot) == (10, 15)
    assert {p.total_workers for p in lazy.slots} == {1}
    urgent = place(make_job("job22", workers=2, workload=2 * NU * 3), busy, "oasis", CHEAP)
    assert (urgent.start_slot, urgent.end_slot) == (0, 2)  # the earliest end
    assert urgent.slots[0].total_workers == 2


def test_a_run_of_slots_keeps_one_placement_across_segments() -> None:
    snap = cluster(3).with_reservations(
        (
            Reservation("node1", 0, 3, Resources(1, 1, 1024), "x"),
            Reservation("node2", 5, 8, Resources(1, 1, 1024), "y"),
            Reservation("node3", 2, 6, Resources(1, 1, 1024), "z"),
        )
    )
    job = make_job("job1", workers=1, workload=NU * 10)
    d = place(job, snap, "oasis", CHEAP)
    assert len(d.slots) == 1 and (d.start_slot, d.end_slot) == (0, 9)
    assert check_decision(d, job, snap) == []


def test_a_job_whose_cost_exceeds_its_utility_is_rejected_and_counted() -> None:
    dear = PlacementParams(oasis_ln_u=12.0, oasis_ln_l=12.0)  # e^12 per machine unit > 100
    job = make_job("job1", workers=1, workload=NU)
    with pytest.raises(RejectedError) as err:
        place(job, cluster(), "oasis", dear)
    assert err.value.code == "rejected" and "costs more than its utility" in err.value.message
    result = simulate([SimJob(job, 0.0)], cluster(), "oasis", dear)
    assert result.decisions == () and result.rejected[0].error.startswith("rejected: ")
    m = compute_metrics(result, {"job1": draw_utility(0, "job1")}, bound=1.0)
    assert (m.placed, m.rejected, m.lp_bound_ratio) == (0, 1, None)


def test_the_replay_prepares_the_oracle_from_the_whole_trace() -> None:
    jobs = [
        SimJob(make_job(f"job{i}", workers=1 + i % 3, workload=NU * (2 + i)), 0.0) for i in range(6)
    ]
    requests = [j.request for j in jobs]
    params = prepare_oasis(requests, cluster(2), PlacementParams(seed=7))
    utilities = {r.job_id: draw_utility(7, r.job_id) for r in requests}
    bounds = price_bounds(requests, utilities, cluster(2))
    assert (params.oasis_ln_u, params.oasis_ln_l, params.utility_seed) == (
        bounds.ln_u,
        bounds.ln_l,
        7,
    )
    result = simulate(jobs, cluster(2), "oasis", PlacementParams(seed=7))
    assert result.params.oasis_ln_u == bounds.ln_u  # simulate ran the prepare hook
    assert capacity_violations(result) == [] and decision_problems(result) == []
    for d in result.decisions:
        assert f"ln U = {bounds.ln_u:.6g}" in d.notes[0]


def test_fixed_ps_shape_that_never_fits_distributed_is_never_fits() -> None:
    # 3 PSs need at least 3 workers at once; one 2-GPU machine holds only 2
    job = make_job("job1", workers=4, workload=NU, ps_count=3)
    with pytest.raises(Exception, match="never fits"):
        place(job, make_cluster(1, gpus=2, cpus=16, mem=65536), "oasis", CHEAP)


def test_a_nearly_flat_utility_never_prunes_and_never_fails() -> None:
    # f(d + 1) one ulp below f(d): the utility lost is ~0, so E₀ cannot dominate
    sched = Schedule(end=3, log_cost=-50.0, levels=np.zeros(1, dtype=np.int64), partial=None)
    assert not _dominates(sched, 0, lambda d: 0.0 if d <= 4 else -1e-300)
    assert _dominates(sched, 0, lambda d: -float(d))  # loses a fraction 1 − e⁻¹ per slot


def test_shortlists_pick_what_the_whole_cluster_greedy_picks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(3)
    snap = make_cluster(12, gpus=4, cpus=16, mem=65536)
    reservations = []
    for k in range(40):
        start = int(rng.integers(0, 20))
        use = Resources(float(rng.integers(0, 3)), float(rng.integers(0, 5)), 4096.0)
        node = f"node{int(rng.integers(1, 13))}"
        reservations.append(Reservation(node, start, start + int(rng.integers(1, 9)), use, f"r{k}"))
    snap = snap.with_reservations(tuple(reservations))
    job = make_job("job1", workers=3, workload=NU * 3 * 8)
    tl = Reserved.of(snap, 0)
    ctx = _context(job, CHEAP, 1.0, tl, snap)
    _, _, used = segments(tl, 0, None, 64)
    monkeypatch.setattr(oasis_search, "SHORTLIST_FROM", 0)
    short = curves(ctx, used)
    monkeypatch.setattr(oasis_search, "SHORTLIST_FROM", 10**12)
    whole = curves(ctx, used)
    assert np.array_equal(short.picks, whole.picks)
    assert np.array_equal(short.levels, whole.levels)
    assert np.allclose(short.cost, whole.cost)


def test_the_fast_path_gives_the_search_answer_for_one_worker_jobs() -> None:
    snap = cluster(3).with_reservations(
        (
            Reservation("node1", 0, 4, Resources(2, 2, 4096), "x"),
            Reservation("node2", 2, 9, Resources(1, 8, 4096), "y"),
        )
    )
    job = make_job("job1", workers=1, workload=NU * 7)
    tl = Reserved.of(snap, 0)
    ctx = _context(job, CHEAP, 1.0, tl, snap)
    f = draw_utility(0, "job1").log_value
    fast = _fast_path(ctx, tl, f)
    assert fast is not None
    plans, ln_cost, _ = _searched(ctx, tl, f, CHEAP)
    assert plans == (fast[0],) and ln_cost == pytest.approx(fast[1])
    assert (fast[0].slot, fast[0].length) == (0, 7)
    # a time-insensitive job (flat utility) never takes it: the cheapest end wins
    assert (
        _fast_path(
            _context(make_job("job0", workload=NU * 7, workers=1), CHEAP, 1.0, tl, snap),
            tl,
            draw_utility(0, "job0").log_value,
        )
        is None
    )


@pytest.mark.parametrize("scale", [1.0, 30.0, 1e3, 1e5, 1e6])
def test_split_logaddexp_is_numpys_bit_for_bit(scale: float) -> None:
    rng = np.random.default_rng(int(scale))
    x = rng.normal(size=(6, 250)) * scale
    y = np.where(rng.random((6, 250)) < 0.3, x + rng.normal(size=(6, 250)) * 5, -x)
    x[0, :6] = [np.inf, -np.inf, -np.inf, 0.0, -np.inf, 7.0]
    y[0, :6] = [np.inf, -np.inf, np.inf, -np.inf, 3.0, np.inf]
    for a, b in ((x, y), (x[1:], y[1:]), (x[:, :10], y[:, :10])):  # with and without infs
        ours, theirs = logaddexp(a, b), np.logaddexp(a, b)  # (no warning for inf − inf)
        assert np.array_equal(ours.view(np.int64), theirs.view(np.int64))


def test_log_value_is_the_numpy_formula_bit_for_bit() -> None:
    from slurm_mlsched.placement.utility import log_expit

    for job in range(300):
        u = draw_utility(0, f"job{job}")
        for d in (0, 1, 2, 3, 7, 15, 16, 40, 10**3, 10**6, 2.5):
            old = float(np.log(u.gamma1) + log_expit(-u.gamma2 * (d - u.gamma3)))
            assert u.log_value(d) == old, (job, d)
