"""The replay engine's invariants (sim/engine.py), property-tested on small random job lists.

For yu-rr (non-elastic late and early binding, elastic), qssf, fifo-ff, fifo-bf, oasis
and the re-allocating optimus, drf and tiresias: the committed reservations never exceed a capacity
at any slot; every admitted job gets an outcome and every placed one covers its work from
its arrival on (so it finishes); a job is rejected only by fifo and qssf, when its N
workers can never run at once, or by oasis (admission control, or a smallest distributed
shape that never fits); the same seed gives the same decisions.
"""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import ClusterSnapshot, Decision, Form, JobRequest, Machine, Resources
from slurm_mlsched.placement import Binding, PlacementParams
from slurm_mlsched.sim import SimJob, admit, sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_cluster, make_job

POLICIES = [
    ("yu-rr", Form.NON_ELASTIC, Binding.LATE),
    ("yu-rr", Form.NON_ELASTIC, Binding.EARLY),
    ("yu-rr", Form.ELASTIC, Binding.EARLY),
    ("qssf", Form.NON_ELASTIC, Binding.LATE),
    ("fifo-ff", Form.NON_ELASTIC, Binding.LATE),
    ("fifo-bf", Form.NON_ELASTIC, Binding.LATE),
    ("oasis", Form.NON_ELASTIC, Binding.LATE),
    ("optimus", Form.NON_ELASTIC, Binding.LATE),
    ("drf", Form.NON_ELASTIC, Binding.LATE),
    ("tiresias", Form.NON_ELASTIC, Binding.LATE),
    ("srtf", Form.NON_ELASTIC, Binding.LATE),
]
REJECTS = {
    "fifo-ff": ("never-fits",),
    "fifo-bf": ("never-fits",),
    "qssf": ("never-fits",),
    "oasis": ("rejected", "never-fits"),
}


@st.composite
def replays(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[SimJob]]:
    n = draw(st.integers(1, 4))
    machines = tuple(
        Machine(
            f"n{i}",
            Resources(
                draw(st.sampled_from([1, 2, 4])),
                draw(st.sampled_from([4, 8, 16])),
                draw(st.sampled_from([32768, 65536])),
            ),
        )
        for i in range(n)
    )
    cluster = ClusterSnapshot(machines, slot_seconds=600.0)
    entries = []
    for i in range(draw(st.integers(1, 7))):
        workers = draw(st.integers(1, 6))
        job = JobRequest(
            job_id=f"j{i}",
            arrival_slot=0,
            workload=draw(st.floats(0.2, 4.0)) * RESNET.nu_ex(600.0) * workers,
            max_workers=workers,
            worker=Resources(1, draw(st.sampled_from([1, 2])), 8192),
            ps=Resources(0, 1, draw(st.sampled_from([2048, 8192]))),
            profile=RESNET,
            ps_count=draw(st.one_of(st.none(), st.integers(1, 2))) if workers >= 2 else None,
        )
        entries.append((job, draw(st.floats(0, 5000))))
    return cluster, sim_jobs(entries, 600.0)


def _key(decisions: Sequence[Decision]) -> list[object]:
    return [(d.job_id, d.slots, d.start_slot, d.end_slot) for d in decisions]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replays(), st.integers(0, 3))
def test_replay_invariants_for_every_policy(
    case: tuple[ClusterSnapshot, list[SimJob]], seed: int
) -> None:
    cluster, jobs = case
    admitted, unplaceable = admit(jobs, cluster)
    assert len(admitted) + len(unplaceable) == len(jobs)
    for policy, form, binding in POLICIES:
        params = PlacementParams(form=form, seed=seed, binding=binding)
        result = simulate(admitted, cluster, policy, params)
        assert [o.job.job_id for o in result.outcomes] == [j.job_id for j in admitted]
        assert capacity_violations(result) == [], policy
        assert decision_problems(result) == [], policy
        for o in result.outcomes:
            if o.decision is None:
                assert o.error.split(":")[0] in REJECTS.get(policy, ()), (policy, o.error)
                continue
            assert o.decision.start_slot >= o.job.request.arrival_slot
            assert o.decision.work_covered >= o.job.request.workload * (1 - 1e-9)
        again = simulate(admitted, cluster, policy, params)
        assert _key(again.decisions) == _key(result.decisions), policy


def test_the_policy_sees_only_active_reservations() -> None:
    # 40 one-slot jobs one after the other: the book never holds more than a few
    cluster = make_cluster(1, gpus=4, cpus=8)
    nu = RESNET.nu_in(600.0)
    entries = [(make_job(f"j{i:02d}", workers=1, workload=nu), i * 600.0) for i in range(40)]
    result = simulate(sim_jobs(entries, 600.0), cluster, "fifo-bf", PlacementParams())
    assert len(result.decisions) == 40
    assert result.peak_active_reservations <= 1
    assert len(result.reservations()) == 40


def test_arrivals_are_the_first_slot_boundary_at_or_after_submission() -> None:
    entries = [(make_job("a"), 0.0), (make_job("b"), 1.0), (make_job("c"), 600.0)]
    slots = {j.job_id: j.request.arrival_slot for j in sim_jobs(entries, 600.0)}
    assert slots == {"a": 0, "b": 1, "c": 1}


def test_progress_is_reported_and_ends_at_the_total() -> None:
    cluster = make_cluster(2)
    entries = [(make_job(f"j{i}", workers=1, workload=500.0), i * 60.0) for i in range(7)]
    seen: list[tuple[int, int]] = []
    simulate(
        sim_jobs(entries, 600.0),
        cluster,
        "fifo-ff",
        PlacementParams(),
        progress=lambda done, total: seen.append((done, total)),
        progress_every=3,
    )
    assert seen == [(3, 7), (6, 7), (7, 7)]


def test_unplaceable_jobs_are_reported_with_a_reason() -> None:
    cluster = make_cluster(2, gpus=4)
    big = make_job("big", workers=1, worker=Resources(8, 1, 1024))  # 8 GPUs in one worker
    ok, bad = admit(sim_jobs([(big, 0.0), (make_job("ok"), 0.0)], 600.0), cluster)
    assert [j.job_id for j in ok] == ["ok"]
    assert [u.job.job_id for u in bad] == ["big"] and "gpu" in bad[0].reason
