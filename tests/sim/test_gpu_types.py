"""Mixed GPU types: no policy ever puts a GPU task on a node of a type the job excludes.

The rule (``slurm_mlsched.model.eligibility``): a job that names GPU types may run its
GPU-using tasks only on nodes of those types; tasks without GPUs (PSs) go anywhere.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.errors import NeverFitsError
from slurm_mlsched.model import (
    ClusterSnapshot,
    Decision,
    Form,
    JobRequest,
    Machine,
    Mode,
    Resources,
    SlotPlan,
    eligible_nodes,
)
from slurm_mlsched.placement import Binding, PlacementParams, check_could_ever_fit, place
from slurm_mlsched.placement.program.residual import identical_groups, residual_from
from slurm_mlsched.placement.program.verify import check_decision
from slurm_mlsched.sim import SimJob, admit, sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_job

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
TYPES = (None, "v100", "p100")
ASKS = (None, frozenset({"v100"}), frozenset({"p100"}), frozenset({"v100", "p100"}))


def _typed(name: str, gpu_type: str | None, gpus: float = 4) -> Machine:
    return Machine(name, Resources(gpus, 16, 65536), gpu_type)


def _gpu_nodes(decision: Decision, job: JobRequest) -> set[str]:
    """Nodes holding a GPU-using task of the job in some slot of the decision."""
    out: set[str] = set()
    for plan in decision.slots:
        if job.worker.gpu > 0:
            out |= {n for n, c in plan.workers if c}
        if job.ps.gpu > 0:
            out |= {n for n, c in plan.ps if c}
    return out


@st.composite
def mixed_replays(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[SimJob]]:
    n = draw(st.integers(2, 5))
    machines = tuple(
        Machine(
            f"n{i}",
            Resources(
                draw(st.sampled_from([1, 2, 4])),
                draw(st.sampled_from([4, 8, 16])),
                draw(st.sampled_from([32768, 65536])),
            ),
            draw(st.sampled_from(TYPES)),
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
            gpu_types=draw(st.sampled_from(ASKS)),
        )
        entries.append((job, draw(st.floats(0, 5000))))
    return cluster, sim_jobs(entries, 600.0)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_replays(), st.integers(0, 3))
def test_no_policy_places_a_gpu_task_on_an_ineligible_node(
    case: tuple[ClusterSnapshot, list[SimJob]], seed: int
) -> None:
    cluster, jobs = case
    admitted, unplaceable = admit(jobs, cluster)
    assert len(admitted) + len(unplaceable) == len(jobs)
    for u in unplaceable:  # refused only when no node of its types could ever hold it
        with pytest.raises(NeverFitsError):
            check_could_ever_fit(u.job.request, cluster)
    for policy, form, binding in POLICIES:
        params = PlacementParams(form=form, seed=seed, binding=binding)
        result = simulate(admitted, cluster, policy, params)
        assert capacity_violations(result) == [], policy
        assert decision_problems(result) == [], policy
        for o in result.outcomes:
            if o.decision is None:
                continue
            ok = set(eligible_nodes(o.job.request, cluster))
            assert _gpu_nodes(o.decision, o.job.request) <= ok, (policy, o.job.job_id)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_replays(), st.integers(0, 3))
def test_exact_respects_gpu_types(case: tuple[ClusterSnapshot, list[SimJob]], seed: int) -> None:
    cluster, jobs = case
    for j in jobs[:2]:
        job = replace(j.request, max_workers=min(j.request.max_workers, 3), ps_count=None)
        try:
            check_could_ever_fit(job, cluster)
        except NeverFitsError:
            continue
        d = place(job, cluster, "exact", PlacementParams(seed=seed, time_limit_s=20))
        assert check_decision(d, job, cluster) == []
        assert _gpu_nodes(d, job) <= set(eligible_nodes(job, cluster))


def test_a_typed_job_waits_for_its_type_even_when_other_gpus_are_free() -> None:
    cluster = ClusterSnapshot((_typed("p1", "p100"), _typed("v1", "v100")))
    busy = make_job("busy", workers=4, workload=RESNET.nu_in(600.0) * 4 * 5)
    busy = replace(busy, gpu_types=frozenset({"v100"}))
    job = replace(make_job("j", workers=2, workload=200.0), gpu_types=frozenset({"v100"}))
    d0 = place(busy, cluster, "yu-rr", PlacementParams())
    assert _gpu_nodes(d0, busy) == {"v1"}
    snap = cluster.with_reservations(d0.reservations(busy))
    for policy in ("yu-rr", "fifo-bf", "exact"):
        d = place(job, snap, policy, PlacementParams(time_limit_s=20))
        assert check_decision(d, job, snap) == [], policy
        assert _gpu_nodes(d, job) == {"v1"}, policy
        assert d.start_slot >= d0.end_slot + 1, policy  # it waited for v1
    free = place(replace(job, gpu_types=None), snap, "yu-rr", PlacementParams())
    assert free.start_slot == 0 and _gpu_nodes(free, job) == {"p1"}


def test_ps_without_gpus_may_sit_on_any_node() -> None:
    cluster = ClusterSnapshot(
        (Machine("c1", Resources(0, 16, 65536)), _typed("v1", "v100", gpus=2))
    )
    job = replace(
        make_job("j", workers=2, worker=Resources(1, 8, 32768), ps=Resources(0, 8, 32768)),
        gpu_types=frozenset({"v100"}),
    )
    plan = SlotPlan(0, Mode.DISTRIBUTED, (("v1", 2),), (("c1", 1),), 10)
    d = Decision("j", "test", Form.NON_ELASTIC, 0, (plan,), 0, 9, 1e9, 0)
    assert not [p for p in check_decision(d, job, cluster) if "GPU type" in p]
    wrong = replace(
        d, slots=(SlotPlan(0, Mode.DISTRIBUTED, (("c1", 1), ("v1", 1)), (("v1", 1),), 10),)
    )
    assert any("GPU type" in p for p in check_decision(wrong, job, cluster))


def test_a_type_no_node_has_is_refused_with_the_types_there() -> None:
    cluster = ClusterSnapshot((_typed("p1", "p100"), _typed("n2", None)))
    job = replace(make_job("j"), gpu_types=frozenset({"a100"}))
    with pytest.raises(NeverFitsError) as err:
        check_could_ever_fit(job, cluster)
    assert "a100" in str(err.value) and "p100" in str(err.value)
    assert "untyped" in str(err.value)
    cpu_only = replace(job, worker=Resources(0, 1, 1024))  # no GPU task: the types bind nothing
    check_could_ever_fit(cpu_only, cluster)


def test_machines_of_different_types_are_never_one_group() -> None:
    cluster = ClusterSnapshot((_typed("a", "v100"), _typed("b", "p100"), _typed("c", "v100")))
    groups = identical_groups(residual_from(cluster, 0), set())
    assert groups == [[0, 2], [1]]
    job = replace(make_job("j"), gpu_types=frozenset({"p100"}))
    seen = residual_from(cluster, 0).for_job(job)
    assert seen.capacity[:, 0].tolist() == [0.0, 4.0, 0.0]
    assert seen.capacity[:, 1].tolist() == [16.0, 16.0, 16.0]  # CPUs stay for PSs


def test_job_request_gpu_types_are_checked() -> None:
    with pytest.raises(ValueError, match="gpu_types"):
        replace(make_job(), gpu_types=frozenset())
    job = replace(make_job(), gpu_types={"v100"})  # type: ignore[arg-type]
    assert job.gpu_types == frozenset({"v100"})
    assert make_job().gpu_types is None


def test_the_store_keeps_gpu_types_and_old_rows_read_as_any() -> None:
    from slurm_mlsched.storage.codec import (
        decode_request,
        decode_snapshot,
        encode_request,
        encode_snapshot,
    )

    job = replace(make_job("j"), gpu_types=frozenset({"v100", "p100"}))
    assert encode_request(job)["gpu_types"] == ["p100", "v100"]
    assert decode_request(encode_request(job)) == job
    assert "gpu_types" not in encode_request(make_job())  # the old shape, unchanged
    assert decode_request(encode_request(make_job())).gpu_types is None
    snap = ClusterSnapshot((_typed("v1", "v100"), Machine("c1", Resources(0, 4, 1024))))
    row = encode_snapshot(snap)
    assert row["machines"][0]["gpu_type"] == "v100" and "gpu_type" not in row["machines"][1]
    assert decode_snapshot(row).machines == snap.machines


def test_replay_of_a_typed_trace_on_a_mixed_cluster(tmp_path: Path) -> None:
    from slurm_mlsched.services.clock import FixedClock
    from slurm_mlsched.services.replay import ReplayOptions, run_replay
    from slurm_mlsched.services.replay.run import prepare_jobs

    (tmp_path / "cluster.yaml").write_text(
        "groups:\n"
        "  - {prefix: v, count: 2, gpus: 4, cpus: 32, mem_gb: 256, gpu_type: V100M16}\n"
        "  - {prefix: t, count: 2, gpus: 4, cpus: 32, mem_gb: 256, gpu_type: T4}\n"
    )
    rows = ["id,submit,gpus,duration,spec"]
    for i in range(24):
        spec = ("V100M16", "T4", "V100M16|T4", "")[i % 4]
        rows.append(f"j{i},{60 * i},{1 + i % 3},{600 + 300 * (i % 5)},{spec}")
    (tmp_path / "trace.csv").write_text("\n".join(rows) + "\n")
    opts = ReplayOptions(
        trace=tmp_path / "trace.csv",
        cluster=tmp_path / "cluster.yaml",
        trace_format="csv",
        columns="job_id=id,submit=submit,gpus=gpus,duration=duration,gpu_type=spec,"
        "time_format=offset",
        policies=("yu-rr", "fifo-bf", "drf"),
        lp_max_jobs=0,
    )
    prepared = prepare_jobs(opts)
    asked = [j.request.gpu_types for j in prepared.admitted]
    assert asked.count(frozenset({"T4"})) == 6 and asked.count(None) == 6
    for policy in opts.policies:
        result = simulate(prepared.admitted, prepared.cluster, policy, PlacementParams())
        assert capacity_violations(result) == [] and decision_problems(result) == []
        for o in result.outcomes:
            assert o.decision is not None, (policy, o.error)
            ok = set(eligible_nodes(o.job.request, prepared.cluster))
            assert _gpu_nodes(o.decision, o.job.request) <= ok
    report = run_replay(opts, FixedClock.from_iso("2026-01-01T00:00:00Z"))
    assert report.jobs == 24 and not report.unplaceable


def _typed_cluster(types: list[str | None], gpus: float = 4) -> ClusterSnapshot:
    return ClusterSnapshot(
        tuple(_typed(f"n{i}", t, gpus) for i, t in enumerate(types)), slot_seconds=600.0
    )


def test_the_bound_counts_a_typed_job_on_the_gpus_of_its_types() -> None:
    """Eight 4-GPU jobs that may use only the two v100 nodes of a cluster with two t4
    nodes more: the type pool (docs/formulation.md §15.3, Lemma 2‴) gives them the v100
    GPUs alone, so the bound is the same as on the v100 nodes alone, and `yu-rr` meets
    it; without the types it is the bound of all 16 GPUs (72 slots, not 120)."""
    from slurm_mlsched.sim import lower_bound
    from slurm_mlsched.sim.bounds import scalable_bound

    nu = RESNET.nu_in(600.0)
    typed = [
        replace(make_job(f"j{i}", workers=4, workload=nu * 4 * 6), gpu_types=frozenset({"v100"}))
        for i in range(8)
    ]
    untyped = [replace(j, gpu_types=None) for j in typed]
    mixed = _typed_cluster(["v100", "v100", "t4", "t4"])
    v100_only = _typed_cluster(["v100", "v100"])
    bound, _ = scalable_bound(typed, mixed)
    assert bound == pytest.approx(scalable_bound(untyped, v100_only)[0], rel=1e-6)
    assert bound == pytest.approx(120.0, rel=1e-6)
    assert scalable_bound(untyped, mixed)[0] == pytest.approx(72.0, rel=1e-6)
    admitted, _ = admit(sim_jobs([(j, 0.0) for j in typed], 600.0), mixed)
    replay_bound = lower_bound(admitted, mixed).value
    assert replay_bound is not None and replay_bound >= bound - 1e-6
    for policy in ("yu-rr", "fifo-bf", "drf"):
        result = simulate(admitted, mixed, policy, PlacementParams())
        assert sum(d.completion_slots for d in result.decisions) >= replay_bound - 1e-6, policy


def test_a_typed_job_is_counted_at_the_widths_of_its_nodes() -> None:
    """An 8-worker job that may use only the 2-GPU t4 nodes never runs co-located at 8:
    its fewest slots are counted on those nodes (``job_bounds.job_widths``), not on the
    8-GPU v100 node it may not use."""
    from slurm_mlsched.sim.job_bounds import fewest_slots, job_widths

    def node(name: str, kind: str, gpus: float) -> Machine:
        return Machine(name, Resources(gpus, 32, 131072), kind)

    cluster = ClusterSnapshot(
        (node("big", "v100", 8), *(node(f"s{i}", "t4", 2) for i in range(4))),
        slot_seconds=600.0,
    )
    job = make_job("j", workers=8, workload=RESNET.nu_in(600.0) * 8 * 3)
    (anywhere, on_t4) = job_widths([job, replace(job, gpu_types=frozenset({"t4"}))], cluster)
    assert anywhere.colocated == 8 and on_t4.colocated == 2
    assert fewest_slots(job, anywhere, 600.0) == 3
    assert fewest_slots(job, on_t4, 600.0) > 3


def test_type_pools_one_per_named_set_that_is_part_of_the_cluster() -> None:
    """A column per set of types some job names, counting the jobs whose types lie within
    it; none for a set whose nodes hold every GPU (the GPU column already counts that)."""
    from slurm_mlsched.sim.capped_bound import columns, node_types, type_sets

    cluster = _typed_cluster(["v100", "p100", "t4", None])
    v, vp, every = frozenset({"v100"}), frozenset({"v100", "p100"}), None
    jobs = [replace(make_job(f"j{i}"), gpu_types=t) for i, t in enumerate([vp, v, every, v])]
    assert type_sets(jobs) == (v, vp)
    capacity = np.array([m.capacity.as_tuple() for m in cluster.machines])
    _, cols = columns(capacity, True, node_types(cluster), type_sets(jobs))
    typed = [c for c in cols if c.types is not None]
    assert [c.types for c in typed] == [v, vp]
    assert [c.total(capacity) for c in typed] == [4.0, 8.0]
    assert [typed[1].counts(j) for j in jobs] == [True, True, False, True]
    assert [typed[0].counts(j) for j in jobs] == [False, True, False, True]
    all_typed = _typed_cluster(["v100", "v100"])
    _, cols = columns(capacity[:2], True, node_types(all_typed), (v,))
    assert all(c.types is None for c in cols)
