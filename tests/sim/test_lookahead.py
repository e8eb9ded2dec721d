"""The look-ahead of narrow starts under late binding (placement/yu_rr/lookahead.py).

* the forecast repeats the recent window (ids, slots, horizon, nothing seen);
* a wide job that would start narrow and hold the room the coming short jobs need waits
  instead, and the total completion time falls;
* never held back: a start at the requested width, a job with nothing else running, a
  job that has waited its patience (patience 0 = no look-ahead at all).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from slurm_mlsched.model import Reservation, Resources
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.program.residual import residual_from
from slurm_mlsched.placement.yu_rr.lookahead import MAX_FORECAST, forecast, holds_back
from slurm_mlsched.placement.yu_rr.per_arrival import place_yu_rr
from slurm_mlsched.sim import sim_jobs, simulate
from slurm_mlsched.sim.check import capacity_violations, decision_problems
from tests.conftest import RESNET, make_cluster, make_job

DELTA = 600.0
NU = RESNET.nu_in(DELTA)
NX = RESNET.nu_ex(DELTA)


def test_the_forecast_repeats_the_recent_window() -> None:
    seen = [make_job(f"j{a}", arrival=a) for a in (2, 10, 12, 15)]
    out = forecast(seen, now=20, horizon=10)
    # the window [10, 20) repeats 10 slots later; j2 is older than the window
    assert [(j.job_id, j.arrival_slot) for j in out] == [
        ("forecast:1:j10", 20),
        ("forecast:1:j12", 22),
        ("forecast:1:j15", 25),
    ]
    # a longer horizon than the history: the 18 slots seen repeat until they cover it
    longer = forecast(seen, now=20, horizon=40)
    assert [j.arrival_slot for j in longer] == [20, 28, 30, 33, 38, 46, 48, 51, 56]
    assert all(20 <= j.arrival_slot < 60 for j in longer)


def test_no_history_no_forecast() -> None:
    assert forecast([], now=20, horizon=10) == ()
    assert forecast([make_job("j", arrival=5)], now=20, horizon=0) == ()
    assert forecast([make_job("late", arrival=25)], now=20, horizon=10) == ()  # not seen yet
    many = [make_job(f"j{k}", arrival=k % 10) for k in range(1000)]
    assert len(forecast(many, now=10, horizon=10)) == MAX_FORECAST


def _story() -> list[tuple[object, float]]:
    # 16 GPUs. L holds 8 of them for 15 slots. B (16 workers, 10 slots at full width)
    # arrives in slot 4: the other 8 are free, so alone it would start narrow at once and
    # hold them for its whole, longer run. Short 4-GPU jobs arrive every other slot.
    entries: list[tuple[object, float]] = [
        (make_job("L", workers=8, workload=NX * 8 * 15), 0.0),
        (make_job("B", workers=16, workload=NX * 16 * 10), 4 * DELTA - 1),
    ]
    for k in range(15):
        entries.append((make_job(f"s{k}", workers=4, workload=NU * 4), (1 + 2 * k) * DELTA - 1))
    return entries


def _run(
    params: PlacementParams,
    story: Callable[[], list[tuple[object, float]]] = _story,
    nodes: int = 4,
) -> dict[str, object]:
    jobs = sim_jobs(story(), DELTA)  # type: ignore[arg-type]
    result = simulate(jobs, make_cluster(nodes, 4, 16), "yu-rr", params)
    assert capacity_violations(result) == [] and decision_problems(result) == []
    assert not result.rejected and len(result.decisions) == len(jobs)
    return {d.job_id: d for d in result.decisions}


def _total(decisions: dict[str, object]) -> int:
    return sum(d.completion_slots for d in decisions.values())  # type: ignore[attr-defined]


def test_a_narrow_start_waits_for_the_jobs_the_forecast_expects() -> None:
    blind = _run(PlacementParams(lookahead=False))
    seeing = _run(PlacementParams())
    b0, b1 = blind["B"], seeing["B"]
    assert b0.start_slot == 4 and b0.slots[0].total_workers < 16  # type: ignore[attr-defined]
    assert b1.start_slot > 4  # type: ignore[attr-defined]  # held back
    assert _total(seeing) < _total(blind), (_total(seeing), _total(blind))
    # the bound: held back no longer than its patience × the narrow run it was offered
    narrow_run = b0.end_slot - b0.start_slot + 1  # type: ignore[attr-defined]
    assert b1.start_slot - 4 <= narrow_run  # type: ignore[attr-defined]


def test_patience_zero_is_no_look_ahead() -> None:
    blind = _run(PlacementParams(lookahead=False))
    zero = _run(PlacementParams(lookahead_patience=0.0))
    assert {k: (d.start_slot, d.slots) for k, d in blind.items()} == {  # type: ignore[attr-defined]
        k: (d.start_slot, d.slots)  # type: ignore[attr-defined]
        for k, d in zero.items()
    }


def _holds_back(job_workers: int, running: bool, waited: int = 0) -> bool:
    cluster = make_cluster(4, 4, 16)
    busy = (Reservation("node1", 0, 30, Resources(4, 5, 4 * 8192 + 4096), "L"),)
    snap = replace(cluster, reservations=busy if running else (), now_slot=10)
    job = make_job("B", workers=job_workers, workload=NX * job_workers * 10, arrival=10 - waited)
    params = PlacementParams()
    d = place_yu_rr(job, snap, params)
    recent = [make_job(f"s{k}", workers=4, workload=NU * 4, arrival=k) for k in range(10)]
    return holds_back(job, d, snap, residual_from(snap, 10), (), recent, params)


def test_never_held_back_at_the_requested_width_or_on_an_idle_cluster() -> None:
    assert _holds_back(16, running=True)  # 12 GPUs free: narrow, and short jobs come
    assert not _holds_back(12, running=True)  # it fits whole: the requested width
    assert not _holds_back(20, running=False)  # nothing runs: no event would start it later
    assert not _holds_back(16, running=True, waited=1000)  # its patience is used up


def _wide_story() -> list[tuple[object, float]]:
    # 24 GPUs. Short 4-GPU one-slot jobs come three a slot in bursts (slots 0-5 and 8-15);
    # W (16 workers, 8 slots at full width distributed) arrives in the lull at slot 6. At
    # full width it leaves 8 GPUs, two short jobs a slot, so the second burst queues
    # behind it; with 8 workers it runs twice as long and the bursts never wait.
    entries: list[tuple[object, float]] = [
        (make_job("W", workers=16, workload=NX * 16 * 8), 6 * DELTA - 1),
    ]
    for slot in (*range(6), *range(8, 16)):
        for k in range(3):
            job = make_job(f"s{slot}.{k}", workers=4, workload=NU * 4)
            entries.append((job, slot * DELTA - 1 if slot else 0.0))
    return entries


def _widest(decision: object) -> int:
    return max(p.total_workers for p in decision.slots)  # type: ignore[attr-defined]


def test_a_wide_start_gives_way_to_a_narrower_one_when_the_forecast_pays() -> None:
    alone = _run(PlacementParams(), _wide_story, nodes=6)
    forecast_on = PlacementParams(lookahead_widths=True, widths_forecast=True)
    weighed = _run(forecast_on, _wide_story, nodes=6)
    assert _widest(weighed["W"]) < _widest(alone["W"]), (_widest(weighed["W"]), _widest(alone["W"]))
    assert _total(weighed) < _total(alone), (_total(weighed), _total(alone))
    # the job itself pays for it with a longer run, bounded by its narrowest choice
    assert weighed["W"].completion_slots >= alone["W"].completion_slots  # type: ignore[attr-defined]


def test_no_forecast_no_width_choice() -> None:
    # the same job with nothing seen before it and nothing behind it: the decision stands
    jobs = sim_jobs([(make_job("W", workers=16, workload=NX * 16 * 8), 0.0)], DELTA)
    cluster = make_cluster(4, 4, 16)
    alone = simulate(jobs, cluster, "yu-rr", PlacementParams()).decisions
    for forecast_on in (True, False):
        widths = PlacementParams(lookahead_widths=True, widths_forecast=forecast_on)
        weighed = simulate(jobs, cluster, "yu-rr", widths).decisions
        assert [d.slots for d in alone] == [d.slots for d in weighed]


def _queue_story() -> list[tuple[object, float]]:
    # 24 GPUs on 4-GPU nodes. At slot 0 W (16 workers: 8 slots spread over four nodes, or
    # about 14 co-located with 4) and four jobs of 4 workers and 40 slots, behind W in the
    # queue order (more service). W at full width leaves room for two of them; the other
    # two wait its 8 slots.
    entries: list[tuple[object, float]] = [
        (make_job("W", workers=16, workload=NX * 16 * 8), 0.0),
    ]
    for k in range(4):
        entries.append((make_job(f"y{k}", workers=4, workload=NU * 4 * 40), 0.0))
    return entries


def test_a_wide_start_gives_way_to_the_jobs_waiting_behind_it() -> None:
    """``widths_forecast`` off (the default): the width's rollout counts the waiting jobs
    behind the job alone. W co-located on 4 workers ends 6 slots later than at 16, and
    the two jobs that waited for it start at once: 174 completion slots instead of 184.
    The forecast rule sees no arrival before slot 0, so it weighs nothing."""
    alone = _run(PlacementParams(), _queue_story, nodes=6)
    weighed = _run(PlacementParams(lookahead_widths=True), _queue_story, nodes=6)
    forecast_on = PlacementParams(lookahead_widths=True, widths_forecast=True)
    unweighed = _run(forecast_on, _queue_story, nodes=6)
    assert {k: d.slots for k, d in unweighed.items()} == {k: d.slots for k, d in alone.items()}  # type: ignore[attr-defined]
    assert _widest(alone["W"]) == 16 and _widest(weighed["W"]) == 4
    assert (_total(alone), _total(weighed)) == (184, 174)
    assert all(weighed[f"y{k}"].start_slot == 0 for k in range(4))  # type: ignore[attr-defined]


def _queue_starts(params: PlacementParams, pausable: bool) -> bool:
    """The queue form of ``yu-rr`` on the scene of :func:`_holds_back` (B, 16 workers, would
    start narrow beside L while the recent past forecasts short 4-GPU jobs): whether B
    starts now."""
    from slurm_mlsched.placement.registry import get_queue
    from slurm_mlsched.placement.yu_rr.late_binding import PendingJob

    cluster = make_cluster(4, 4, 16)
    busy = (Reservation("node1", 0, 30, Resources(4, 5, 4 * 8192 + 4096), "L"),)
    snap = replace(cluster, reservations=busy, now_slot=10)
    job = make_job("B", workers=16, workload=NX * 16 * 10, arrival=10)
    recent = [make_job(f"s{k}", workers=4, workload=NU * 4, arrival=k) for k in range(10)]
    queue = get_queue("yu-rr", params)
    assert queue is not None
    step = queue((PendingJob(job, 0, pausable=pausable),), snap, params, recent)
    return any(d.job_id == "B" for d in step.started)


def test_under_preemption_only_a_job_that_cannot_be_paused_is_held_back() -> None:
    """The hold-back exists because a start is never given back; under checkpoint-restart
    preemption a pausable job's start is (the pause rule weighs it when the arrivals come),
    so its narrow start is not held back for forecast arrivals; a job the rule cannot pause
    (live: one that does not consent) still is, and ``lookahead_pausable`` restores the
    rule until 2026-12-06 (docs/formulation.md §14.7, "Under preemption")."""
    assert _holds_back(16, running=True)  # the scene: the look-ahead holds B back
    plain = PlacementParams()
    assert not _queue_starts(plain, pausable=True)  # no preemption: held back
    preempting = PlacementParams(preempt=True)
    assert _queue_starts(preempting, pausable=True)
    assert not _queue_starts(preempting, pausable=False)
    assert not _queue_starts(replace(preempting, lookahead_pausable=True), pausable=True)
    assert _queue_starts(replace(preempting, lookahead=False), pausable=False)
