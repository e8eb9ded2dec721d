"""The replay loop of re-allocating policies (sim/realloc.py) with hand-written policies.

One machine of (4 GPU, 16 CPU, 64 GiB) unless said; a worker (1, 1, 8 GiB), a PS
(0, 1, 4 GiB); RESNET's co-located rate ν_in per worker and slot (Δ = 600 s); workloads are
whole multiples of it, so run lengths are exact.
"""

from __future__ import annotations

import pytest

from slurm_mlsched.errors import PolicyStallError
from slurm_mlsched.model import ClusterSnapshot, Form, Machine, Mode, Resources
from slurm_mlsched.placement import PlacementParams, place
from slurm_mlsched.placement.baselines.reallocation import Allocation, RunningJob
from slurm_mlsched.placement.registry import get_reallocating, policy_names
from slurm_mlsched.sim import SimJob, compute_metrics, draw_utilities, sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from slurm_mlsched.sim.realloc import simulate_reallocating
from tests.conftest import RESNET, make_cluster, make_job

NU_IN = RESNET.nu_in(600.0)
PARAMS = PlacementParams(restart_s=0.0)  # the progress arithmetic; restarts: below


def colocated(machine: int, workers: int) -> Allocation:
    return Allocation(Mode.COLOCATED, ((machine, workers),), ((machine, 1),))


def at(job_id: str, slot: int, workers: int, workload: float) -> SimJob:
    return SimJob(make_job(job_id, workers=workers, workload=workload, arrival=slot), slot * 600.0)


def first_come(
    jobs: tuple[RunningJob, ...], cluster: ClusterSnapshot, slot: int, params: PlacementParams
) -> tuple[Allocation | None, ...]:
    """The first active job gets all its workers on machine 0; the others wait."""
    return tuple(
        colocated(0, j.request.max_workers) if k == 0 else None for k, j in enumerate(jobs)
    )


def test_a_waiting_job_starts_at_the_completion_that_frees_the_machine() -> None:
    jobs = [at("A", 0, 4, 4 * NU_IN * 5), at("B", 2, 2, 2 * NU_IN * 3)]
    result = simulate_reallocating(jobs, make_cluster(1, 4, 16), "fake", first_come, PARAMS)
    got = {d.job_id: (d.start_slot, d.end_slot) for d in result.decisions}
    assert got == {"A": (0, 4), "B": (5, 7)}
    assert result.events == 3 and len(result.call_ms) == 3  # slots 0 (A), 2 (B), 5 (A done)
    assert capacity_violations(result) == [] and decision_problems(result) == []
    b = result.decisions[1]
    assert (
        b.form is Form.ELASTIC
        and b.arrival_slot == 2
        and b.work_covered == pytest.approx(2 * NU_IN * 3)
    )
    m = compute_metrics(result, draw_utilities(["A", "B"], 0))
    assert m.avg_wait_s == pytest.approx((0 + 3 * 600.0) / 2)  # B waits slots 2–4
    assert m.decision_p50_ms is not None  # from the calls


def test_progress_follows_the_allocation_between_events() -> None:
    seen: dict[int, tuple[float, ...]] = {}

    def grow(
        jobs: tuple[RunningJob, ...], cluster: ClusterSnapshot, slot: int, params: PlacementParams
    ) -> tuple[Allocation | None, ...]:
        """A alone: 2 workers; once B is there: A 4 workers on machine 0, B 1 on machine 1."""
        seen[slot] = tuple(j.remaining for j in jobs)
        if len(jobs) == 1 and jobs[0].request.job_id == "A":
            return (colocated(0, 2),)
        return tuple(colocated(0, 4) if j.request.job_id == "A" else colocated(1, 1) for j in jobs)

    v_a = NU_IN * (2 * 3 + 4 * 2)  # 3 slots at 2 workers, then 2 at 4
    jobs = [at("A", 0, 4, v_a), at("B", 3, 1, NU_IN * 10)]
    result = simulate_reallocating(jobs, make_cluster(2, 4, 16), "fake", grow, PARAMS)
    a = result.decisions[0]
    assert [(p.slot, p.length, p.total_workers) for p in a.slots] == [(0, 3, 2), (3, 2, 4)]
    assert (a.start_slot, a.end_slot) == (0, 4)
    assert seen[3][0] == pytest.approx(v_a - 2 * NU_IN * 3)  # the remaining work A reports
    assert result.decisions[1].end_slot == 12  # B: 10 slots from slot 3
    assert decision_problems(result) == []


def test_distributed_jobs_run_at_the_network_rate() -> None:
    def spread(
        jobs: tuple[RunningJob, ...], cluster: ClusterSnapshot, slot: int, params: PlacementParams
    ) -> tuple[Allocation | None, ...]:
        return (Allocation(Mode.DISTRIBUTED, ((0, 1), (1, 1)), ((0, 1),)),)

    nu_ex = RESNET.nu_ex(600.0)
    result = simulate_reallocating(
        [at("A", 0, 2, 2 * nu_ex * 4)], make_cluster(2, 4, 16), "fake", spread, PARAMS
    )
    assert (result.decisions[0].start_slot, result.decisions[0].end_slot) == (0, 3)


@pytest.mark.parametrize(
    ("alloc", "message"),
    [
        (colocated(0, 5), "over capacity"),  # 5 GPUs on a 4-GPU machine
        (Allocation(Mode.DISTRIBUTED, ((0, 1), (1, 1)), ()), "PSs"),
        (Allocation(Mode.COLOCATED, ((0, 1), (1, 1)), ((0, 1),)), "one machine"),
    ],
)
def test_a_policy_that_breaks_the_model_is_a_bug(alloc: Allocation, message: str) -> None:
    def bad(
        jobs: tuple[RunningJob, ...], cluster: ClusterSnapshot, slot: int, params: PlacementParams
    ) -> tuple[Allocation | None, ...]:
        return tuple(alloc for _ in jobs)

    with pytest.raises(RuntimeError, match=message):
        simulate_reallocating([at("A", 0, 8, 1000.0)], make_cluster(2, 4, 16), "bad", bad, PARAMS)


def test_a_policy_that_never_runs_anything_cannot_end() -> None:
    def idle(
        jobs: tuple[RunningJob, ...], cluster: ClusterSnapshot, slot: int, params: PlacementParams
    ) -> tuple[Allocation | None, ...]:
        return tuple(None for _ in jobs)

    with pytest.raises(PolicyStallError, match=r"no job runs, 1 wait .* places none of A") as err:
        simulate_reallocating([at("A", 0, 1, 100.0)], make_cluster(1), "idle", idle, PARAMS)
    assert err.value.code == "policy-stalled" and "--policy idle" in err.value.hint


def test_a_job_whose_ps_tasks_each_fill_a_node_is_placed_by_every_reallocating_policy() -> None:
    # found by the bound's property search: 3 machines of 1 GPU and 4 CPUs, one job of two
    # CPU-only workers and a fixed count of two 4-CPU PSs. Co-located it needs 5 CPUs; no
    # even spread holds 2 workers and 2 PSs (a machine with a PS has no CPU left), while
    # both workers on one machine and a PS on each of the others does. optimus and tiresias
    # spread evenly and stalled; such a job now gets the fallback layout (any_layout).
    cluster = ClusterSnapshot(
        tuple(Machine(f"m{i}", Resources(1, 4, 16384)) for i in range(3)), slot_seconds=60.0
    )
    job = make_job(
        "j", workers=2, workload=107.54, worker=Resources(0, 1, 1024),
        ps=Resources(0, 4, 1024), ps_count=2,
    )  # fmt: skip
    for policy in ("optimus", "tiresias", "drf"):
        result = simulate(sim_jobs([(job, 0.0)], 60.0), cluster, policy, PARAMS)
        (out,) = result.outcomes
        assert out.decision is not None and out.decision.completion_slots == 3, policy
        layout = out.decision.slots[0]
        assert sum(n for _, n in layout.workers) == 2 and sum(n for _, n in layout.ps) == 2


def test_registry_kinds_and_the_replay_only_refusal() -> None:
    assert {"optimus", "drf", "oasis", "oasis-x0.5", "oasis-x2"} <= set(policy_names())
    assert get_reallocating("optimus") is not None and get_reallocating("oasis") is None
    with pytest.raises(Exception, match="replay only"):
        place(make_job(), make_cluster(1), "drf")


@pytest.mark.parametrize("policy", ["optimus", "drf"])
def test_simulate_hands_reallocating_policies_to_the_sibling_loop(policy: str) -> None:
    jobs = [at(f"j{i}", i, 1 + i % 4, NU_IN * (3 + 2 * i)) for i in range(8)]
    result = simulate(jobs, make_cluster(2, 4, 16), policy, PARAMS)
    assert [o.job.job_id for o in result.outcomes] == [j.job_id for j in jobs]
    assert not result.rejected and len(result.call_ms) == result.events
    assert capacity_violations(result) == [] and decision_problems(result) == []
    again = simulate(jobs, make_cluster(2, 4, 16), policy, PARAMS)
    assert [d.slots for d in again.decisions] == [d.slots for d in result.decisions]


def test_a_resumed_or_resized_job_pays_the_restart_cost() -> None:
    # A runs 2 slots, is preempted for 2 (None), resumes on the other machine: one restart
    # (the first start is free); with restart_s = Δ/2 the lost half slot adds a slot
    def pause(
        jobs: tuple[RunningJob, ...], cluster: ClusterSnapshot, slot: int, params: PlacementParams
    ) -> tuple[Allocation | None, ...]:
        out: list[Allocation | None] = []
        for j in jobs:
            if j.request.job_id == "A":
                out.append(colocated(0, 2) if slot < 2 else None if slot < 4 else colocated(1, 2))
            else:
                out.append(colocated(0, 4))
        return tuple(out)

    v_a = NU_IN * 2 * 4  # 4 slots at 2 workers
    jobs = [at("A", 0, 2, v_a), at("B", 2, 4, NU_IN * 4 * 2)]
    for restart, end in ((0.0, 5), (300.0, 6)):
        result = simulate_reallocating(
            jobs, make_cluster(2, 4, 16), "fake", pause, PlacementParams(restart_s=restart)
        )
        a = result.decisions[0]
        assert a.end_slot == end, restart
        assert dict(a.stats)["restarts"] == (1 if restart else 0)


def test_an_allocation_starts_each_job_at_a_width_it_can_run_with() -> None:
    # two jobs of two CPU-only workers and a fixed count of two 2-CPU PSs on three 2-CPU
    # nodes: with one worker a job can only co-locate (3 CPUs, no node has them), so
    # handing each job one worker first (6 CPUs, the whole total) started neither, ever;
    # each job's first step is now the two workers it can run with, and they take turns
    cluster = ClusterSnapshot(
        tuple(Machine(f"m{i}", Resources(0, 2, 16384)) for i in range(3)), slot_seconds=60.0
    )
    jobs = [
        make_job(
            f"j{i}",
            workers=2,
            workload=RESNET.nu_in(60.0) * 2 * 3,
            worker=Resources(0, 1, 1024),
            ps=Resources(0, 2, 1024),
            ps_count=2,
        )
        for i in range(2)
    ]
    for policy in ("optimus", "drf", "tiresias"):
        result = simulate(sim_jobs([(j, 0.0) for j in jobs], 60.0), cluster, policy, PARAMS)
        ends = sorted(o.decision.end_slot for o in result.outcomes if o.decision is not None)
        assert len(ends) == 2 and ends[0] < ends[1], policy  # one after the other


def test_srtf_lays_out_a_job_its_holes_first_spread_never_holds() -> None:
    # nodes of 0, 1 and 2 GPUs with 4 CPUs each; two 1-GPU workers and a fixed two 4-CPU
    # PSs. Holes first puts a worker on the 1-GPU node and one on the 2-GPU node, and no
    # node has 4 CPUs left for the second PS; both workers on the 2-GPU node and a PS on
    # each other node fit. srtf stalled (found by the property test above).
    cluster = ClusterSnapshot(
        tuple(Machine(f"m{g}", Resources(g, 4, 16384)) for g in range(3)), slot_seconds=60.0
    )
    job = make_job(
        "j", workers=2, workload=107.54, worker=Resources(1, 1, 1024),
        ps=Resources(0, 4, 1024), ps_count=2,
    )  # fmt: skip
    result = simulate(sim_jobs([(job, 0.0)], 60.0), cluster, "srtf", PARAMS)
    (out,) = result.outcomes
    assert out.decision is not None and out.decision.start_slot == 0
