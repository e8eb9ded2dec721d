"""The joint program over the head of the queue (placement/yu_rr/joint.py; queue_program=joint):
its LP is always feasible, and replays under it keep the invariants."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import ClusterSnapshot, Machine, Reservation, Resources
from slurm_mlsched.model.decision import least_total_completion_reason
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.yu_rr.joint import _blocks, joint_start
from slurm_mlsched.placement.yu_rr.late_binding import PendingJob
from slurm_mlsched.sim import admit, sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_cluster, make_job

DELTA = 60.0


def test_the_cluster_empty_slot_is_always_a_block_boundary() -> None:
    cuts = tuple(range(110, 200, 5))  # more running-job ends than the budget keeps
    starts, stops = _blocks(100, 10_000, cuts, 12, free_after=195)
    assert 195 in set(starts.tolist())
    assert stops[-1] == 10_000 and len(starts) <= 12


def test_the_joint_lp_is_feasible_when_many_running_jobs_end_apart() -> None:
    # Mustang week 2 at 60 s found it: more reservation ends than the block budget keeps,
    # so the last block began while the cluster was busy; its capacity (the minimum over
    # the block) had room for no worker on any node, and the LP was infeasible. Here every
    # node is busy for 50 slots at some time in [now + 200, now + 1000), and for 10 slots
    # in [now + 2000, now + 2160).
    machines = tuple(Machine(f"n{i}", Resources(0, 24, 65536)) for i in range(16))
    now = 100
    cpu = Resources(0, 24, 16384)
    busy = tuple(
        Reservation(m.name, now + start + step * i, now + start + step * (i + 1), cpu, f"r{i}")
        for start, step in ((200, 50), (2000, 10))  # two busy spells per node, staggered
        for i, m in enumerate(machines)
    )
    snap = ClusterSnapshot(machines, busy, DELTA, now_slot=now)
    window = [
        PendingJob(
            replace(
                make_job(f"w{k}", workers=12, worker=cpu, workload=3e5 * (k + 1)), arrival_slot=now
            ),
            k,
        )
        for k in range(3)
    ]
    out = joint_start(window, snap, PlacementParams(queue_program="joint"))  # no SolverError
    assert all(d.start_slot == now for d in out)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(1, 6), st.floats(0.5, 6.0), st.integers(0, 8)),
                min_size=3, max_size=10))  # fmt: skip
def test_replays_under_the_joint_program_keep_the_invariants(
    specs: list[tuple[int, float, int]],
) -> None:
    nu = RESNET.nu_in(DELTA)
    entries = [
        (make_job(f"j{i}", workers=w, workload=nu * w * d), DELTA * a)
        for i, (w, d, a) in enumerate(specs)
    ]
    cluster = make_cluster(2, 4, 16).at_slot(0)
    cluster = replace(cluster, slot_seconds=DELTA)
    jobs, _ = admit(sim_jobs(entries, DELTA), cluster)
    result = simulate(jobs, cluster, "yu-rr", PlacementParams(queue_program="joint"))
    assert not result.rejected
    assert capacity_violations(result) == [] and decision_problems(result) == []


def test_joint_decisions_record_the_kept_trial_and_why() -> None:
    snap = make_cluster(2)
    window = [PendingJob(make_job(f"w{k}", workers=4, workload=2e4 * (k + 1)), k) for k in range(3)]
    params = PlacementParams(queue_program="joint", trials=4)
    out = joint_start(window, snap, params)
    assert out
    for d in out:  # trials are drawn over the whole window: no per-job rows
        assert d.rounding == () and d.kept_trial is not None and 0 <= d.kept_trial < 4
        stats = dict(d.stats)
        assert "kept_trial" not in stats and "distinct_trial_outcomes" in stats
        assert d.kept_because == least_total_completion_reason(
            stats["trial_total_completion_slots"], len(window)
        )
