"""The scalable lower bound (sim/bounds.py): SRPT known answers, and never above what any
policy achieves on random replays."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import ClusterSnapshot, Decision, Form, Mode, Resources, SlotPlan
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.program.verify import check_decision
from slurm_mlsched.placement.yu_rr.list_schedule import fastest_run_slots
from slurm_mlsched.sim import SimJob, admit, sim_jobs, simulate
from slurm_mlsched.sim.bounds import (
    pooled_srpt,
    rank_bound,
    scalable_bound,
    shortest_runs,
    srpt_completions,
    srpt_total,
)
from tests.conftest import RESNET, make_cluster, make_job

DELTA = 600.0
NU = RESNET.nu_in(DELTA)


def test_srpt_known_answers() -> None:
    # job 0 (3 units) at 0, job 1 (1 unit) at 1: job 1 preempts, ends at 2; job 0 at 4
    assert srpt_total([0.0, 1.0], [3.0, 1.0]) == 1.0 + 4.0
    assert srpt_total([0.0, 0.0, 0.0], [1.0, 2.0, 3.0]) == 1.0 + 3.0 + 6.0
    assert srpt_total([0.0, 10.0], [1.0, 1.0]) == 2.0  # an idle gap
    assert srpt_total([], []) == 0.0


def test_the_pooled_bound_sees_a_busy_cluster() -> None:
    # eight 4-GPU jobs of 2 slots each on one 4-GPU node, all at once: they run one after
    # another, Σ = 2 + 4 + … + 16 = 72 slots; the shortest runs say only 16
    jobs = [make_job(f"j{i}", workers=4, workload=NU * 4 * 2) for i in range(8)]
    cluster = make_cluster(1, 4, 16)
    assert shortest_runs(jobs, cluster) == 16.0
    assert pooled_srpt(jobs, cluster) == 72.0
    assert scalable_bound(jobs, cluster) == (72.0, "pooled-resource SRPT")


def _capacity(cluster: ClusterSnapshot) -> np.ndarray:
    return np.array([m.capacity.as_tuple() for m in cluster.machines], dtype=np.float64)


def test_shortest_runs_know_the_machines() -> None:
    # 32 workers never run co-located on 4-GPU machines: the fewest slots are the
    # distributed run of 32 workers (or 3 co-located beside a PS on 8 CPUs... whichever is
    # faster), never the co-located run of 32 that ``shortest_slots`` assumes
    job = make_job("wide", workers=32, workload=NU * 32 * 2)
    cluster = make_cluster(16, 4, 16)
    colo = RESNET.nu_in(DELTA) * 4  # 4 workers (4 GPUs) beside a CPU-only PS
    dist = RESNET.nu_ex(DELTA) * 32
    want = math.ceil(job.workload / max(colo, dist) - 1e-9)
    assert job.shortest_slots(DELTA) == 2
    assert fastest_run_slots(job, _capacity(cluster), DELTA) == want > 2
    # on a cluster of two machines only 8 workers fit at once
    small = make_cluster(2, 4, 16)
    eight = math.ceil(job.workload / max(colo, RESNET.nu_ex(DELTA) * 8) - 1e-9)
    assert fastest_run_slots(job, _capacity(small), DELTA) == eight


@st.composite
def replays(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[SimJob]]:
    cluster = make_cluster(draw(st.integers(1, 3)), draw(st.sampled_from([2, 4])), 16)
    entries = []
    for i in range(draw(st.integers(1, 10))):
        w = draw(st.integers(1, 6))
        job = make_job(f"j{i}", workers=w, workload=NU * w * draw(st.floats(0.2, 6.0)))
        entries.append((job, draw(st.sampled_from([0.0, 600.0, 1800.0, 6000.0]))))
    return cluster, sim_jobs(entries, DELTA)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replays())
def test_no_policy_beats_the_bound(case: tuple[ClusterSnapshot, list[SimJob]]) -> None:
    cluster, jobs = case
    admitted, _ = admit(jobs, cluster)
    if not admitted:
        return
    bound, _ = scalable_bound([j.request for j in admitted], cluster)
    for policy in ("yu-rr", "qssf", "drf", "optimus", "tiresias", "srtf", "fifo-bf"):
        result = simulate(admitted, cluster, policy, PlacementParams(restart_s=0.0))
        if result.rejected:
            continue
        total = sum(d.completion_slots for d in result.decisions)
        assert total >= bound - 1e-6, (policy, total, bound)


def _unit_schedules(releases: list[int], sizes: list[int]) -> list[list[int]]:
    """The completion times of every preemptive schedule on one machine in unit steps
    (each step runs one released unfinished job, or idles when none is released)."""
    out: list[list[int]] = []

    def walk(t: int, left: list[int], ends: list[int]) -> None:
        if not any(left):
            out.append(list(ends))
            return
        ready = [i for i, x in enumerate(left) if x and releases[i] <= t]
        for i in ready or [-1]:
            if i >= 0:
                left[i] -= 1
                if not left[i]:
                    ends[i] = t + 1
            walk(t + 1, left, ends)
            if i >= 0:
                left[i] += 1
                ends[i] = 0

    walk(0, list(sizes), [0] * len(sizes))
    return out


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.integers(1, 3)), min_size=1, max_size=3),
)
def test_srpt_completes_the_kth_job_no_later_than_any_schedule(
    jobs: list[tuple[int, int]],
) -> None:
    # the lemma behind the rank bound (docs/formulation.md §15): for every k, SRPT's k-th
    # completion is the earliest any schedule has, checked against every unit schedule
    releases, sizes = [r for r, _ in jobs], [p for _, p in jobs]
    srpt = sorted(srpt_completions([float(r) for r in releases], [float(p) for p in sizes]))
    for ends in _unit_schedules(releases, sizes):
        assert all(s <= e + 1e-9 for s, e in zip(srpt, sorted(ends), strict=True))


def test_the_rank_bound_beats_both_sums() -> None:
    # one 4-GPU node: a 1-worker job of 4 slots and two 4-worker jobs of 1 slot, all at 0.
    # shortest runs 4 + 1 + 1 = 6; pooled GPUs 1 + 2 + 3 = 6; by rank the fewest-slot ends
    # (1, 1, 4) and SRPT's (1, 2, 3) give max per rank 1 + 2 + 4 = 7 (the optimum is 9).
    # The pooled LP with rate caps (sim/capped_bound.py) knows the narrow job uses a
    # quarter of the node at most: it at 1/4 for 4 slots (mean busy time 2, + d/2 = 2), the
    # wide two in the rest (0.75, 0.75, 0.5 of slots 0-2: 2.75, + 1/2 each): 7.75
    jobs = [
        make_job("narrow", workers=1, workload=NU * 4),
        make_job("b", workers=4, workload=NU * 4),
        make_job("c", workers=4, workload=NU * 4),
    ]
    cluster = make_cluster(1, 4, 16)
    assert shortest_runs(jobs, cluster) == 6.0
    assert pooled_srpt(jobs, cluster) == pytest.approx(6.0)
    assert rank_bound(jobs, cluster) == 7.0
    value, how = scalable_bound(jobs, cluster)
    assert value == pytest.approx(7.75, rel=1e-6) and how.startswith("pooled LP with rate caps")


def test_the_pooled_cost_takes_the_network_rate_when_nothing_co_locates() -> None:
    # a PS of 8 CPUs never fits beside a worker on an 8-CPU machine: the job only runs
    # distributed, at ν_ex, with at least one PS (8 CPUs) per 2 workers at most (w_d = 2)
    ps = Resources(0, 8, 1024)
    job = make_job("d", workers=2, workload=NU * 10, ps=ps)
    cluster = make_cluster(2, 1, 8)  # 2 machines of 1 GPU, 8 CPUs
    nu_ex = RESNET.nu_ex(DELTA)
    gpu = job.workload * 1.0 / nu_ex / 2  # GPU-slots of the pool of 2 GPUs
    cpu = job.workload * (1.0 + 8.0 / 2) / nu_ex / 16  # 1 CPU a worker + half a PS of 8
    assert pooled_srpt([job], cluster) == pytest.approx(max(gpu, cpu))
    assert shortest_runs([job], cluster) == math.ceil(job.workload / (2 * nu_ex))


def test_the_bound_allows_the_work_the_checks_accept() -> None:
    # V = 10 slots of a 1-worker run × (1 + 5·10⁻¹⁰): placement.verify accepts 10 slots
    # (work within 10⁻⁹), so the fewest slots must be 10, not ⌈V/rate − 10⁻⁹⌉ = 11
    job = make_job("edge", workers=1, workload=NU * 10 * (1 + 5e-10))
    cluster = make_cluster(1, 4, 16)
    plan = SlotPlan(0, Mode.COLOCATED, (("node1", 1),), (("node1", 1),), 10)
    decision = Decision(
        job_id="edge",
        policy="hand",
        form=Form.ELASTIC,
        seed=0,
        slots=(plan,),
        start_slot=0,
        end_slot=9,
        work_covered=NU * 10,
        arrival_slot=0,
    )
    assert check_decision(decision, job, cluster) == []
    assert math.ceil(job.workload / NU - 1e-9) == 11  # what the bound used to say
    assert shortest_runs([job], cluster) == 10.0
    assert scalable_bound([job], cluster)[0] <= decision.completion_slots
