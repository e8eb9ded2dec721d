"""``tiresias`` (discretized 2D-LAS): queues by attained GPU-time, FIFO inside a queue,
preemption at demotion, restarts charged on resume."""

from __future__ import annotations

from slurm_mlsched.model import Mode
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.baselines.tiresias import queue_of
from slurm_mlsched.sim import sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_cluster, make_job

DELTA = 600.0
NU = RESNET.nu_in(DELTA)


def test_queues_by_attained_service() -> None:
    assert [queue_of(x, (100.0, 1000.0)) for x in (0, 99, 100, 999, 1000, 5e6)] == [
        0, 0, 1, 1, 2, 2,
    ]  # fmt: skip


def test_first_come_first_served_inside_the_top_queue() -> None:
    # B arrives while A (same width) runs and is still in the top queue: B waits
    jobs = sim_jobs(
        [(make_job("A", workers=4, workload=NU * 4 * 3), 0.0),
         (make_job("B", workers=4, workload=NU * 4 * 2), 600.0)],
        DELTA,
    )  # fmt: skip
    result = simulate(jobs, make_cluster(1, 4, 16), "tiresias", PlacementParams())
    a, b = result.decisions
    assert (a.start_slot, a.end_slot) == (0, 2) and (b.start_slot, b.end_slot) == (3, 4)
    assert capacity_violations(result) == [] and decision_problems(result) == []


def test_a_demoted_job_is_preempted_at_its_threshold_and_resumes_with_a_restart() -> None:
    # threshold 4 GPUs x 2 slots of service: A (4 GPUs, 6 slots of work) is demoted at the
    # end of slot 1 with no event there (a wake-up); B (4 GPUs, 2 slots) waiting in the top
    # queue then preempts it; A resumes after B and pays the restart cost
    thr = 4 * 2 * DELTA
    params = PlacementParams(tiresias_thresholds_s=(thr,), restart_s=300.0)
    jobs = sim_jobs(
        [(make_job("A", workers=4, workload=NU * 4 * 6), 0.0),
         (make_job("B", workers=4, workload=NU * 4 * 2), 300.0)],
        DELTA,
    )  # fmt: skip
    result = simulate(jobs, make_cluster(1, 4, 16), "tiresias", params)
    a, b = result.decisions
    assert (b.start_slot, b.end_slot) == (2, 3)
    assert [(p.slot, p.length) for p in a.slots] == [(0, 2), (4, 5)]  # 4 slots + 0.5 lost
    assert dict(a.stats)["restarts"] == 1 and dict(b.stats)["restarts"] == 0
    assert all(p.mode is Mode.COLOCATED for p in a.slots)
    assert capacity_violations(result) == [] and decision_problems(result) == []


def test_never_resizes_a_job() -> None:
    # non-clairvoyant, requested width: every run of every job has all its N workers
    entries = [
        (make_job(f"j{i}", workers=1 + i % 4, workload=NU * (1 + i % 3) * 2), i * 300.0)
        for i in range(12)
    ]
    jobs = sim_jobs(entries, DELTA)
    result = simulate(jobs, make_cluster(2, 4, 16), "tiresias", PlacementParams())
    for o in result.outcomes:
        assert o.decision is not None
        assert {p.total_workers for p in o.decision.slots} == {o.job.request.max_workers}
        assert o.decision.work_covered >= o.job.request.workload * (1 - 1e-9)
    assert capacity_violations(result) == [] and decision_problems(result) == []
