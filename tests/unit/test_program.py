"""The integer program of MODEL.md §3: known optima, the LP bound, the horizon, errors.

Profile used throughout (Δ = 10 s): θ_in = 0.5 + 2·25/100 = 1 s and θ_ex = 0.5 + 2·25/25
= 2.5 s, so one worker does ν_in = 10 mini-batches per slot co-located and ν_ex = 4
distributed; a PS serves 4 workers (ρ = 1/4). Every known answer below is exact in floats.
"""

from __future__ import annotations

import math
import random

import pytest

from slurm_mlsched.errors import InfeasibleError, InputError
from slurm_mlsched.model import (
    ClusterSnapshot,
    Decision,
    Form,
    JobProfile,
    JobRequest,
    Machine,
    Mode,
    Reservation,
    Resources,
    SlotPlan,
)
from slurm_mlsched.placement import place
from slurm_mlsched.placement.params import PlacementParams
from slurm_mlsched.placement.program.integer_program import (
    Outcome,
    build_program,
    default_horizon,
    lp_bound,
    map_outcome,
    solve_exact,
    solve_program,
)
from slurm_mlsched.placement.registry import get_policy

PROFILE = JobProfile(step_time_s=0.5, model_size_mb=25.0, bw_ex_mbps=25.0, bw_in_mbps=100.0)
DELTA = 10.0
NU_IN, NU_EX = 10.0, 4.0
PARAMS = PlacementParams(time_limit_s=30.0)


def job(
    job_id: str, workers: int, workload: float, arrival: int = 0, ps_count: int | None = None
) -> JobRequest:
    return JobRequest(
        job_id,
        arrival,
        workload,
        workers,
        Resources(gpu=1, cpu=2, mem=1024),
        Resources(gpu=0, cpu=2, mem=1024),
        PROFILE,
        ps_count=ps_count,
    )


def cluster(
    n: int, gpus: float = 4, reservations: tuple[Reservation, ...] = (), now: int = 0
) -> ClusterSnapshot:
    machines = tuple(Machine(f"n{i + 1}", Resources(gpus, 32, 65536)) for i in range(n))
    return ClusterSnapshot(machines, reservations, slot_seconds=DELTA, now_slot=now)


def expand(decision: Decision) -> list[SlotPlan]:
    """One plan per running slot."""
    return [
        SlotPlan(p.slot + k, p.mode, p.workers, p.ps)
        for p in decision.slots
        for k in range(p.length)
    ]


def assert_feasible(
    jobs: list[JobRequest], snapshot: ClusterSnapshot, decisions: tuple[Decision, ...]
) -> None:
    """Check the schedules independently of the solver: capacity, work, PS rules."""
    reserved: dict[tuple[str, int], Resources] = {}
    for rsv in snapshot.reservations:
        for t in range(rsv.start_slot, rsv.end_slot):
            reserved[rsv.machine, t] = reserved.get((rsv.machine, t), Resources()) + rsv.usage
    used: dict[tuple[str, int], Resources] = {}
    for jb, dec in zip(jobs, decisions, strict=True):
        assert dec.job_id == jb.job_id
        assert dec.start_slot >= max(jb.arrival_slot, snapshot.now_slot)
        work = 0.0
        for plan in expand(dec):
            assert 1 <= plan.total_workers <= jb.max_workers
            if plan.mode is Mode.COLOCATED:
                assert len(plan.workers) == 1 and plan.ps == ((plan.workers[0][0], 1),)
                work += NU_IN * plan.total_workers
            else:
                s, w = plan.total_ps, plan.total_workers
                assert s <= w and s >= w * PROFILE.ps_per_worker - 1e-9
                if jb.ps_count is not None:
                    assert s == jb.ps_count
                work += NU_EX * w
            for name, amount in plan.usage(jb).items():
                used[name, plan.slot] = used.get((name, plan.slot), Resources()) + amount
        assert work >= jb.workload - 1e-6
        assert work == pytest.approx(dec.work_covered)
    capacity = {m.name: m.capacity.as_tuple() for m in snapshot.machines}
    for (name, t), res in used.items():
        held = reserved.get((name, t), Resources()).as_tuple()
        room = Resources(*(max(0.0, c - r) for c, r in zip(capacity[name], held, strict=True)))
        assert res.fits_in(room, eps=1e-6), (name, t, res, room)


def test_one_job_colocated_in_three_slots() -> None:
    # 2 workers × ν_in 10 = 20 a slot; V = 60 → exactly 3 slots on the 4-GPU machine.
    jobs = [job("a", workers=2, workload=60)]
    result = solve_exact(jobs, cluster(1), PARAMS)
    (dec,) = result.decisions
    assert result.outcome is Outcome.OPTIMAL and not result.time_limit_hit
    assert result.objective == pytest.approx(3.0)
    assert result.best_bound == pytest.approx(3.0)
    assert dec.slots == (SlotPlan(0, Mode.COLOCATED, (("n1", 2),), (("n1", 1),), length=3),)
    assert (dec.start_slot, dec.end_slot, dec.completion_slots) == (0, 2, 3)
    assert dec.work_covered == pytest.approx(60.0)
    assert (dec.policy, dec.form, dec.solver) == ("exact", Form.ELASTIC, "highs-mip")
    assert dec.lp_value == pytest.approx(3.0)
    assert "pulp" in dec.solver_version and "highspy" in dec.solver_version
    assert_feasible(jobs, cluster(1), result.decisions)


def test_job_wider_than_any_machine_goes_distributed() -> None:
    # 4 machines × 2 GPUs, N = 8, V = 64: co-located at most 2 workers (20 a slot → 4
    # slots); distributed 8 workers × ν_ex 4 = 32 a slot → 2 slots, with ⌈8/4⌉ = 2 PSs.
    jobs = [job("wide", workers=8, workload=64)]
    snap = cluster(4, gpus=2)
    result = solve_exact(jobs, snap, PARAMS)
    (dec,) = result.decisions
    assert result.objective == pytest.approx(2.0)
    plans = expand(dec)
    assert [p.slot for p in plans] == [0, 1]
    assert all(p.mode is Mode.DISTRIBUTED for p in plans)
    assert all(p.total_workers == 8 and p.total_ps == jobs[0].ps_needed(8) == 2 for p in plans)
    assert_feasible(jobs, snap, result.decisions)


def test_fixed_ps_count_is_respected() -> None:
    jobs = [job("wide", workers=8, workload=64, ps_count=3)]
    snap = cluster(4, gpus=2)
    result = solve_exact(jobs, snap, PARAMS)
    assert result.objective == pytest.approx(2.0)
    assert all(p.total_ps == 3 for p in expand(result.decisions[0]))
    assert_feasible(jobs, snap, result.decisions)


def test_one_fixed_ps_caps_distributed_workers() -> None:
    # One PS serves at most 4 workers: distributed 16 a slot, co-located 2 workers 20 a
    # slot; V = 80 takes 4 slots either way (or mixed), never fewer.
    jobs = [job("one-ps", workers=8, workload=80, ps_count=1)]
    snap = cluster(4, gpus=2)
    result = solve_exact(jobs, snap, PARAMS)
    assert result.objective == pytest.approx(4.0)
    for plan in expand(result.decisions[0]):
        if plan.mode is Mode.DISTRIBUTED:
            assert plan.total_ps == 1 and plan.total_workers <= 4
    assert_feasible(jobs, snap, result.decisions)


def test_two_jobs_competing_for_one_machine() -> None:
    # A: 4 workers × 10 = 40 a slot, V = 80 → 2 slots; B: V = 40 → 1 slot. B first:
    # 1 + 3 = 4; A first: 2 + 3 = 5; sharing the 4 GPUs cannot beat 4.
    jobs = [job("A", workers=4, workload=80), job("B", workers=4, workload=40)]
    result = solve_exact(jobs, cluster(1), PARAMS)
    a, b = result.decisions
    assert result.objective == pytest.approx(4.0)
    assert (b.start_slot, b.end_slot) == (0, 0)
    assert (a.start_slot, a.end_slot) == (1, 2)
    assert a.completion_slots + b.completion_slots == 4
    assert_feasible(jobs, cluster(1), result.decisions)


def test_late_arrival_waits_for_a_reservation() -> None:
    # The machine is full in slots [2, 4); the job arrives in slot 2 and needs 3 slots.
    busy = (Reservation("n1", 2, 4, Resources(4, 0, 0), "other"),)
    snap = cluster(1, reservations=busy, now=2)
    jobs = [job("late", workers=2, workload=60, arrival=2)]
    result = solve_exact(jobs, snap, PARAMS)
    (dec,) = result.decisions
    assert (dec.start_slot, dec.end_slot, dec.arrival_slot) == (4, 6, 2)
    assert dec.completion_slots == 5 == result.objective
    assert_feasible(jobs, snap, result.decisions)


def test_job_that_arrived_before_now_counts_its_wait() -> None:
    snap = cluster(1, now=3)
    jobs = [job("early", workers=2, workload=60, arrival=0)]
    result = solve_exact(jobs, snap, PARAMS)
    (dec,) = result.decisions
    assert (dec.start_slot, dec.end_slot) == (3, 5)
    assert dec.completion_slots == 6 == result.objective
    assert lp_bound(jobs, snap) == pytest.approx(3.0 + 60 / (2 * NU_IN))


def test_too_short_horizon_is_infeasible() -> None:
    jobs = [job("a", workers=2, workload=60)]
    with pytest.raises(InfeasibleError) as info:
        solve_exact(jobs, cluster(1), PARAMS, horizon=2)
    assert "horizon" in info.value.hint
    # Even fractionally, 2 workers do at most 20 a slot: one slot cannot hold 60.
    with pytest.raises(InfeasibleError):
        lp_bound(jobs, cluster(1), horizon=1)


def test_lp_bound_of_known_instances() -> None:
    # One job alone: the LP needs Σ z ≥ V / (N ν_in) = 3 (and 3 is reachable).
    assert lp_bound([job("a", 2, 60)], cluster(1)) == pytest.approx(3.0)
    two = [job("A", workers=4, workload=80), job("B", workers=4, workload=40)]
    assert lp_bound(two, cluster(1)) <= 4.0 + 1e-6


def _random_instance(rng: random.Random) -> tuple[list[JobRequest], ClusterSnapshot]:
    n_machines = rng.randint(1, 2)
    jobs = [
        job(
            f"j{k}",
            workers=rng.randint(1, 5),
            workload=rng.choice([10, 20, 30, 50, 80]),
            arrival=rng.randint(0, 2),
            ps_count=rng.choice([None, None, 1]),
        )
        for k in range(rng.randint(1, 3))
    ]
    reservations = tuple(
        Reservation(f"n{rng.randint(1, n_machines)}", s, s + rng.randint(1, 3), Resources(2, 4, 0))
        for s in rng.sample(range(4), rng.randint(0, 2))
    )
    return jobs, cluster(n_machines, gpus=rng.choice([2, 4]), reservations=reservations)


@pytest.mark.parametrize("seed", range(12))
def test_lp_bound_never_exceeds_the_exact_optimum(seed: int) -> None:
    jobs, snap = _random_instance(random.Random(seed))
    result = solve_exact(jobs, snap, PARAMS)
    bound = lp_bound(jobs, snap)
    assert result.outcome is Outcome.OPTIMAL
    assert bound <= result.objective + 1e-6
    assert bound >= sum(j.workload / (j.max_workers * NU_IN) for j in jobs) - 1e-6
    assert result.objective == pytest.approx(sum(d.completion_slots for d in result.decisions))
    assert_feasible(jobs, snap, result.decisions)


@pytest.mark.parametrize("seed", range(6))
def test_default_horizon_holds_the_unrestricted_optimum(seed: int) -> None:
    jobs, snap = _random_instance(random.Random(100 + seed))
    horizon = default_horizon(jobs, snap)
    assert max(d.end_slot for d in solve_exact(jobs, snap, PARAMS).decisions) < horizon
    longer = solve_exact(jobs, snap, PARAMS, horizon=horizon + 6)
    assert solve_exact(jobs, snap, PARAMS).objective == pytest.approx(longer.objective)
    # The LP value falls as the horizon grows (capacity spreads over more slots), so the
    # tightest valid bound is the one at the smallest horizon that holds the optimum.
    bound = lp_bound(jobs, snap)
    assert lp_bound(jobs, snap, horizon=horizon + 6) <= bound + 1e-6 <= longer.objective + 2e-6


def test_default_horizon_of_one_job_is_its_fastest_finish_plus_one() -> None:
    assert default_horizon([job("a", 2, 60)], cluster(1)) == 4
    busy = (Reservation("n1", 0, 5, Resources(3, 0, 0), "other"),)
    # 1 GPU free until slot 5: 1 worker takes 6 slots (finish 6); waiting until slot 5
    # and running 2 workers finishes at 8. The earliest finish is 6.
    assert default_horizon([job("a", 2, 60)], cluster(1, reservations=busy)) == 7


def test_six_jobs_four_machines_twelve_slots_solve_fast() -> None:
    rng = random.Random(1)
    jobs = [
        job(f"j{k}", rng.randint(1, 4), rng.choice([20, 40, 60, 80]), arrival=rng.randint(0, 3))
        for k in range(6)
    ]
    snap = cluster(4)
    program = build_program(jobs, snap, horizon=12, relax=False)
    result = solve_program(program, time_limit_s=30.0, mip_rel_gap=0.0)
    assert result.outcome is Outcome.OPTIMAL
    assert result.wall_ms < 5000.0  # about 0.15 s on a laptop
    assert result.objective == pytest.approx(23.0)


def test_build_program_is_pure_and_sized_as_the_formulation() -> None:
    jobs = [job("a", 2, 60), job("b", 3, 40, arrival=2)]
    program = build_program(jobs, cluster(2), horizon=6, relax=True)
    slots = 6 + 4  # job a: slots 0..5, job b: slots 2..5
    n_vars = len(program.problem.variables())
    # per job-slot: u, wL, sL, wD, sD per machine, v, z; the relaxation adds the
    # completion cut's running share of work done (one per job-slot)
    assert n_vars == slots * (5 * 2 + 2) + slots
    assert all(v.cat == "Continuous" for v in program.problem.variables())
    assert program.problem.status == 0  # not solved
    assert set(program.job_slots(1)) == {2, 3, 4, 5}
    integer = build_program(jobs, cluster(2), horizon=6, relax=False)
    assert all(v.cat == "Integer" for v in integer.problem.variables())
    assert len(integer.problem.variables()) == slots * (5 * 2 + 2)


def test_registered_exact_policy_places_one_job() -> None:
    jb = job("a", workers=2, workload=60)
    dec = place(jb, cluster(1), "exact", PARAMS)
    assert get_policy("exact") is not None
    assert (dec.policy, dec.start_slot, dec.end_slot, dec.seed) == ("exact", 0, 2, PARAMS.seed)
    assert dec.mode is Mode.COLOCATED


@pytest.mark.parametrize(
    ("status", "sol_status", "limit", "expected"),
    [
        (1, 1, False, Outcome.OPTIMAL),
        (1, 2, True, Outcome.FEASIBLE_TIME_LIMIT),
        (-1, -1, False, Outcome.INFEASIBLE),
        (0, 0, True, Outcome.NO_SOLUTION_TIME_LIMIT),
        (0, 0, False, Outcome.ERROR),
        (-2, -2, False, Outcome.ERROR),
    ],
)
def test_map_outcome(status: int, sol_status: int, limit: bool, expected: Outcome) -> None:
    assert map_outcome(status, sol_status, limit) is expected


def test_bad_inputs_are_input_errors() -> None:
    jb = job("a", 2, 60)
    with pytest.raises(InputError):
        build_program([jb, jb], cluster(1), horizon=5, relax=False)
    with pytest.raises(InputError):
        build_program([jb], cluster(1, now=5), horizon=5, relax=False)
    stray = (Reservation("nowhere", 0, 2, Resources(1, 0, 0)),)
    with pytest.raises(InputError):
        build_program([jb], cluster(1, reservations=stray), horizon=5, relax=False)
    with pytest.raises(InputError):
        solve_program(build_program([jb], cluster(1), 5, relax=False), 0.0, 0.0)


def test_completion_slots_count_from_arrival() -> None:
    dec = Decision("x", "exact", Form.ELASTIC, 0, (), 3, 5, 1.0, arrival_slot=2)
    assert dec.completion_slots == 4
    assert math.isclose(Decision("y", "p", Form.ELASTIC, 0, (), 0, 2, 1.0).completion_slots, 3)


def test_the_relaxation_with_cuts_is_still_a_lower_bound_and_not_weaker() -> None:
    # the completion cut and the shortest-run row are valid for the integer program: the
    # LP stays at or below the exact optimum, and at or above Σ shortest runs
    jobs = [job("a", 2, 60), job("b", 3, 40, arrival=1), job("c", 1, 30, arrival=1)]
    snap = cluster(1)
    bound = lp_bound(jobs, snap, horizon=30)
    exact = solve_exact(jobs, snap, PARAMS, horizon=30)
    assert bound <= exact.objective + 1e-6
    assert bound >= sum(j.shortest_slots(DELTA) for j in jobs) - 1e-6
