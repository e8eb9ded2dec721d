"""Odd shapes (CPU-only or GPU workers, PSs up to a node's CPUs, fixed or automatic PS
counts, small clusters of unequal nodes): every policy either places every job it admits or
rejects it with a reason, and never stalls or crashes. The re-allocating policies once
stalled on such shapes (docs/formulation.md §12); these draws found three of the four."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import ClusterSnapshot, Machine, Resources
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.registry import policy_names
from slurm_mlsched.services.replay import ReplayOptions
from slurm_mlsched.services.replay.run import replay_params
from slurm_mlsched.sim import SimJob, admit, sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_job

PARAMS = PlacementParams(restart_s=0.0)
#: The replay's own defaults (``mlsub replay``'s parameters, whatever they are now):
#: checkpoint-restart preemption with resize, regather and moves to a smaller node.
PREEMPTING = replay_params(ReplayOptions(trace=Path("unread.csv"), policies=("yu-rr",)), 0)


@st.composite
def odd_shapes(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[SimJob]]:
    """Small clusters and jobs of CPU-only or GPU workers, PSs up to a node's CPUs and
    fixed or automatic PS counts: the shapes where a layout rule can fail to exist."""
    cpus = draw(st.sampled_from([2, 4, 8]))
    machines = tuple(
        Machine(f"m{i}", Resources(draw(st.sampled_from([0, 1, 2])), cpus, 16384))
        for i in range(draw(st.integers(1, 4)))
    )
    entries = []
    for i in range(draw(st.integers(1, 4))):
        w = draw(st.integers(1, 4))
        job = make_job(
            f"j{i}",
            workers=w,
            workload=RESNET.nu_in(60.0) * w * draw(st.floats(0.5, 4.0)),
            worker=Resources(draw(st.sampled_from([0, 1])), draw(st.integers(1, 2)), 1024),
            ps=Resources(0, draw(st.integers(1, cpus)), 1024),
            ps_count=draw(st.sampled_from([None, 1, 2])),
        )
        entries.append((job, 60.0 * draw(st.integers(0, 3))))
    return ClusterSnapshot(machines, slot_seconds=60.0), sim_jobs(entries, 60.0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_shapes())
def test_every_admitted_job_ends_under_every_reallocating_policy(
    case: tuple[ClusterSnapshot, list[SimJob]],
) -> None:
    cluster, jobs = case
    admitted, _ = admit(jobs, cluster)
    for policy in ("optimus", "tiresias", "drf", "srtf"):
        result = simulate(admitted, cluster, policy, PARAMS)  # a stall raises
        assert all(o.decision is not None for o in result.outcomes), policy


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_shapes(), st.booleans())
def test_every_policy_places_or_rejects_every_admitted_job(
    case: tuple[ClusterSnapshot, list[SimJob]], preempting: bool
) -> None:
    cluster, jobs = case
    admitted, _ = admit(jobs, cluster)
    params = PREEMPTING if preempting else PARAMS
    for policy in policy_names():
        if policy == "exact":
            continue  # an integer program per arrival: the slow reference, tested apart
        result = simulate(admitted, cluster, policy, params)  # a stall or a crash raises
        assert len(result.outcomes) == len(admitted), policy
        assert not decision_problems(result), policy
        assert not capacity_violations(result), policy
