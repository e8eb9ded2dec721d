"""Known-answer tests of ``yu-rr`` (both forms) on hand-solvable instances."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from slurm_mlsched.errors import NeverFitsError
from slurm_mlsched.model import (
    ClusterSnapshot,
    Form,
    JobRequest,
    Mode,
    Reservation,
    Resources,
    TrialRule,
)
from slurm_mlsched.model.decision import earliest_end_reason
from slurm_mlsched.placement import PlacementParams, place
from slurm_mlsched.placement.program.verify import check_decision
from tests.conftest import RESNET, make_cluster, make_job

FORMS = [Form.NON_ELASTIC, Form.ELASTIC]
NU_IN = RESNET.nu_in(600.0)
NU_EX = RESNET.nu_ex(600.0)


@pytest.mark.parametrize("form", FORMS)
def test_job_that_fits_one_machine_is_colocated_at_once(form: Form) -> None:
    snap = make_cluster(4)
    job = make_job(workers=3, workload=3 * NU_IN * 5)  # exactly 5 slots co-located
    d = place(job, snap, "yu-rr", PlacementParams(form=form))
    assert d.mode == Mode.COLOCATED
    assert d.start_slot == 0 and d.end_slot == 4
    assert [(n.role.value, n.count) for n in d.placement] == [("ps", 1), ("worker", 3)]
    assert check_decision(d, job, snap) == []


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("fast_path", [True, False])
def test_colocated_answer_does_not_depend_on_the_fast_path(form: Form, fast_path: bool) -> None:
    snap = make_cluster(2)
    job = make_job(workers=2, workload=2 * NU_IN * 3)
    d = place(job, snap, "yu-rr", PlacementParams(form=form, fast_path=fast_path))
    assert (d.mode, d.start_slot, d.end_slot) == (Mode.COLOCATED, 0, 2)
    assert (d.solver == "fast-path") == fast_path


@pytest.mark.parametrize("form", FORMS)
def test_job_larger_than_any_machine_goes_distributed_with_the_ps_rule(form: Form) -> None:
    snap = make_cluster(4)  # 4 GPUs per node: 12 one-GPU workers need 3 nodes
    job = make_job(workers=12, workload=12 * NU_EX * 4, worker=Resources(1, 1, 4096))
    d = place(job, snap, "yu-rr", PlacementParams(form=form))
    assert d.mode == Mode.DISTRIBUTED
    first = d.slots[0]
    assert first.total_workers == 12
    assert first.total_ps == math.ceil(12 / 4)  # B_ex = 4 b_ex: one PS per 4 workers
    assert d.end_slot == 3
    assert check_decision(d, job, snap) == []


@pytest.mark.parametrize("form", FORMS)
def test_fixed_ps_count_is_used(form: Form) -> None:
    snap = make_cluster(4)
    job = make_job(workers=10, workload=10 * NU_EX * 3, ps_count=5)
    d = place(job, snap, "yu-rr", PlacementParams(form=form))
    assert d.mode == Mode.DISTRIBUTED
    assert all(p.total_ps == 5 for p in d.slots)
    assert check_decision(d, job, snap) == []


@pytest.mark.parametrize("form", FORMS)
def test_full_cluster_starts_when_capacity_frees(form: Form) -> None:
    snap = make_cluster(2)
    busy = tuple(Reservation(m.name, 0, 6, m.capacity, "earlier") for m in snap.machines)
    snap = snap.with_reservations(busy)
    job = make_job(workers=2, workload=2 * NU_IN * 2)
    d = place(job, snap, "yu-rr", PlacementParams(form=form))
    assert d.start_slot == 6 and d.end_slot == 7
    assert d.mode == Mode.COLOCATED
    assert check_decision(d, job, snap) == []


def test_nonelastic_waits_rather_than_running_slowly_into_a_wall() -> None:
    # node1 is free for 2 slots then busy for 20; node2 is busy for 3 slots.
    snap = make_cluster(2)
    snap = snap.with_reservations(
        (
            Reservation("node1", 2, 22, Resources(4, 8, 65536), "a"),
            Reservation("node2", 0, 3, Resources(4, 8, 65536), "b"),
        )
    )
    job = make_job(workers=4, workload=4 * NU_IN * 4)  # 4 slots co-located on one node
    d = place(job, snap, "yu-rr", PlacementParams(form=Form.NON_ELASTIC))
    assert (d.start_slot, d.end_slot) == (3, 6)
    assert d.slots[0].workers == (("node2", 4),)
    assert check_decision(d, job, snap) == []


def test_worker_no_node_could_hold_is_refused() -> None:
    job = make_job(worker=Resources(8, 1, 1024))
    with pytest.raises(NeverFitsError, match="gpu"):
        place(job, make_cluster(4), "yu-rr")


def test_fixed_ps_count_the_cluster_cannot_hold_is_refused() -> None:
    # a worker and a PS never share a node (9 CPUs > 8), and 5 PSs × 8 CPUs > 32 CPUs
    job = make_job(workers=8, ps_count=5, worker=Resources(1, 1, 1024), ps=Resources(0, 8, 1024))
    with pytest.raises(NeverFitsError):
        place(job, make_cluster(4), "yu-rr")


@pytest.mark.parametrize("form", FORMS)
def test_same_seed_same_decision_and_the_seed_is_stored(form: Form) -> None:
    snap = make_cluster(4).with_reservations((Reservation("node1", 0, 3, Resources(3, 3, 1024)),))
    job = make_job(workers=9, workload=9 * NU_EX * 6)
    p = PlacementParams(form=form, seed=1234)
    a, b = place(job, snap, "yu-rr", p), place(job, snap, "yu-rr", p)
    assert a.slots == b.slots and a.seed == b.seed == 1234


def _net_work(d: object, job: object, restart_s: float) -> tuple[float, int]:
    """Work of an elastic decision net of its restarts, counted from its slot plans alone:
    each run whose tasks differ from the previous slot's (after the first run; a gap
    before it counts as a change) loses its rate × restart_s / Δ."""
    rate = {Mode.COLOCATED: NU_IN, Mode.DISTRIBUTED: NU_EX}
    net, changes, prev = 0.0, 0, None
    for p in d.slots:  # type: ignore[attr-defined]
        r = rate[p.mode] * p.total_workers
        net += r * p.length
        if prev is not None and (prev.stop != p.slot or not prev.same_tasks(p)):
            net -= r * restart_s / 600.0
            changes += 1
        prev = p
    return net, changes


@pytest.mark.parametrize("restart_s", [30.0, 300.0, 900.0])
def test_elastic_schedules_pay_for_their_restarts(restart_s: float) -> None:
    # a node half busy for 3 slots, then free: the elastic plan grows when it frees (a
    # change, charged) and covers the work net of every restart it makes
    snap = make_cluster(1, 4, 16)
    busy = (Reservation("node1", 0, 3, Resources(2, 2, 16384), "other"),)
    snap = snap.__class__(snap.machines, busy, snap.slot_seconds, snap.epoch, 0)
    job = make_job(workers=4, workload=4 * NU_IN * 6)
    params = PlacementParams(form=Form.ELASTIC, restart_s=restart_s)
    d = place(job, snap, "yu-rr", params)
    net, changes = _net_work(d, job, restart_s)
    assert net >= job.workload - 1e-6
    assert dict(d.stats)["restarts"] == changes
    free = place(job, snap, "yu-rr", PlacementParams(form=Form.ELASTIC, restart_s=0.0))
    assert d.end_slot >= free.end_slot  # restarts never make a job end sooner
    assert check_decision(d, job, snap) == []


def _contested() -> tuple[ClusterSnapshot, JobRequest]:
    """Four nodes partly held at first (each longer): rounding trials differ."""
    snap = make_cluster(4)
    busy = tuple(
        Reservation(f"node{i + 1}", 0, 2 + i, Resources(2 + i % 2, 2, 8192), f"b{i}")
        for i in range(4)
    )
    job = make_job(workers=8, workload=8 * NU_EX * 5)
    return replace(snap, reservations=busy), job


@pytest.mark.parametrize("form", FORMS)
def test_rounding_trials_are_recorded_typed_with_the_kept_one(form: Form) -> None:
    snap, job = _contested()
    d = place(job, snap, "yu-rr", PlacementParams(form=form, trials=6, seed=3))
    assert d.solver == "highs-lp"
    assert [t.index for t in d.rounding] == list(range(6)) == list(range(d.trials))
    assert not [k for k, _ in d.stats if k.startswith("trial") and ":" in k]
    assert "kept_trial" not in dict(d.stats)
    assert d.kept_trial is not None and not d.kept_rederived
    kept = d.rounding[d.kept_trial]
    if form == Form.NON_ELASTIC:  # the earliest end after repair; ties: the lower index
        ends = [t.repaired_end_slot for t in d.rounding]
        assert kept.repaired_end_slot == min(e for e in ends if e is not None)
        assert kept.repaired_end_slot == d.end_slot  # trimming never moves the end
        assert d.kept_because == earliest_end_reason(d.end_slot - job.arrival_slot + 1)
        assert all(t.workers is not None and t.colocated is not None for t in d.rounding)
        assert all((t.end_slot is None) == (t.workers == 0) for t in d.rounding)
        assert dict(d.stats)["distinct_trial_outcomes"] >= 1
    else:  # fewest violations, then most work (at most V); ties: the lower index
        best = min(d.rounding, key=lambda t: (t.violations, -min(t.work_fraction, 1.0), t.index))
        assert kept == best
        assert d.kept_because.startswith(TrialRule.FEWEST_VIOLATIONS.value)
        assert all(t.end_slot is None and t.repaired_end_slot is None for t in d.rounding)


@pytest.mark.parametrize("form", FORMS)
def test_the_fast_path_draws_no_trials(form: Form) -> None:
    d = place(make_job(workers=2, workload=2 * NU_IN * 3), make_cluster(2), "yu-rr",
              PlacementParams(form=form))  # fmt: skip
    assert d.solver == "fast-path"
    assert (d.rounding, d.kept_trial, d.kept_because, d.trials) == ((), None, "", 0)


def test_a_shifted_decision_shifts_its_trials_but_not_its_reason() -> None:
    snap, job = _contested()
    d = place(job, snap, "yu-rr", PlacementParams(trials=6, seed=3))
    moved = d.shifted(5)
    for before, after in zip(d.rounding, moved.rounding, strict=True):
        assert after.start_slot == (before.start_slot or 0) + 5
        assert after.repaired_end_slot == (before.repaired_end_slot or 0) + 5
        assert after.end_slot == (None if before.end_slot is None else before.end_slot + 5)
        assert (after.workers, after.violations) == (before.workers, before.violations)
    # the reason names the completion (end − arrival + 1), which a shift keeps
    assert moved.kept_because == d.kept_because
    assert moved.kept_because == earliest_end_reason(moved.end_slot - moved.arrival_slot + 1)
