"""Allreduce and ps jobs in one queue, every policy (issue 31): hypothesis properties of
whole replays and of the bound.

For random small clusters and mixed job lists: no machine is over capacity at any slot,
every placed job covers its work at its layouts' real rates (the ring formula for an
allreduce job, ``placement.verify``), no allreduce decision holds a PS task, and the lower
bound stays at or below every policy (``compute_metrics`` fails on a total below it, and
the test checks it again)."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import (
    Architecture,
    ClusterSnapshot,
    Form,
    JobProfile,
    JobRequest,
    Machine,
    Resources,
)
from slurm_mlsched.model.speed import worker_rates
from slurm_mlsched.placement import PlacementParams, policy_names
from slurm_mlsched.placement.params import Binding
from slurm_mlsched.sim import (
    SimJob,
    admit,
    compute_metrics,
    draw_utilities,
    lower_bound,
    sim_jobs,
    simulate,
)
from slurm_mlsched.sim.check import capacity_violations, decision_problems

DELTA = 600.0
PROFILES = [
    JobProfile(0.449, 102.2, 91.875, 306.5, name="resnet-50"),
    JobProfile(0.815, 42.1, 145.875, 1082.125, name="inception-bn"),
    JobProfile(0.567, 6.0, 92.125, 65.625, name="dssm"),
]


def job(i: int, arch: Architecture, workers: int, slots: float, profile: JobProfile) -> JobRequest:
    allreduce = arch is Architecture.ALLREDUCE
    probe = JobRequest(
        f"j{i}",
        0,
        1.0,
        workers,
        Resources(1, 2, 8192),
        Resources() if allreduce else Resources(0, 1, 4096),
        profile,
        ps_count=0 if allreduce else None,
        arch=arch,
    )
    nu_in, _ = worker_rates(probe, DELTA)
    return JobRequest(
        probe.job_id,
        0,
        nu_in * workers * slots,
        workers,
        probe.worker,
        probe.ps,
        profile,
        ps_count=probe.ps_count,
        arch=arch,
    )


@st.composite
def mixed_replays(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[SimJob]]:
    n = draw(st.integers(1, 3))
    machines = tuple(
        Machine(f"node{h + 1}", Resources(draw(st.sampled_from([2, 4])), 8, 65536))
        for h in range(n)
    )
    cluster = ClusterSnapshot(machines, slot_seconds=DELTA)
    entries = []
    for i in range(draw(st.integers(1, 5))):
        arch = draw(st.sampled_from(list(Architecture)))
        w = draw(st.integers(1, 8))
        profile = draw(st.sampled_from(PROFILES))
        submit = draw(st.sampled_from([0.0, 300.0, 600.0, 1500.0]))
        entries.append((job(i, arch, w, draw(st.floats(0.3, 3.0)), profile), submit))
    return cluster, sim_jobs(entries, DELTA)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_replays(), st.sampled_from(["early", "late"]))
def test_every_policy_keeps_capacity_work_and_no_ps_for_allreduce(
    case: tuple[ClusterSnapshot, list[SimJob]], binding: str
) -> None:
    cluster, jobs = case
    admitted, _ = admit(jobs, cluster)
    if not admitted:
        return
    bound = lower_bound(admitted, cluster)
    assert bound.value is not None
    utilities = draw_utilities((j.job_id for j in admitted), 0)
    kinds = {j.job_id: j.request.arch for j in admitted}
    base = PlacementParams(binding=Binding(binding), restart_s=30.0)
    runs = [(p, base) for p in policy_names()]
    runs += [
        ("yu-rr", replace(base, preempt=True)),  # checkpoint-restart preemption
        ("yu-rr", replace(base, form=Form.ELASTIC)),  # the elastic form (early binding)
        ("yu-rr", replace(base, allreduce_pack=False)),  # each policy's own layout
    ]
    for policy, params in runs:
        result = simulate(admitted, cluster, policy, params)
        assert capacity_violations(result) == [], policy
        assert decision_problems(result) == [], policy
        for d in result.decisions:
            if kinds[d.job_id] is Architecture.ALLREDUCE:
                assert all(p.total_ps == 0 for p in d.slots), (policy, d.job_id)
        m = compute_metrics(result, utilities, bound.value)  # BelowBoundError if below
        if not result.rejected:
            total = sum(d.completion_slots for d in result.decisions)
            assert total >= bound.value - 1e-6, (policy, total, bound.value)
        assert m.placed == len(result.decisions)
