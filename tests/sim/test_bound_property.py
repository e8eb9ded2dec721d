"""The lower bound against the offline optimum and every policy, on random small replays
(issue 28 item 2): bound ≤ the ``exact`` optimum ≤ every registered policy's avg JCT.

The registered ``exact`` policy decides each arrival alone (a per-arrival optimum, not the
optimum of the replay), so the optimum here is ``placement.program.solve_exact`` over all
the jobs at once, from the empty cluster: its objective is Σ_i (e_i − a_i + 1), and a
replay's avg JCT is (Δ·Σ_i (e_i − a_i + 1) + Σ_i (a_i·Δ − submit_i)) / n, the same jobs
with the same offsets: the order of totals is the order of avg JCTs, compared here in
seconds. Policies that reject a job (``oasis``'s admission control) are compared only when
they placed every job (their totals are over fewer jobs otherwise)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import Architecture, ClusterSnapshot, Machine, Resources
from slurm_mlsched.model.gpu_speed import job_speed, with_gpu_speed
from slurm_mlsched.placement import PlacementParams, policy_names
from slurm_mlsched.placement.program.integer_program import Outcome, solve_exact
from slurm_mlsched.sim import (
    SimJob,
    admit,
    compute_metrics,
    draw_utilities,
    lower_bound,
    sim_jobs,
    simulate,
)
from slurm_mlsched.sim.bounds import scalable_bound
from tests.conftest import RESNET, make_cluster, make_job

DELTA = 600.0
NU = RESNET.nu_in(DELTA)


@st.composite
def small_replays(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[SimJob]]:
    # one node size, or big and small nodes (the bound's GPU pools by node size)
    sizes = draw(st.sampled_from([[2], [4], [2, 2], [4, 4], [4, 1], [2, 1, 1]]))
    cluster = ClusterSnapshot(
        tuple(Machine(f"node{i + 1}", Resources(g, 16, 65536)) for i, g in enumerate(sizes))
    )
    entries = []
    for i in range(draw(st.integers(1, 4))):
        w = draw(st.integers(1, 4))
        slots = draw(st.floats(0.3, 2.5))
        submit = draw(st.sampled_from([0.0, 300.0, 600.0, 1500.0]))
        entries.append((make_job(f"j{i}", workers=w, workload=NU * w * slots), submit))
    return cluster, sim_jobs(entries, DELTA)


def avg_jct(jobs: list[SimJob], ends: dict[str, int]) -> float:
    return float(np.mean([(ends[j.job_id] + 1) * DELTA - j.submit_s for j in jobs]))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(small_replays())
def test_bound_below_the_optimum_below_every_policy(
    case: tuple[ClusterSnapshot, list[SimJob]],
) -> None:
    cluster, jobs = case
    admitted, _ = admit(jobs, cluster)
    if not admitted:
        return
    requests = [j.request for j in admitted]
    offsets = sum(j.request.arrival_slot * DELTA - j.submit_s for j in admitted)

    def as_jct(total_slots: float) -> float:
        return (total_slots * DELTA + offsets) / len(admitted)

    bound = lower_bound(admitted, cluster)  # the replay's: the LP and the scalable bounds
    scalable, _ = scalable_bound(requests, cluster)
    assert bound.value is not None and bound.value >= scalable - 1e-9
    exact = solve_exact(requests, cluster, PlacementParams(time_limit_s=30.0))
    assert exact.outcome in (Outcome.OPTIMAL, Outcome.FEASIBLE_TIME_LIMIT)
    found = avg_jct(admitted, {d.job_id: d.end_slot for d in exact.decisions})
    assert sum(d.completion_slots for d in exact.decisions) == pytest.approx(exact.objective)
    assert as_jct(bound.value) <= found + 1e-6, (bound, exact.objective)
    # proven optimal (these sizes solve in well under a second): the optimum itself; at the
    # time limit on a loaded machine, the solver's proven lower end of it
    best = found
    if exact.outcome is not Outcome.OPTIMAL:
        assert exact.best_bound is not None
        best = as_jct(exact.best_bound)
    utilities = draw_utilities((j.job_id for j in admitted), 0)
    for policy in policy_names():
        for restart in (0.0, 30.0):
            result = simulate(admitted, cluster, policy, PlacementParams(restart_s=restart))
            # compute_metrics itself fails (BelowBoundError) on a total below the bound
            m = compute_metrics(result, utilities, bound.value)
            if result.rejected:
                continue
            assert m.avg_jct_s is not None and m.avg_jct_s >= best - 1e-6, (policy, restart)


@st.composite
def mixed_small_replays(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[SimJob]]:
    """Both architectures in one queue (issue 31): an allreduce job has no PS."""
    cluster = make_cluster(draw(st.integers(1, 2)), draw(st.sampled_from([2, 4])), 16)
    return cluster, _mixed_jobs(draw)


def _mixed_jobs(draw: st.DrawFn, types: tuple[str, ...] = ()) -> list[SimJob]:
    """1-4 small ps or allreduce jobs; with ``types``, each names one of them, all or none."""
    entries = []
    for i in range(draw(st.integers(1, 4))):
        w = draw(st.integers(1, 4))
        slots = draw(st.floats(0.3, 2.5))
        submit = draw(st.sampled_from([0.0, 300.0, 600.0, 1500.0]))
        job = make_job(f"j{i}", workers=w, workload=NU * w * slots)
        if types:
            names = draw(st.sampled_from([None, *((t,) for t in types), types]))
            job = replace(job, gpu_types=None if names is None else frozenset(names))
        if draw(st.booleans()):
            job = replace(job, ps=Resources(), ps_count=0, arch=Architecture.ALLREDUCE)
        entries.append((job, submit))
    return sim_jobs(entries, DELTA)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_small_replays())
def test_bound_below_every_policy_with_allreduce_jobs(
    case: tuple[ClusterSnapshot, list[SimJob]],
) -> None:
    """The bound reads an allreduce job at what no layout beats (Δ/τ a worker, the best
    ring rate of its width); ``solve_exact`` reads it at the floors, so its schedule is
    feasible and the true optimum lies between the two."""
    cluster, jobs = case
    admitted, _ = admit(jobs, cluster)
    if not admitted:
        return
    requests = [j.request for j in admitted]
    bound = lower_bound(admitted, cluster)
    scalable, _ = scalable_bound(requests, cluster)
    assert bound.value is not None and bound.value >= scalable - 1e-9
    exact = solve_exact(requests, cluster, PlacementParams(time_limit_s=30.0))
    assert exact.outcome in (Outcome.OPTIMAL, Outcome.FEASIBLE_TIME_LIMIT)
    assert bound.value <= sum(d.completion_slots for d in exact.decisions) + 1e-6
    utilities = draw_utilities((j.job_id for j in admitted), 0)
    for policy in policy_names():
        for restart in (0.0, 30.0):
            result = simulate(admitted, cluster, policy, PlacementParams(restart_s=restart))
            compute_metrics(result, utilities, bound.value)  # BelowBoundError if below
            if result.rejected:
                continue
            total = sum(d.completion_slots for d in result.decisions)
            assert total >= bound.value - 1e-6, (policy, restart)


TYPES = ("a100", "t4")


@st.composite
def speed_replays(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[SimJob]]:
    """Typed machines, a random speed table (docs/formulation.md §17) and jobs that name a
    type, both or none: every job runs at the slowest type it may use (``admit``)."""
    gpus = draw(st.sampled_from([2, 4]))
    kinds = [draw(st.sampled_from((*TYPES, None))) for _ in range(draw(st.integers(1, 2)))]
    table = tuple((t, draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.0]))) for t in TYPES)
    machines = tuple(
        Machine(f"node{i + 1}", Resources(gpus, 16, 65536), kind) for i, kind in enumerate(kinds)
    )
    cluster = ClusterSnapshot(with_gpu_speed(machines, table))
    return cluster, _mixed_jobs(draw, TYPES)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(speed_replays())
def test_bound_below_every_policy_with_gpu_speeds(
    case: tuple[ClusterSnapshot, list[SimJob]],
) -> None:
    """R_i and c_i^r read a job at the rate ``admit`` gave it, the rate every policy plans
    and the simulator runs it at, so the proof of §15 holds unchanged."""
    cluster, jobs = case
    admitted, _ = admit(jobs, cluster)
    if not admitted:
        return
    for j in admitted:
        assert j.request.gpu_speed == job_speed(j.request, cluster)
    requests = [j.request for j in admitted]
    bound = lower_bound(admitted, cluster)
    scalable, _ = scalable_bound(requests, cluster)
    assert bound.value is not None and bound.value >= scalable - 1e-9
    exact = solve_exact(requests, cluster, PlacementParams(time_limit_s=30.0))
    assert exact.outcome in (Outcome.OPTIMAL, Outcome.FEASIBLE_TIME_LIMIT)
    optimum = sum(d.completion_slots for d in exact.decisions)
    assert bound.value <= optimum + 1e-6
    # with ps jobs alone the optimum is the true one (proven optimal at these sizes), below
    # every policy; an allreduce job's linearized optimum is not (§18.2)
    ps_only = exact.outcome is Outcome.OPTIMAL and not any(r.is_allreduce for r in requests)
    utilities = draw_utilities((j.job_id for j in admitted), 0)
    for policy in policy_names():
        result = simulate(admitted, cluster, policy, PlacementParams(restart_s=30.0))
        compute_metrics(result, utilities, bound.value)  # BelowBoundError if below
        if result.rejected:
            continue
        total = sum(d.completion_slots for d in result.decisions)
        assert total >= bound.value - 1e-6, policy
        assert not ps_only or total >= optimum - 1e-6, policy
