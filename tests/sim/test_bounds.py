"""The scalable lower bound (sim/bounds.py): SRPT known answers, and never above what any
policy achieves on random replays."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import ClusterSnapshot
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.list_schedule import fastest_run_slots
from slurm_mlsched.sim import SimJob, admit, sim_jobs, simulate
from slurm_mlsched.sim.bounds import (
    pooled_srpt,
    scalable_bound,
    shortest_runs,
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
    for policy in ("yu-rr", "qssf", "drf", "optimus", "tiresias", "fifo-bf"):
        result = simulate(admitted, cluster, policy, PlacementParams(restart_s=0.0))
        if result.rejected:
            continue
        total = sum(d.completion_slots for d in result.decisions)
        assert total >= bound - 1e-6, (policy, total, bound)
