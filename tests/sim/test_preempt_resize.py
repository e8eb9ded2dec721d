"""Resize by checkpoint-restart (``preempt_resize``; placement/yu_rr/preemption.grow).

* the story: a 4-worker job that started on the 2 GPUs left beside a 2-GPU job grows to
  4 when that job ends, and the total completion time falls; when the grow would save
  no more than the restart cost, nothing changes; a job that would wait for its width
  starts narrow and grows; off by default;
* the rule on one event: the grown run starts now in the room the step leaves, the pause
  is for the job itself; also for a job paused ``preempt_max`` times (that limit is for
  pauses for waiting jobs), not for one already in its fastest shape, never into the
  room of a job the step started; no narrow start that alone would end more than
  ``narrow_regret`` × later than the plan it replaces;
* the property of tests/sim/test_preemption.py (capacity, work conserved) is drawn with
  ``preempt_resize`` on too.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.model import ClusterSnapshot
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.registry import get_queue
from slurm_mlsched.placement.yu_rr.late_binding import PendingJob
from slurm_mlsched.placement.yu_rr.per_arrival import place_yu_rr
from slurm_mlsched.placement.yu_rr.preemption import (
    RunningRun,
    replan_preempting,
    restart_charge,
)
from slurm_mlsched.sim import SimJob, admit, sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_cluster, make_job
from tests.sim.test_preemption import replays

DELTA = 600.0
NU = RESNET.nu_in(DELTA)
NODE = make_cluster(1, 4, 16)  # one node: 4 GPUs, 16 CPUs


def _params(resize: bool, **kw: object) -> PlacementParams:
    # look-ahead off: the story's narrow start is the per-job decision's own choice
    return PlacementParams(
        preempt=True,
        preempt_resize=resize,
        aging=0.0,
        lookahead=False,
        **kw,  # type: ignore[arg-type]
    )


def _story(b_slots: int, resize: bool, b_workers: int = 2, **kw: object) -> dict[str, object]:
    """B: ``b_workers`` workers for ``b_slots`` slots from slot 0; N: 4 workers' worth of
    100 slots, arriving just after B, so it starts at 2 workers beside B (ends at 200 > B's
    end + 100)."""
    jobs = sim_jobs(
        [
            (make_job("B", workers=b_workers, workload=NU * b_workers * b_slots), 0.0),
            (make_job("N", workers=4, workload=NU * 4 * 100), 1.0),
        ],
        DELTA,
    )
    result = simulate(jobs, NODE, "yu-rr", _params(resize, **kw))
    assert capacity_violations(result) == [] and decision_problems(result) == []
    return {o.job.job_id: o.decision for o in result.outcomes}


def _runs(d: object) -> list[tuple[int, int, int]]:
    return [(p.slot, p.length, p.total_workers) for p in d.slots]  # type: ignore[attr-defined]


def test_a_narrow_job_grows_when_the_room_frees_and_the_total_completion_time_falls() -> None:
    off = _story(180, resize=False)
    assert _runs(off["N"]) == [(1, 200, 2)]  # non-elastic: 2 workers to the end
    on = _story(180, resize=True)
    # N ran 179 slots at 2 (358 worker-slots of 400), then resumed at 4 when B ended:
    # 42 left + the restart charge (0.2) = 10.55 slots at 4 workers -> 11 slots, 180..190
    assert _runs(on["N"]) == [(1, 179, 2), (180, 11, 4)]
    stats = dict(on["N"].stats)  # type: ignore[attr-defined]
    assert stats["restarts"] == 1.0
    assert stats["restart_work"] == pytest.approx(4 * NU * 30.0 / DELTA)
    assert _runs(on["B"]) == _runs(off["B"])  # nothing else moved
    total = {k: sum(d.end_slot for d in v.values()) for k, v in (("off", off), ("on", on))}  # type: ignore[attr-defined]
    assert total["on"] == total["off"] - 10


def test_no_resize_when_growing_saves_no_more_than_the_restart_cost() -> None:
    # B ends at 197: N has 8 worker-slots left, 2.05 slots at 4 workers (ends 199) against
    # its run's end 200 — one slot sooner, not more than the restart cost (one slot)
    on, off = _story(197, resize=True), _story(197, resize=False)
    assert {k: _runs(v) for k, v in on.items()} == {k: _runs(v) for k, v in off.items()}
    assert "restarts" not in dict(on["N"].stats)  # type: ignore[attr-defined]


def test_a_job_that_waits_for_its_width_starts_narrow_and_grows() -> None:
    # B ends at 60: N's decision waits for 4 workers (60..159 beats 2 workers to 200);
    # with resize it starts now at 2 (59 slots: 118 worker-slots), then grows at 60 when
    # B ends: 282 + the charge 0.2 at 4 workers = 70.55 -> 71 slots, 60..130
    off = _story(60, resize=False)
    assert _runs(off["N"]) == [(60, 100, 4)]
    on = _story(60, resize=True)
    assert _runs(on["N"]) == [(1, 59, 2), (60, 71, 4)]
    assert _runs(on["B"]) == _runs(off["B"])
    assert dict(on["N"].stats)["restarts"] == 1.0  # type: ignore[attr-defined]


def test_no_narrow_start_that_alone_would_end_more_than_narrow_regret_times_later() -> None:
    # B holds 3 GPUs until slot 10: N's plan waits for 4 (10..109). Started now at the one
    # GPU left and grown at 10 it would end at 107, more than the restart cost sooner, but
    # should the grow never come it would run 400 slots alone, ending at 400 > 2 × 109
    guarded = _story(10, resize=True, b_workers=3)
    assert _runs(guarded["N"]) == [(10, 100, 4)]
    bet = _story(10, resize=True, b_workers=3, narrow_regret=0.0)  # 0: no guard
    assert _runs(bet["N"]) == [(1, 9, 1), (10, 98, 4)]
    assert _runs(bet["B"]) == _runs(guarded["B"])


def test_off_by_default() -> None:
    assert PlacementParams().preempt_resize is False
    on = _story(180, resize=False)
    assert len(on["N"].slots) == 1  # type: ignore[attr-defined]


def _narrow_running(now: int) -> tuple[RunningRun, ClusterSnapshot]:
    """N: 2 of its 4 workers on the node from slot 0 for 200 slots, alone at ``now``."""
    job = make_job("N", workers=2, workload=NU * 2 * 200)
    d = place_yu_rr(job, ClusterSnapshot(NODE.machines, slot_seconds=DELTA), PlacementParams())
    assert (d.start_slot, d.end_slot, d.slots[0].total_workers) == (0, 199, 2)
    wide = make_job("N", workers=4, workload=NU * 2 * 200)  # its request allows 4
    run = RunningRun(wide, 3, d)
    return run, ClusterSnapshot(NODE.machines, d.reservations(wide), DELTA, now_slot=now)


def _replan(
    pending: tuple[PendingJob, ...], run: RunningRun, snap: ClusterSnapshot, params: PlacementParams
):  # type: ignore[no-untyped-def]
    queue = get_queue("yu-rr", params)
    assert queue is not None
    return replan_preempting(pending, (run,), snap, params, queue)


def test_the_rule_restarts_a_narrow_run_wider_in_the_same_step() -> None:
    run, snap = _narrow_running(100)
    step, paused = _replan((), run, snap, _params(True))
    (p,) = paused
    assert p.job_id == "N" and p.for_jobs == ()
    charge = restart_charge(run.request, NODE_CAPS, DELTA, 30.0)
    # 200 worker-slots left + the charge, at 4 workers: 50.05 -> 51 slots, 100..150
    assert p.resumed.workload == pytest.approx(NU * 2 * 100 + charge)
    (d,) = step.started
    assert (d.job_id, d.start_slot, d.end_slot, d.slots[0].total_workers) == ("N", 100, 150, 4)
    assert p.gain_s == pytest.approx((199 - 150) * DELTA) and p.cost_s == DELTA
    # off, tired, or ending within the restart cost: nothing
    assert _replan((), run, snap, _params(False)) == (step.__class__(()), ())
    # preempt_max limits pauses for waiting jobs only: each grow pays on its own and
    # leaves the job strictly faster, so a run paused that often still grows
    tired = RunningRun(run.request, run.seed, run.decision, preemptions=8)
    t_step, t_paused = _replan((), tired, snap, _params(True, preempt_max=8))
    assert [(x.job_id, x.for_jobs, x.gain_s) for x in t_paused] == [("N", (), p.gain_s)]
    assert [(x.job_id, x.slots) for x in t_step.started] == [(d.job_id, d.slots)]
    late_run, late = _narrow_running(199)
    assert _replan((), late_run, late, _params(True))[1] == ()


def test_the_rule_leaves_a_run_in_its_fastest_shape_and_the_step_s_starts_alone() -> None:
    run, snap = _narrow_running(100)
    fast = RunningRun(make_job("N", workers=2, workload=run.request.workload), 3, run.decision)
    assert _replan((), fast, snap, _params(True))[1] == ()  # 2 is its widest
    # a waiting 2-worker job takes the 2 idle GPUs in the step: no room left to grow into
    other = PendingJob(make_job("W", workers=2, workload=NU * 2 * 10, arrival=100), 5)
    step, paused = _replan((other,), run, snap, _params(True))
    assert paused == () and [d.job_id for d in step.started] == ["W"]


NODE_CAPS = __import__("numpy").array([m.capacity.as_tuple() for m in NODE.machines])


def test_only_pauses_for_waiting_jobs_count_towards_preempt_max() -> None:
    """The replay's history of a job: a resize (``for_jobs`` empty) is a restart but not a
    pause, so ``preempt_max`` (read from ``pauses``) does not stop a job that grew."""
    from slurm_mlsched.placement.yu_rr.preemption import Preemption
    from slurm_mlsched.sim.engine import _History

    run, _ = _narrow_running(100)
    grow = Preemption("N", run.request, 1.0, 0.2, (), 600.0, 600.0)
    pause = Preemption("N", run.request, 1.0, 0.2, ("W",), 600.0, 600.0)
    h = _History().paused(run, 100, grow).paused(run, 120, grow).paused(run, 140, pause)
    assert (h.preemptions, h.pauses) == (3, 1)


def _screen_changes_nothing(
    case: tuple[ClusterSnapshot, list[SimJob]], params: PlacementParams, screen: str
) -> None:
    """Every job's runs are the same with ``preemption.<screen>`` as with it always
    passing (a screen may skip only what the rule's own tests reject)."""
    from unittest import mock

    from slurm_mlsched.placement.yu_rr import preemption

    cluster, jobs = case
    admitted, _ = admit(jobs, cluster)

    def runs() -> dict[str, list[tuple[int, int, int]]]:
        result = simulate(admitted, cluster, "yu-rr", params)
        return {o.job.job_id: _runs(o.decision) for o in result.outcomes}

    screened = runs()
    with mock.patch.object(preemption, screen, lambda *a, **k: True):
        assert runs() == screened


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replays(), st.sampled_from([0.0, 2.0]), st.sampled_from([30.0, 900.0]))
def test_the_narrow_start_screen_changes_no_decision(
    case: tuple[ClusterSnapshot, list[SimJob]], regret: float, restart_s: float
) -> None:
    """``preemption._may_pay`` skips only narrow starts the decision's own tests reject:
    every job's runs are the same with the screen as with it always passing."""
    params = _params(True, narrow_regret=regret, restart_s=restart_s)
    _screen_changes_nothing(case, params, "_may_pay")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replays(), st.sampled_from([30.0, 900.0]), st.booleans())
def test_the_pause_room_screen_changes_no_decision(
    case: tuple[ClusterSnapshot, list[SimJob]], restart_s: float, resize: bool
) -> None:
    """``preemption._may_fit`` skips a waiting job for a victim's room only when the room's
    total is below what its requested width needs: every job's runs are the same with the
    screen as with it always passing."""
    _screen_changes_nothing(case, _params(resize, restart_s=restart_s), "_may_fit")
