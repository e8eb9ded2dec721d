"""Checkpoint-restart preemption under late binding (placement/yu_rr/preemption.py, sim/engine.py).

* the rule, hand-checked: a long job is paused for many short ones when their gain
  exceeds the restart cost, and not when the cost is larger, when the waiting job is no
  shorter than the run left (the SRPT exchange), when the queue order puts the running job
  first, or when it was preempted ``preempt_max`` times; the gain by rollout (the default)
  beside the exchange's, and a queue behind a node that frees soon, which only the
  rollout sees; with ``preempt_migrate`` a pause stands when the paused job moves at once
  to room the job it was paused for cannot use; with ``preempt_group`` two jobs sharing
  a node are paused together for a wider one, and fall together; with
  ``preempt_regather`` a spread job with less work left than the queue moves to a free
  node before the re-plan gives it away;
* the replay: the short jobs start at once, the long one resumes with its progress minus
  the restart charge; off by default;
* property: over random replays with preemption, capacity is never exceeded, every job
  runs from its arrival, and work is conserved (its runs cover its workload plus the
  restart charges, and less than one slot more), with and without ``preempt_resize``
  (tests/sim/test_preempt_resize.py);
* the live queue refuses the parameter.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slurm_mlsched.errors import InputError
from slurm_mlsched.model import (
    ClusterSnapshot,
    Decision,
    Machine,
    Mode,
    Reservation,
    Resources,
    SlotPlan,
)
from slurm_mlsched.model.decision import Form
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.yu_rr.joint import replan_yu_rr
from slurm_mlsched.placement.yu_rr.late_binding import PendingJob
from slurm_mlsched.placement.yu_rr.per_arrival import place_yu_rr
from slurm_mlsched.placement.yu_rr.preemption import (
    RunningRun,
    choose,
    plan_rate,
    replan_preempting,
    restart_charge,
    victim_cost_s,
)
from slurm_mlsched.sim import SimJob, admit, sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_cluster, make_job

DELTA = 600.0
NU = RESNET.nu_in(DELTA)
NODE = make_cluster(1, 4, 16)  # one node: 4 GPUs, 16 CPUs


def _long_running(slots: int = 100) -> RunningRun:
    """L: 4 workers co-located on the node from slot 0 for ``slots`` slots."""
    job = make_job("L", workers=4, workload=NU * 4 * slots)
    cluster = ClusterSnapshot(NODE.machines, slot_seconds=DELTA)
    d = place_yu_rr(job, cluster, PlacementParams())
    assert (d.start_slot, d.end_slot) == (0, slots - 1)
    return RunningRun(job, 7, d)


def _at(now: int, run: RunningRun) -> ClusterSnapshot:
    return ClusterSnapshot(
        NODE.machines, run.decision.reservations(run.request), DELTA, now_slot=now
    )


def _shorts(n: int, slots: int = 2, arrival: int = 5) -> tuple[PendingJob, ...]:
    return tuple(
        PendingJob(make_job(f"s{i}", workers=1, workload=NU * slots, arrival=arrival), i)
        for i in range(n)
    )


def test_a_long_job_is_paused_for_many_short_ones_when_the_gain_exceeds_the_cost() -> None:
    run = _long_running(100)
    params = PlacementParams(preempt=True, aging=0.0, preempt_gain="exchange")
    (p,) = choose(_shorts(4), (run,), _at(5, run), params)
    # each short one would start when L ends (slot 100) instead of now (5): 95 slots
    # sooner each; L resumes after the longest of them (2 slots): 4·95 − 2 = 378 slots
    assert p.job_id == "L" and p.for_jobs == ("s0", "s1", "s2", "s3")
    assert p.gain_s == pytest.approx(378 * DELTA)
    # the rollout (the default) counts the same, and L's restart inside: its 95 slots of
    # work and the charge take 96 slots, so it ends one slot later than the exchange's
    (r,) = choose(_shorts(4), (run,), _at(5, run), replace(params, preempt_gain="rollout"))
    assert PlacementParams().preempt_gain == "rollout"
    assert (r.job_id, r.for_jobs) == (p.job_id, p.for_jobs)
    assert r.gain_s == pytest.approx(377 * DELTA) and r.cost_s == p.cost_s
    assert p.cost_s == DELTA  # 30 s of restart rounds up to one slot on the grid
    assert p.work_done == pytest.approx(NU * 4 * 5)  # slots 0..4 at 4 workers
    charge = 4 * NU * 30.0 / DELTA  # its fastest rate × restart_s / Δ
    assert p.charge == pytest.approx(charge)
    assert p.resumed.workload == pytest.approx(NU * 4 * 95 + charge)
    assert p.resumed.arrival_slot == 0  # it keeps its place in the aging


def test_a_pause_costs_what_the_restart_charge_adds_to_the_paused_run() -> None:
    # L's last slot is half used (99.5 slots of work at 4 workers): the charge of 30 s
    # (0.05 of a slot at its rate) fits in that slack, so pausing it costs its own
    # completion nothing (``exact``); a whole slot under ``slot`` (the worst case)
    job = make_job("L", workers=4, workload=NU * 4 * 99.5)
    d = place_yu_rr(job, ClusterSnapshot(NODE.machines, slot_seconds=DELTA), PlacementParams())
    assert d.end_slot == 99
    run = RunningRun(job, 7, d)
    left, charge = NU * 4 * 94.5, 4 * NU * 30.0 / DELTA
    exact = PlacementParams(preempt=True)
    assert exact.preempt_cost == "exact"
    assert victim_cost_s(run, left, charge, exact, DELTA) == 0.0
    slot = replace(exact, preempt_cost="slot")
    assert victim_cost_s(run, left, charge, slot, DELTA) == DELTA
    # no slack: the charge spills into one more slot
    assert victim_cost_s(run, NU * 4 * 95, charge, exact, DELTA) == DELTA
    # a charge of 2.5 slots of work from a slot boundary: 3 more slots
    assert victim_cost_s(run, NU * 4 * 95, NU * 4 * 2.5, exact, DELTA) == 3 * DELTA
    # the rule uses it: one short job that would start when L ends (slot 100) instead of
    # now (5) gains 95 − 2 slots, weighed against 0 instead of one slot
    (p,) = choose(_shorts(1), (run,), _at(5, run), replace(exact, aging=0.0))
    assert p.cost_s == 0.0 and p.gain_s == pytest.approx((95 - 2) * DELTA)


def test_a_blocked_jobs_alternative_start_is_the_same_whatever_caps_came_before() -> None:
    # victims ask one blocked job for its start without the preemption, each with its own
    # cap (its end + 1); the scan is kept between them, which must not change an answer
    from slurm_mlsched.placement.program.residual import residual_from
    from slurm_mlsched.placement.yu_rr.preemption import _Blocked

    run = _long_running(40)  # holds the node to slot 39: a 4-worker job fits from 40
    snap = _at(5, run)
    res = residual_from(snap, 5)
    wide = PendingJob(make_job("w", workers=4, workload=NU * 8, arrival=5), 1)
    params = PlacementParams(preempt=True)

    def fresh(cap: int) -> int:
        return _Blocked(wide, (0.0, 0, "w"), res).alt_start(params, DELTA, 5, cap)

    assert fresh(30) == 30 and fresh(41) == 40 and fresh(40) == 40
    kept = _Blocked(wide, (0.0, 0, "w"), res)
    for cap in (12, 30, 20, 41, 40, 200, 39, 6):
        assert kept.alt_start(params, DELTA, 5, cap) == fresh(cap), cap


def test_no_preemption_when_the_restart_cost_is_larger_than_the_gain() -> None:
    run = _long_running(100)
    expensive = PlacementParams(preempt=True, aging=0.0, restart_s=379 * DELTA)
    assert choose(_shorts(4), (run,), _at(5, run), expensive) == ()
    just_below = PlacementParams(preempt=True, aging=0.0, restart_s=377 * DELTA)
    assert [p.job_id for p in choose(_shorts(4), (run,), _at(5, run), just_below)] == ["L"]


def test_no_preemption_when_the_waiting_job_is_no_shorter_than_the_run_left() -> None:
    # L has 3 slots left at slot 97; one waiting job of 3 slots (1 GPU, 4 workers' room):
    # gain = min(100 − 97, 3) − 3 = 0 ≤ cost; a 1-slot one gains 3 − 1 = 2 slots > 1 slot
    run = _long_running(100)
    params = PlacementParams(preempt=True, aging=0.0, preempt_gain="exchange")
    assert choose(_shorts(1, slots=3, arrival=97), (run,), _at(97, run), params) == ()
    (p,) = choose(_shorts(1, slots=1, arrival=97), (run,), _at(97, run), params)
    assert p.gain_s == pytest.approx(2 * DELTA)
    # the rollout: the 3-slot job ends at 99 instead of 102 (3 slots sooner), L with its
    # charge at 103 instead of 99 (4 later): no pause; the 1-slot job ends 3 sooner and L
    # 2 later: 1 slot, net of the restart
    rollout = replace(params, preempt_gain="rollout")
    assert choose(_shorts(1, slots=3, arrival=97), (run,), _at(97, run), rollout) == ()
    (r,) = choose(_shorts(1, slots=1, arrival=97), (run,), _at(97, run), rollout)
    assert r.gain_s == pytest.approx(1 * DELTA)


def test_the_queue_order_and_the_preemption_bound_protect_the_running_job() -> None:
    run = _long_running(100)
    # with aging, L (arrived at 0, 6,000 slots long) keys ahead of jobs arriving 5,000
    # slots later: not paused; without aging (pure smallest service first) it is
    late = _shorts(4, arrival=5000)
    longer = _long_running(6000)
    aged = PlacementParams(preempt=True, aging=1.0)
    assert choose(late, (longer,), _at(5000, longer), aged) == ()
    assert choose(late, (longer,), _at(5000, longer), PlacementParams(preempt=True, aging=0.0))
    # preempted preempt_max times already: not again
    params = PlacementParams(preempt=True)
    tired = RunningRun(run.request, run.seed, run.decision, preemptions=params.preempt_max)
    assert choose(_shorts(4), (tired,), _at(5, tired), params) == ()
    once_less = replace(tired, preemptions=params.preempt_max - 1)
    assert choose(_shorts(4), (once_less,), _at(5, once_less), params)
    # off: never
    assert choose(_shorts(4), (run,), _at(5, run), PlacementParams()) == ()


def _node_frees_soon() -> tuple[
    tuple[RunningRun, RunningRun], ClusterSnapshot, tuple[PendingJob, ...]
]:
    """Two 4-GPU nodes: L (4 workers) holds one to slot 99, M (4 workers) the other to
    slot 9; at slot 5 four 4-worker jobs of 10 slots wait."""
    two = make_cluster(2, 4, 16)
    base = ClusterSnapshot(two.machines, slot_seconds=DELTA)
    long_job = make_job("L", workers=4, workload=NU * 4 * 100)
    short_run = make_job("M", workers=4, workload=NU * 4 * 10)
    first = place_yu_rr(long_job, base, PlacementParams())
    booked = replace(base, reservations=first.reservations(long_job))
    second = place_yu_rr(short_run, booked, PlacementParams())
    assert (first.end_slot, second.end_slot) == (99, 9)
    assert {n for p in (first, second) for n, _ in p.slots[0].workers} == {"node1", "node2"}
    runs = (RunningRun(long_job, 1, first), RunningRun(short_run, 2, second))
    now = ClusterSnapshot(
        two.machines,
        (*first.reservations(long_job), *second.reservations(short_run)),
        DELTA,
        now_slot=5,
    )
    queue = tuple(
        PendingJob(make_job(f"q{i}", workers=4, workload=NU * 4 * 10, arrival=5), i)
        for i in range(4)
    )
    return runs, now, queue


def test_the_rollout_counts_the_whole_queue_behind_a_node_that_frees_soon() -> None:
    """Two 4-GPU nodes: L holds one to slot 99, M the other to slot 9; at slot 5 four
    4-worker jobs of 10 slots wait. The exchange (``preempt_gain = exchange``) sees only the
    first of them, which would start at 10 anyway: 5 − 10 < 0, no pause. The list schedule
    sees the queue: without the pause the four end at 19, 29, 39, 49 and L at 99 (Σ of
    end − 5 + 1: 215 slots); pausing L, they end at 14, 19, 24, 29 and L, resumed last with
    its restart charge (95.05 slots of work: 96 slots), at 120 (186): 29 slots gained, so
    ``rollout`` pauses L."""
    runs, now, queue = _node_frees_soon()
    exchange = PlacementParams(preempt=True, aging=0.0, preempt_gain="exchange")
    assert choose(queue, runs, now, exchange) == ()
    (p,) = choose(queue, runs, now, replace(exchange, preempt_gain="rollout"))
    assert p.job_id == "L" and p.for_jobs == ("q0",)
    assert p.gain_s == pytest.approx(29 * DELTA)


def test_the_forecast_arrivals_enter_the_rollout_only_with_preempt_forecast() -> None:
    """The rollout of the test above, with two more 4-worker jobs of 10 slots that arrived
    at slots 1 and 3. Without ``preempt_forecast`` they change nothing (the gain stays 29
    slots); with it the look-ahead's forecast repeats them every 4 slots over the victim's
    remaining run (at most ``lookahead_max_s``), in both branches, and a pause of L also
    serves those arrivals: the gain grows."""
    runs, now, queue = _node_frees_soon()
    recent = tuple(make_job(f"r{a}", workers=4, workload=NU * 4 * 10, arrival=a) for a in (1, 3))
    params = PlacementParams(preempt=True, aging=0.0)
    (off,) = choose(queue, runs, now, params, recent)
    assert off.gain_s == pytest.approx(29 * DELTA)
    (on,) = choose(queue, runs, now, replace(params, preempt_forecast=True), recent)
    assert on.job_id == "L" and on.gain_s > off.gain_s
    # no history, no forecast: the rule as without it
    (alone,) = choose(queue, runs, now, replace(params, preempt_forecast=True))
    assert alone.gain_s == pytest.approx(29 * DELTA)


def _head_and_follower() -> tuple[list[RunningRun], ClusterSnapshot, tuple[PendingJob, ...]]:
    """One 4-GPU node: L (2 workers, to slot 99) and X (2 workers, to slot 9) hold it; at
    slot 5 H (4 workers, 10 slots, the queue's head) and J (2 workers, 20 slots) wait."""
    base = ClusterSnapshot(NODE.machines, slot_seconds=DELTA)
    held: tuple[Reservation, ...] = ()
    runs = []
    for name, slots in (("L", 100), ("X", 10)):
        job = make_job(name, workers=2, workload=NU * 2 * slots)
        d = place_yu_rr(job, replace(base, reservations=held), PlacementParams())
        assert (d.start_slot, d.end_slot, d.slots[0].workers) == (0, slots - 1, (("node1", 2),))
        held = (*held, *d.reservations(job))
        runs.append(RunningRun(job, len(runs), d))
    now = replace(base, reservations=held, now_slot=5)
    queue = (
        PendingJob(make_job("H", workers=4, workload=NU * 4 * 10, arrival=4), 1),
        PendingJob(make_job("J", workers=2, workload=NU * 2 * 20, arrival=5), 2),
    )
    return runs, now, queue


def test_with_preempt_heads_a_pause_is_not_for_a_job_that_would_delay_the_reserved_head() -> None:
    """Pausing L frees 2 GPUs now and the whole node from slot 10, where the re-plan
    reserves H; J would start in L's room now but hold it past slot 10, so the re-plan
    does not start it. Without ``preempt_heads`` (the default) the pause is chosen for J
    and the re-plan drops it (a re-plan for nothing); with it, it is not chosen."""
    runs, now, queue = _head_and_follower()
    old = PlacementParams(preempt=True, aging=0.0)
    assert not old.preempt_heads
    (p,) = choose(queue, runs, now, old)
    assert (p.job_id, p.for_jobs) == ("L", ("J",))
    step, kept = replan_preempting(queue, runs, now, old, replan_yu_rr)
    assert kept == () and "J" not in {d.job_id for d in step.started}
    assert choose(queue, runs, now, replace(old, preempt_heads=True)) == ()


def test_with_preempt_heads_the_room_passed_to_the_next_victim_holds_no_head_plan() -> None:
    """Three 4-GPU nodes at slot 3: R0 (2 workers, to slot 39) and R2 (2, to 99) share
    node1, R1 (4, to 39) holds node2, R3 (2, to 99) half of node3; Q0 (4 workers, 5
    slots), Q1 (4 workers, one slot's work), Q2 (2) and Q3 (1 worker, 10 slots) wait.
    The rule pauses R1 for Q1, then R0 for Q3. The first pause's room carries the plan of
    a reserved head; a form that passed that room on to the next victim (reverted on
    2026-12-06) reserved the head there a second time and found no job for R0."""
    base = ClusterSnapshot(make_cluster(3, 4, 16).machines, slot_seconds=DELTA)
    held: tuple[Reservation, ...] = ()
    runs = []
    for name, workers, slots, node in (
        ("R0", 2, 40, "node1"), ("R1", 4, 40, "node2"), ("R2", 2, 100, "node1"),
        ("R3", 2, 100, "node3"),
    ):  # fmt: skip
        job = make_job(name, workers=workers, workload=NU * workers * slots)
        d = place_yu_rr(job, replace(base, reservations=held), PlacementParams())
        assert (d.start_slot, d.end_slot, d.slots[0].workers) == (0, slots - 1, ((node, workers),))
        held = (*held, *d.reservations(job))
        runs.append(RunningRun(job, len(runs), d))
    now = replace(base, reservations=held, now_slot=3)
    queue = tuple(
        PendingJob(make_job(name, workers=w, workload=NU * work, arrival=a), 10 + k)
        for k, (name, w, work, a) in enumerate(
            (("Q0", 4, 20, 2), ("Q1", 4, 2, 1), ("Q2", 2, 5, 3), ("Q3", 1, 10, 1))
        )
    )
    params = PlacementParams(preempt=True, aging=0.0, preempt_heads=True)
    chosen = choose(queue, runs, now, params)
    assert [(p.job_id, p.for_jobs) for p in chosen] == [("R1", ("Q1",)), ("R0", ("Q3",))]


def test_with_preempt_room_a_pause_stands_when_the_replan_starts_another_job_in_its_room() -> None:
    """As above, and K (4 workers, 2 slots) waits too. The rule chooses L's pause for J
    (J fits L's 2 GPUs at its requested width; K does not). The re-plan does not start J
    (it would delay H) but starts K narrow in L's room now, on 2 workers to slot 8,
    before H. Without ``preempt_room`` (the default) the pause is dropped, as J did not
    start: K and H then wait to slots 10 and 14. With it the pause stands."""
    runs, now, queue = _head_and_follower()
    queue = (*queue, PendingJob(make_job("K", workers=4, workload=NU * 4 * 2, arrival=5), 3))
    old = PlacementParams(preempt=True, aging=0.0)
    assert not old.preempt_room
    (p,) = choose(queue, runs, now, old)
    assert (p.job_id, p.for_jobs) == ("L", ("J",))
    step, kept = replan_preempting(queue, runs, now, old, replan_yu_rr)
    assert kept == () and step.started == ()
    assert {d.job_id: d.start_slot for d in step.planned} == {"K": 10, "H": 14}
    step, kept = replan_preempting(queue, runs, now, replace(old, preempt_room=True), replan_yu_rr)
    assert [(k.job_id, k.for_jobs) for k in kept] == [("L", ("J",))]
    ((k_run),) = step.started
    assert (k_run.job_id, k_run.start_slot, k_run.end_slot) == ("K", 5, 8)
    assert k_run.slots[0].workers == (("node1", 2),)
    assert {d.job_id: d.start_slot for d in step.planned} == {"H": 10, "J": 20}


def _two_on_one_node(
    other: Machine | None = None,
) -> tuple[tuple[RunningRun, ...], ClusterSnapshot, tuple[PendingJob]]:
    """One 8-GPU v100 node held by two 4-worker jobs A and B to slot 99 (and ``other``,
    idle); at slot 5 an 8-worker job of 5 slots that asks for v100s waits for the node."""
    node = Machine("node1", Resources(8, 64, 131072), gpu_type="v100")
    base = ClusterSnapshot((node,), slot_seconds=DELTA)
    runs: list[RunningRun] = []
    for i, name in enumerate("AB"):
        job = make_job(name, workers=4, workload=NU * 4 * 100)
        held = tuple(r for x in runs for r in x.decision.reservations(x.request))
        d = place_yu_rr(job, replace(base, reservations=held), PlacementParams())
        assert (d.start_slot, d.end_slot, d.slots[0].workers) == (0, 99, (("node1", 4),))
        runs.append(RunningRun(job, i, d))
    now = ClusterSnapshot(
        (node,) if other is None else (node, other),
        tuple(r for x in runs for r in x.decision.reservations(x.request)),
        DELTA,
        now_slot=5,
    )
    wide = replace(
        make_job("W", workers=8, workload=NU * 8 * 5, arrival=5), gpu_types=frozenset({"v100"})
    )
    return tuple(runs), now, (PendingJob(wide, 9),)


def test_two_jobs_sharing_a_node_are_paused_together_for_a_wider_one() -> None:
    """No single pause frees the node (4 GPUs start no 8-worker job), so without
    ``preempt_group`` nothing is paused and W waits 95 slots. Paused together, W runs
    slots 5–9 and A and B, resumed at 10 with their restart charge, end at 105: the total
    of W, A and B from now falls from 100 + 2·95 = 290 slots to 5 + 2·101 = 207, and both
    pauses stand in the re-plan, which starts W now on the node."""
    runs, now, queue = _two_on_one_node()
    plain = PlacementParams(preempt=True, aging=0.0)
    assert choose(queue, runs, now, plain) == ()
    assert replan_preempting(queue, runs, now, plain, replan_yu_rr)[1] == ()
    group = replace(plain, preempt_group=True)
    chosen = choose(queue, runs, now, group)
    assert sorted(p.job_id for p in chosen) == ["A", "B"]
    assert all(p.for_jobs == ("W",) for p in chosen)
    assert {p.job_id: p.group for p in chosen} == {"A": ("B",), "B": ("A",)}
    assert all(p.gain_s == pytest.approx(83 * DELTA) for p in chosen)
    step, kept = replan_preempting(queue, runs, now, group, replan_yu_rr)
    assert sorted(p.job_id for p in kept) == ["A", "B"]
    (started,) = (d for d in step.started if d.job_id == "W")
    assert started.start_slot == 5 and started.slots[0].workers == (("node1", 8),)


def test_a_pause_together_falls_as_one_when_a_member_would_start_again_at_once() -> None:
    """With an idle 4-GPU t4 node beside, B could restart there at once: the re-plan
    drops B's pause (no migration without ``preempt_migrate``) and with it A's, since W
    needs the whole v100 node; the plain re-plan stands and W waits for it."""
    runs, now, queue = _two_on_one_node(Machine("t4", Resources(4, 32, 65536), gpu_type="t4"))
    params = PlacementParams(preempt=True, aging=0.0, preempt_group=True)
    assert sorted(p.job_id for p in choose(queue, runs, now, params)) == ["A", "B"]
    step, kept = replan_preempting(queue, runs, now, params, replan_yu_rr)
    assert kept == ()
    assert "W" not in {d.job_id for d in step.started}


def _replay(preempt: bool, restart_s: float = 30.0) -> dict[str, object]:
    jobs = sim_jobs(
        [(make_job("L", workers=4, workload=NU * 4 * 100), 0.0)]
        + [(make_job(f"s{i}", workers=1, workload=NU * 2), 2900.0) for i in range(4)],
        DELTA,
    )
    params = PlacementParams(preempt=preempt, aging=0.0, restart_s=restart_s)
    result = simulate(jobs, NODE, "yu-rr", params)
    assert capacity_violations(result) == [] and decision_problems(result) == []
    return {o.job.job_id: o.decision for o in result.outcomes}


def test_a_pause_stands_when_the_paused_job_moves_at_once_with_preempt_migrate() -> None:
    """L runs on the only v100 node; S asks for v100 GPUs, so it can start only in L's
    room, while L fits the idle t4 node. The rule pauses L for S; the re-plan starts S on
    the v100 node and L again at once on the t4 node (a migration: L pays its restart and
    ends one slot later). Without ``preempt_migrate`` the pause is dropped because L
    starts again, and S waits for L's end."""
    machines = (
        Machine("a", Resources(4, 16, 65536), gpu_type="v100"),
        Machine("c", Resources(4, 16, 65536), gpu_type="t4"),
    )
    long_job = make_job("L", workers=4, workload=NU * 4 * 100)
    d = place_yu_rr(long_job, ClusterSnapshot(machines[:1], slot_seconds=DELTA), PlacementParams())
    assert (d.start_slot, d.end_slot, d.slots[0].workers) == (0, 99, (("a", 4),))
    run = RunningRun(long_job, 7, d)
    short = replace(
        make_job("S", workers=4, workload=NU * 4 * 3, arrival=5), gpu_types=frozenset({"v100"})
    )
    snap = ClusterSnapshot(machines, d.reservations(long_job), DELTA, now_slot=5)
    waiting = (PendingJob(short, 1),)
    moved = PlacementParams(preempt=True, preempt_migrate=True)
    (p,) = choose(waiting, (run,), snap, moved)
    assert (p.job_id, p.for_jobs) == ("L", ("S",)) and p.gain_s > 0
    step, chosen = replan_preempting(waiting, (run,), snap, moved, replan_yu_rr)
    assert [c.job_id for c in chosen] == ["L"]
    started = {x.job_id: x for x in step.started}
    assert started["S"].slots[0].workers == (("a", 4),) and started["S"].end_slot == 7
    assert started["L"].slots[0].workers == (("c", 4),) and started["L"].start_slot == 5
    assert started["L"].end_slot == 100  # its 95 slots of work left and the restart charge
    step, chosen = replan_preempting(
        waiting, (run,), snap, replace(moved, preempt_migrate=False), replan_yu_rr
    )
    assert chosen == () and step.started == ()
    assert [(x.job_id, x.start_slot) for x in step.planned] == [("S", 100)]


def _spread_run() -> tuple[ClusterSnapshot, RunningRun]:
    """Two 4-GPU nodes; V, 8 workers spread 4 + 4 with its 2 PSs on a, for 100 slots
    from slot 0 (at 8 · ν_ex; 4 co-located workers would be faster, 4 · ν_in)."""
    machines = (Machine("a", Resources(4, 16, 65536)), Machine("b", Resources(4, 16, 65536)))
    wide = make_job("V", workers=8, workload=RESNET.nu_ex(DELTA) * 8 * 100)
    plan = SlotPlan(0, Mode.DISTRIBUTED, (("a", 4), ("b", 4)), (("a", wide.ps_needed(8)),), 100)
    rate = plan_rate(plan, wide, DELTA)
    d = Decision(
        job_id="V", policy="yu-rr", form=Form.NON_ELASTIC, seed=7, slots=(plan,),
        start_slot=0, end_slot=99, work_covered=rate * 100,
    )  # fmt: skip
    return ClusterSnapshot(machines, d.reservations(wide), DELTA, now_slot=5), RunningRun(
        wide, 7, d
    )


def _spread_on_small_nodes() -> tuple[ClusterSnapshot, RunningRun]:
    """An idle 8-GPU node ``big`` and four 1-GPU nodes; S, 4 workers spread over the small
    ones (its PS on one1) for 40 slots from slot 0, at 4 · ν_ex; now is slot 5."""
    machines = (
        Machine("big", Resources(8, 64, 524288)),
        *(Machine(f"one{i}", Resources(1, 8, 65536)) for i in range(1, 5)),
    )
    job = make_job("S", workers=4, workload=RESNET.nu_ex(DELTA) * 4 * 40)
    workers = tuple((f"one{i}", 1) for i in range(1, 5))
    plan = SlotPlan(0, Mode.DISTRIBUTED, workers, (("one1", job.ps_needed(4)),), 40)
    rate = plan_rate(plan, job, DELTA)
    d = Decision(
        job_id="S", policy="yu-rr", form=Form.NON_ELASTIC, seed=3, slots=(plan,),
        start_slot=0, end_slot=39, work_covered=rate * 40,
    )  # fmt: skip
    return ClusterSnapshot(machines, d.reservations(job), DELTA, now_slot=5), RunningRun(job, 3, d)


def test_a_spread_job_regathers_on_a_free_node_before_a_longer_waiting_job() -> None:
    """The 8-GPU node is free; W, 8 workers and 200 slots of work, waits. Without
    ``preempt_regather`` the re-plan gives the node to W and S runs on spread to slot 39.
    With it S, whose work left is far less (its key below W's), is re-decided first and
    restarts now co-located on the node, ending sooner: SRPT on machines of unequal speed."""
    snap, run = _spread_on_small_nodes()
    waiting = (PendingJob(make_job("W", workers=8, workload=NU * 8 * 200, arrival=5), 1),)
    plain = PlacementParams(preempt=True, preempt_resize=True)
    step, chosen = replan_preempting(waiting, (run,), snap, plain, replan_yu_rr)
    assert chosen == ()
    assert [(d.job_id, d.slots[0].workers) for d in step.started] == [("W", (("big", 8),))]
    on = replace(plain, preempt_regather=True)
    step, chosen = replan_preempting(waiting, (run,), snap, on, replan_yu_rr)
    assert [(c.job_id, c.for_jobs) for c in chosen] == [("S", ())]
    started = {d.job_id: d for d in step.started}
    s = started["S"]
    assert s.start_slot == 5 and s.slots[0].mode == Mode.COLOCATED
    assert s.slots[0].workers == (("big", 4),) and s.end_slot < 39
    assert "W" not in started or started["W"].slots[0].workers != (("big", 8),)


def test_no_regather_before_a_waiting_job_with_less_work_left() -> None:
    """W has one slot of work: its key is below S's, so the node is W's, as without the
    rule (SRPT gives the fast machine to the shorter job)."""
    snap, run = _spread_on_small_nodes()
    waiting = (PendingJob(make_job("W", workers=8, workload=NU * 8, arrival=5), 1),)
    on = PlacementParams(preempt=True, preempt_resize=True, preempt_regather=True)
    step, chosen = replan_preempting(waiting, (run,), snap, on, replan_yu_rr)
    assert "S" not in {c.job_id for c in chosen}
    assert ("W", (("big", 8),)) in [(d.job_id, d.slots[0].workers) for d in step.started]


def test_a_shrink_restarts_the_job_narrower_on_its_own_machines() -> None:
    """Two 2-worker jobs of 3 slots arrive at slot 5. A pause of V would let them start,
    but V would start again at once (4 co-located workers fit the node they leave), so the
    re-plan drops the pause and they wait for V's end at 100. With ``preempt_shrink`` V
    restarts at once on b, 4 workers beside one PS (faster than its spread run: it ends
    at 84 with the restart charge), and both start on a."""
    snap, run = _spread_run()
    waiting = tuple(
        PendingJob(make_job(f"S{i}", workers=2, workload=NU * 2 * 3, arrival=5), i)
        for i in range(2)
    )
    plain = PlacementParams(preempt=True)
    step, chosen = replan_preempting(waiting, (run,), snap, plain, replan_yu_rr)
    assert chosen == () and step.started == ()
    assert [(x.job_id, x.start_slot) for x in step.planned] == [("S0", 100), ("S1", 100)]
    on = replace(plain, preempt_shrink=True)
    (p,) = choose(waiting, (run,), snap, on)
    assert (p.job_id, p.for_jobs) == ("V", ("S0", "S1")) and p.restart is not None
    assert p.restart.slots[0].mode == Mode.COLOCATED
    assert (p.restart.slots[0].workers, p.restart.slots[0].ps) == ((("b", 4),), (("b", 1),))
    step, chosen = replan_preempting(waiting, (run,), snap, on, replan_yu_rr)
    assert [c.job_id for c in chosen] == ["V"]
    started = {x.job_id: x for x in step.started}
    assert started["V"] == p.restart and (started["V"].start_slot, started["V"].end_slot) == (5, 84)
    for i in range(2):
        assert started[f"S{i}"].slots[0].workers == (("a", 2),)
        assert (started[f"S{i}"].start_slot, started[f"S{i}"].end_slot) == (5, 7)


def test_a_pause_is_kept_where_it_gains_more_than_a_shrink() -> None:
    """Three 2-worker jobs take 6 of V's 8 GPUs: V shrunk to 2 workers would crawl, so
    the rule pauses it whole (the three end at 7, V resumes at 8)."""
    snap, run = _spread_run()
    waiting = tuple(
        PendingJob(make_job(f"S{i}", workers=2, workload=NU * 2 * 3, arrival=5), i)
        for i in range(3)
    )
    (p,) = choose(waiting, (run,), snap, PlacementParams(preempt=True, preempt_shrink=True))
    assert p.for_jobs == ("S0", "S1", "S2") and p.restart is None


def _fragmented() -> tuple[ClusterSnapshot, RunningRun, tuple[PendingJob, ...]]:
    """A 4-GPU node "big" and a 1-GPU node "one" (idle). L, one worker for 100 slots,
    runs on big since slot 0 (it came when one was busy); W, 4 workers, arrives at slot 5:
    it fits big only without L, or spreads over big's 3 free GPUs and one at the network
    rate. L's key (95 GPU-slots left) is below W's (160), so no pause is allowed for W."""
    machines = (Machine("big", Resources(4, 16, 65536)), Machine("one", Resources(1, 16, 65536)))
    long_job = make_job("L", workers=1, workload=NU * 100)
    d = place_yu_rr(long_job, ClusterSnapshot(machines[:1], slot_seconds=DELTA), PlacementParams())
    assert (d.start_slot, d.end_slot, d.slots[0].workers) == (0, 99, (("big", 1),))
    run = RunningRun(long_job, 7, d)
    snap = ClusterSnapshot(machines, d.reservations(long_job), DELTA, now_slot=5)
    wide = make_job("W", workers=4, workload=NU * 4 * 40, arrival=5)
    return snap, run, (PendingJob(wide, 1),)


def test_a_job_moves_to_a_smaller_node_so_that_a_wide_one_starts_co_located() -> None:
    snap, run, waiting = _fragmented()
    on = PlacementParams(preempt=True, preempt_defrag=True)
    moves = choose(waiting, (run,), snap, on)
    assert [(m.job_id, m.for_jobs, m.move) for m in moves] == [("L", ("W",), True)]
    assert moves[0].gain_s > 0
    step, chosen = replan_preempting(waiting, (run,), snap, on, replan_yu_rr)
    assert [c.job_id for c in chosen] == ["L"]
    started = {x.job_id: x for x in step.started}
    # W starts now on the whole of big at the co-located rate (40 slots), L at once on one
    # with its 95 slots of work left and the restart charge (it ends one slot later)
    assert started["W"].slots[0].workers == (("big", 4),)
    assert (started["W"].start_slot, started["W"].end_slot) == (5, 44)
    assert started["L"].slots[0].workers == (("one", 1),)
    assert (started["L"].start_slot, started["L"].end_slot) == (5, 100)
    # without the move W spreads now at the network rate and ends later
    off = replace(on, preempt_defrag=False)
    assert choose(waiting, (run,), snap, off) == ()
    step, chosen = replan_preempting(waiting, (run,), snap, off, replan_yu_rr)
    assert chosen == ()
    (w,) = [x for x in step.started if x.job_id == "W"] or step.planned
    assert w.end_slot > 44


def test_no_move_when_the_smaller_node_is_busy_or_would_slow_the_job() -> None:
    snap, run, waiting = _fragmented()
    on = PlacementParams(preempt=True, preempt_defrag=True)
    # one is taken by another running job: nowhere to move L
    other = make_job("O", workers=1, workload=NU * 50)
    d = place_yu_rr(
        other, ClusterSnapshot(snap.machines[1:], slot_seconds=DELTA), PlacementParams()
    )
    busy = replace(snap, reservations=(*snap.reservations, *d.reservations(other)))
    assert choose(waiting, (run, RunningRun(other, 3, d)), busy, on) == ()
    # L runs with 2 workers on big: one holds only one of them, so a move would slow it
    two = make_job("L", workers=2, workload=NU * 2 * 50)
    d2 = place_yu_rr(two, ClusterSnapshot(snap.machines[:1], slot_seconds=DELTA), PlacementParams())
    snap2 = replace(snap, reservations=d2.reservations(two))
    assert choose(waiting, (RunningRun(two, 7, d2),), snap2, on) == ()


def test_the_replay_pauses_the_long_job_and_resumes_it_with_its_progress() -> None:
    off = _replay(False)
    assert off["L"].end_slot == 99 and off["s0"].start_slot == 100  # type: ignore[attr-defined]
    on = _replay(True)
    long_ = on["L"]
    for i in range(4):
        assert on[f"s{i}"].start_slot == 5  # type: ignore[attr-defined]
    # L ran slots 0..4, waited 5..6 while the short ones ran, then resumed: 95 slots of
    # work + the charge (0.2 of a worker-slot) need 96 slots: 7..102
    assert [(p.slot, p.length) for p in long_.slots] == [(0, 5), (7, 96)]  # type: ignore[attr-defined]
    stats = dict(long_.stats)  # type: ignore[attr-defined]
    assert stats["restarts"] == 1.0
    assert stats["restart_work"] == pytest.approx(4 * NU * 30.0 / DELTA)
    avg_off = sum(d.end_slot for d in off.values())  # type: ignore[attr-defined]
    avg_on = sum(d.end_slot for d in on.values())  # type: ignore[attr-defined]
    assert avg_on < avg_off


def test_a_restart_cost_larger_than_the_gain_leaves_the_replay_as_without() -> None:
    big = 10**7
    assert {k: v.slots for k, v in _replay(True, big).items()} == {  # type: ignore[attr-defined]
        k: v.slots  # type: ignore[attr-defined]
        for k, v in _replay(False, big).items()
    }


@st.composite
def replays(draw: st.DrawFn) -> tuple[ClusterSnapshot, list[SimJob]]:
    n = draw(st.integers(1, 3))
    machines = tuple(
        Machine(f"n{i}", Resources(draw(st.sampled_from([1, 2, 4])), 16, 65536)) for i in range(n)
    )
    entries = []
    for i in range(draw(st.integers(2, 12))):
        workers = draw(st.integers(1, 4))
        slots = draw(st.sampled_from([0.5, 1.0, 2.5, 8.0, 30.0, 80.0]))
        job = make_job(f"j{i:02d}", workers=workers, workload=NU * workers * slots)
        entries.append((job, draw(st.sampled_from([0.0, 300.0, 1500.0, 4000.0, 9000.0]))))
    return ClusterSnapshot(machines, slot_seconds=DELTA), sim_jobs(entries, DELTA)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    replays(),
    st.sampled_from([0.0, 0.3]),
    st.sampled_from([0.0, 30.0, 900.0]),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_preemption_keeps_capacity_and_conserves_work(
    case: tuple[ClusterSnapshot, list[SimJob]],
    aging: float,
    restart_s: float,
    resize: bool,
    migrate: bool,
    defrag: bool,
    shrink: bool,
    group: bool,
    regather: bool,
) -> None:
    cluster, jobs = case
    admitted, _ = admit(jobs, cluster)
    params = PlacementParams(
        preempt=True,
        aging=aging,
        restart_s=restart_s,
        preempt_resize=resize,
        preempt_migrate=migrate,
        preempt_defrag=defrag,
        preempt_shrink=shrink,
        preempt_group=group,
        preempt_regather=regather,
    )
    result = simulate(admitted, cluster, "yu-rr", params)
    assert capacity_violations(result) == []
    assert decision_problems(result) == []  # from arrival on, PS rules, work ≥ workload
    assert len(result.outcomes) == len(admitted)
    for o in result.outcomes:
        d, job = o.decision, o.job.request
        assert d is not None
        stats = dict(d.stats)
        restarts = int(stats.get("restarts", 0))
        assert restarts <= params.preempt_max
        charged = stats.get("restart_work", 0.0)
        covered = sum(plan_rate(p, job, DELTA) * p.length for p in d.slots)
        assert covered == pytest.approx(d.work_covered)
        # progress + restart charges: the runs cover the workload plus every charge, and
        # the last run overshoots by less than one of its slots (nothing else is lost)
        assert covered >= job.workload + charged - 1e-6
        assert covered < job.workload + charged + plan_rate(d.slots[-1], job, DELTA) + 1e-6
        if restarts:
            one = restart_charge(job, _caps(cluster), DELTA, restart_s)
            assert charged == pytest.approx(restarts * one)
            assert len(d.slots) >= 2 and d.start_slot >= job.arrival_slot


def _caps(cluster: ClusterSnapshot) -> np.ndarray:
    return np.array([m.capacity.as_tuple() for m in cluster.machines])


def test_the_live_queue_refuses_preemption_from_a_decisions_parameters() -> None:
    """On the live queue preemption is the site's setting (``mlsub replan`` with
    ``preempt = true``: tests/unit/test_live_preemption.py), never a stored parameter."""
    from slurm_mlsched.services import replan

    class Entry:
        params = PlacementParams(preempt=True)
        params_policy = "yu-rr"
        key = "k"

    with pytest.raises(InputError, match="the site's setting"):
        replan.queue_step([Entry()], NODE)  # type: ignore[list-item]


def test_the_live_queue_moves_a_job_as_the_site_says_whatever_a_decision_stored() -> None:
    """Moves to a smaller node (``preempt_defrag``) on the live queue are the site's
    setting (``preempt_defrag`` in the site file), like ``preempt_resize``: the step turns
    them on or off as the caller says, whatever a decision stored (docs/formulation.md
    §16, "Live"), and never without preemption."""
    from slurm_mlsched.services.live_queue import _step_inputs

    def entry(stored: bool) -> object:
        class Entry:
            params = PlacementParams(preempt_defrag=stored)
            params_policy = "yu-rr"
            key = "k"
            request = make_job("a")
            seed = 0
            plan = None
            record = None

        return Entry()

    for stored in (False, True):
        off, _, pending = _step_inputs([entry(stored)], preempt=True)  # type: ignore[list-item]
        assert off.preempt and not off.preempt_defrag
        assert [p.request.job_id for p in pending] == ["a"]
        on, _, _ = _step_inputs([entry(stored)], preempt=True, defrag=True)  # type: ignore[list-item]
        assert on.preempt and on.preempt_defrag
        plain, _, _ = _step_inputs([entry(stored)], defrag=True)  # type: ignore[list-item]
        assert not plain.preempt and not plain.preempt_defrag
