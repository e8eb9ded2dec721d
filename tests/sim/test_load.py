"""The offered load of a replay's jobs and arrivals rescaled to a target load (sim/load.py)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from slurm_mlsched.model import Resources
from slurm_mlsched.sim.load import MIN_SPAN_S, at_load, job_work, offered_load
from tests.conftest import RESNET, make_cluster, make_job


def test_job_work_is_workload_times_share_times_fastest_step() -> None:
    job = make_job(workload=1000.0, worker=Resources(2, 1, 8192))
    gpu, cpu, mem = job_work(job)
    assert gpu == pytest.approx(1000.0 * 2 * RESNET.theta_in)
    assert cpu == pytest.approx(1000.0 * 1 * RESNET.theta_in)
    assert mem == pytest.approx(1000.0 * 8192 * RESNET.theta_in)


def test_offered_load_known_answer() -> None:
    # two jobs of 1 GPU·hour of least work each on 2 GPUs, submitted an hour apart:
    # 2 GPU·h ÷ (2 GPUs × 1 h) = 1.0 (GPU is the bottleneck: CPUs are 8 per node)
    steps = 3600.0 / RESNET.theta_in
    jobs = [make_job("a", workload=steps), make_job("b", workload=steps)]
    cluster = make_cluster(1, gpus=2, cpus=8)
    entries = [(jobs[0], 0.0), (jobs[1], 3600.0)]
    assert offered_load(entries, cluster) == pytest.approx(1.0)
    # the busiest resource decides: the same jobs with 8 CPUs a worker on 8 CPUs
    cpu_heavy = [
        (make_job("a", workload=steps, worker=Resources(1, 8, 1)), 0.0),
        (make_job("b", workload=steps, worker=Resources(1, 8, 1)), 3600.0),
    ]
    assert offered_load(cpu_heavy, cluster) == pytest.approx(2.0)


def test_offered_load_needs_a_span_and_jobs() -> None:
    cluster = make_cluster(1)
    with pytest.raises(ValueError, match="same time"):
        offered_load([(make_job("a"), 5.0), (make_job("b"), 5.0)], cluster)
    # a span of 1.1e-308 s (hypothesis found it) made the load overflow to inf, then nan
    with pytest.raises(ValueError, match="within a microsecond"):
        at_load([(make_job("a"), 0.0), (make_job("b"), 1.1e-308)], cluster, 1.0)
    with pytest.raises(ValueError, match="no jobs"):
        offered_load([], cluster)
    with pytest.raises(ValueError, match="between"):
        at_load([(make_job("a"), 0.0), (make_job("b"), 60.0)], cluster, 0.0)


@given(
    submits=st.lists(st.floats(0, 1e6), min_size=2, max_size=20, unique=True),
    target=st.floats(0.05, 10.0),
)
def test_at_load_reaches_the_target_and_keeps_jobs_and_order(
    submits: list[float], target: float
) -> None:
    assume(max(submits) - min(submits) >= MIN_SPAN_S)  # below it: the error of the next test
    cluster = make_cluster(2, gpus=4, cpus=16)
    entries = [(make_job(f"j{i}", workload=500.0 + 37 * i), s) for i, s in enumerate(submits)]
    out = at_load(entries, cluster, target)
    assert out.native_load == pytest.approx(offered_load(entries, cluster))
    assert offered_load(out.entries, cluster) == pytest.approx(target, rel=1e-6)
    assert [j for j, _ in out.entries] == [j for j, _ in entries]  # same jobs, same sizes
    first = min(submits)
    assert min(s for _, s in out.entries) == pytest.approx(first)
    order = sorted(range(len(submits)), key=lambda i: submits[i])
    new = [s for _, s in out.entries]
    assert all(new[a] <= new[b] for a, b in itertools.pairwise(order))
