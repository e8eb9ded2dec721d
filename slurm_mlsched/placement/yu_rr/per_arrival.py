"""``yu-rr``, the paper's per-arrival algorithm (docs/formulation.md §4–§8; MODEL.md §4, §5).

On each arrival, earlier jobs keep their reservations (they are in the snapshot):

1. residual capacity C̃ = C − reserved, from the arrival on;
2. the smallest deadline D whose LP relaxation is feasible; the load-priced LP at D;
3. randomized rounding with K seeded trials, recorded in ``Decision.rounding`` with the
   kept one and the rule that kept it (elastic: fewest capacity violations, then most
   work; non-elastic: the earliest end after repair); 4. repair; 5. the caller commits
   ``decision.reservations(job)``.

Size control: the LP window [a, D] is split into at most ``lp_max_blocks`` blocks (its
size does not grow with the horizon), co-location is offered on the top-k machines
(ranked over a + ``horizon_factor`` × the shortest duration), identical machines are
grouped, HiGHS runs in-process; and the exact fast path: when all N workers and one PS
fit co-located on one machine from the arrival for the job's whole co-located duration,
no schedule can end sooner, so that is taken.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ...model import ClusterSnapshot, Decision, Form, JobRequest, Mode, SlotPlan, allreduce
from ...model.decision import (
    RoundingTrial,
    earliest_end_reason,
    fewest_violations_reason,
    merge_runs,
)
from ..params import PlacementParams
from ..program.highs_lp import highs_version
from ..program.packing import best_fit, first_fit, fit_counts
from ..program.residual import Residual
from ..program.ring import settle
from . import elastic, nonelastic
from .arrival import Arrival, prepare, slot_plan, with_candidates

POLICY = "yu-rr"


def place_yu_rr(
    job: JobRequest,
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    residual: Residual | None = None,
) -> Decision:
    """Online LP relaxation + randomized rounding + repair (Yu et al.; docs/formulation.md).

    ``residual``: the snapshot's residual capacity from the decision slot, if known."""
    clock = _Stopwatch()
    arr = prepare(job, snapshot, params, candidates=False, residual=residual)
    clock.lap("prepare")
    if params.fast_path:
        fast = _fast_path(arr)
        if fast is not None:
            clock.lap("fast_path")
            return _decision(
                arr,
                fast,
                clock,
                lp_deadline=fast[0].stop - 1,
                notes=(
                    "exact fast path: all workers co-located from arrival"
                    if fast[0].length == arr.d_min
                    else "exact fast path: the job's fastest shape fits from arrival",
                ),
                solver="fast-path",
            )
    arr = with_candidates(arr)
    clock.lap("candidates")
    if params.form == Form.ELASTIC:
        return _elastic(arr, clock)
    return _non_elastic(arr, clock)


class _Stopwatch:
    """Timings of the steps of one decision (durations only; no wall-clock reading)."""

    def __init__(self) -> None:
        self.last = time.perf_counter()
        self.laps: list[tuple[str, float]] = []

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.laps.append((name, round((now - self.last) * 1000.0, 3)))
        self.last = now


def _fast_path(arr: Arrival) -> tuple[SlotPlan, ...] | None:
    """docs/formulation.md §8: all N workers co-located from now for the co-located run;
    else the job's fastest shape on this cluster, if it fits from now for its whole run."""
    shape = arr.shape
    need = shape.alpha * shape.n_max + shape.beta
    # N on one node: d_min for a ps job; an allreduce job's d_min is a bound (best_rate),
    # its N-on-one-node run takes the ring formula's slots (docs/formulation.md §18)
    d = arr.d_min if not arr.job.is_allreduce else _ring_slots(arr, (shape.n_max,))
    h = best_fit(arr.res.window_min(arr.a, arr.a + d), need, arr.res.capacity)
    if h is None:
        return _fastest_now(arr)
    w = np.zeros(arr.res.n_machines, dtype=np.int64)
    s = np.zeros(arr.res.n_machines, dtype=np.int64)
    w[h], s[h] = shape.n_max, 1
    plan = slot_plan(arr.a, Mode.COLOCATED, arr.res.names, w, s)
    return (SlotPlan(plan.slot, plan.mode, plan.workers, plan.ps, d),)


def _ring_slots(arr: Arrival, counts: tuple[int, ...]) -> int:
    """Slots of an allreduce run of ``counts`` workers per node, by the ring formula."""
    r = allreduce.rate(counts, arr.job.profile, arr.shape.slot_seconds)
    return max(1, math.ceil(arr.shape.workload / r - 1e-9))


def _fastest_now(arr: Arrival) -> tuple[SlotPlan, ...] | None:
    """The job's fastest constant shape on the empty cluster (the most workers one machine
    holds beside a PS, co-located, or the most the cluster holds, distributed; co-located
    on ties), placed from now if the room of its whole run holds it: nothing starts
    earlier or runs faster, so no schedule of the job ends sooner. Co-located on the best
    fit machine; distributed first fit over the machines with the most room (fewest
    machines), the PSs the workers need after them; then trimmed."""
    shape, res, job = arr.shape, arr.res, arr.job
    cap = res.capacity
    beside = cap - shape.beta
    colo = int(np.where((beside >= -1e-9).all(axis=1), fit_counts(beside, shape.alpha), 0).max())
    colo = min(colo, shape.n_max)
    dist = min(int(fit_counts(cap, shape.alpha).sum()), shape.n_dist_max)
    rate_in = shape.nu_in * colo
    rate_ex = shape.nu_ex * dist if dist >= shape.n_dist_min else 0.0
    if max(rate_in, rate_ex) <= 0:
        return None
    h_count = res.n_machines
    w = np.zeros(h_count, dtype=np.int64)
    s = np.zeros(h_count, dtype=np.int64)
    if rate_in >= rate_ex:
        d = math.ceil(shape.workload / rate_in - 1e-9)
        room = res.window_min(arr.a, arr.a + d)
        h = best_fit(room, shape.alpha * colo + shape.beta, cap)
        if h is None:
            return None
        w[h], s[h] = colo, 1
        sh = nonelastic.Shape(arr.a, h, w, s)
    else:
        d = math.ceil(shape.workload / rate_ex - 1e-9)
        room = res.window_min(arr.a, arr.a + d).copy()
        order = np.argsort(-room[:, 0], kind="stable").astype(np.int64)
        w = first_fit(room, shape.alpha, dist, order)
        n_ps = job.ps_needed(dist)
        s = first_fit(room, shape.beta, n_ps, order)
        if int(w.sum()) != dist or int(s.sum()) != n_ps:
            return None
        sh = nonelastic.Shape(arr.a, -1, w, s)
        nonelastic.normalize(sh)
    sh = nonelastic.trim(arr, sh)
    end = nonelastic.end_slot(arr, sh)
    plan = slot_plan(arr.a, nonelastic.mode_of(sh), res.names, sh.w, sh.s)
    return (SlotPlan(plan.slot, plan.mode, plan.workers, plan.ps, end - arr.a + 1),)


def _elastic(arr: Arrival, clock: _Stopwatch) -> Decision:
    sr = elastic.search_deadline(arr)
    clock.lap("lp_search")
    rng = np.random.default_rng(arr.params.seed)
    v = arr.shape.workload
    best: tuple[tuple[float, float], int, elastic.BlockDraw] | None = None
    trials: list[RoundingTrial] = []
    for k in range(max(1, arr.params.trials)):
        draw = elastic.round_trial(arr, sr, rng)
        trials.append(RoundingTrial(k, int(draw.violations), draw.work / v))
        key = (draw.violations, -min(draw.work, v))
        if best is None or key < best[0]:
            best = (key, k, draw)
    assert best is not None
    _, kept, drawn = best
    because = fewest_violations_reason(int(drawn.violations), drawn.work / v)
    clock.lap("rounding")
    ws = elastic.materialize(arr, sr, drawn)
    elastic.repair_capacity(arr, ws)
    elastic.cover_work(arr, ws)
    if arr.params.restart_s > 0:
        elastic.stabilize(arr, ws)
    elastic.trim(arr, ws)
    restarts = elastic.pay_restarts(arr, ws)
    plans, _ = elastic.to_plans(arr, ws)
    clock.lap("repair")
    stats = (
        ("pre_repair_violation_slots", drawn.violations),
        ("pre_repair_max_overload", drawn.max_overload),
        ("pre_repair_work_fraction", drawn.work / v),
        ("lp_solves", float(sr.lp_solves)),
        ("lp_blocks", float(len(sr.starts))),
        ("restarts", float(restarts)),
    )
    return _decision(
        arr,
        merge_runs(plans),
        clock,
        lp_deadline=sr.deadline,
        lp_value=sr.solution.objective,
        actions=tuple(ws.actions),
        stats=stats,
        rounding=(tuple(trials), kept, because),
    )


def _non_elastic(arr: Arrival, clock: _Stopwatch) -> Decision:
    """K rounding trials, each repaired; the kept trial is the one that ends first after
    repair (ties: fewer task-slots, then the lower trial index), then trimmed
    (docs/formulation.md §14.4, :attr:`TrialRule.EARLIEST_END`)."""
    ss = nonelastic.search_start(arr)
    clock.lap("lp_search")
    rng = np.random.default_rng(arr.params.seed)
    trials: list[RoundingTrial] = []
    repaired: dict[bytes, nonelastic.Shape] = {}  # identical draws are repaired once
    best: tuple[tuple[int, int, int], int, nonelastic.Shape, nonelastic.Shape] | None = None
    for k in range(max(1, arr.params.trials)):
        sh = nonelastic.round_trial(arr, ss, rng)
        violations = nonelastic.violations(arr, sh)
        work = nonelastic.work_by(arr, sh, ss.deadline)
        sig = nonelastic.signature(sh)
        fixed = repaired.get(sig)
        if fixed is None:
            chosen = sh.copy()
            nonelastic.normalize(chosen)
            fixed = nonelastic.repair(arr, chosen, ss.deadline)
            repaired[sig] = fixed
        fixed_end = nonelastic.end_slot(arr, fixed)
        trials.append(
            RoundingTrial(
                index=k,
                violations=violations,
                work_fraction=work / arr.shape.workload,
                start_slot=sh.start,
                end_slot=nonelastic.end_slot(arr, sh) if sh.workers else None,
                workers=sh.workers,
                colocated=sh.colo >= 0,
                repaired_end_slot=fixed_end,
                repaired_workers=fixed.workers,
            )
        )
        key = (fixed_end, nonelastic.task_slots(arr, fixed), k)
        if best is None or key < best[0]:
            best = (key, k, sh, fixed)
    assert best is not None
    (kept_end, _, _), kept, drawn, fixed = best
    because = earliest_end_reason(kept_end - arr.job.arrival_slot + 1)
    v = arr.shape.workload
    clock.lap("rounding")
    fixed = nonelastic.trim(arr, fixed.copy())
    end = nonelastic.end_slot(arr, fixed)
    plan = slot_plan(fixed.start, nonelastic.mode_of(fixed), arr.res.names, fixed.w, fixed.s)
    plans = (SlotPlan(plan.slot, plan.mode, plan.workers, plan.ps, end - fixed.start + 1),)
    clock.lap("repair")
    stats = (
        ("distinct_trial_outcomes", float(len(repaired))),
        ("pre_repair_violations", float(nonelastic.violations(arr, drawn))),
        ("pre_repair_max_overload", nonelastic.max_overload(arr, drawn)),
        ("pre_repair_work_fraction", nonelastic.work_by(arr, drawn, ss.deadline) / v),
        ("pre_repair_end_slot", float(nonelastic.end_slot(arr, drawn)) if drawn.workers else -1.0),
        ("lp_solves", float(ss.lp_solves)),
    )
    return _decision(
        arr,
        plans,
        clock,
        lp_deadline=ss.deadline,
        lp_value=ss.solution.objective,
        actions=tuple(fixed.actions),
        stats=stats,
        rounding=(tuple(trials), kept, because),
    )


def _decision(
    arr: Arrival,
    plans: tuple[SlotPlan, ...],
    clock: _Stopwatch,
    lp_deadline: int | None,
    lp_value: float | None = None,
    actions: tuple[str, ...] = (),
    notes: tuple[str, ...] = (),
    stats: tuple[tuple[str, float], ...] = (),
    solver: str = "highs-lp",
    rounding: tuple[tuple[RoundingTrial, ...], int, str] | None = None,
) -> Decision:
    """``rounding``: the trials drawn, the index of the one kept and why."""
    trials, kept, because = rounding if rounding is not None else ((), None, "")
    work = sum(arr.rate(p.mode) * p.total_workers * p.length for p in plans)
    decision = Decision(
        job_id=arr.job.job_id,
        policy=POLICY,
        form=arr.params.form,
        seed=arr.params.seed,
        slots=plans,
        start_slot=plans[0].slot,
        end_slot=plans[-1].stop - 1,
        work_covered=work,
        arrival_slot=arr.job.arrival_slot,
        lp_deadline=lp_deadline,
        lp_value=lp_value,
        trials=arr.params.trials if solver != "fast-path" else 0,
        repair_actions=actions,
        solver=solver,
        solver_version=highs_version() if solver == "highs-lp" else "",
        timings_ms=tuple(clock.laps),
        notes=notes,
        stats=stats,
        rounding=trials,
        kept_trial=kept,
        kept_because=because,
    )
    room = arr.res if arr.params.allreduce_pack else None
    return settle(decision, arr.job, room, arr.shape.slot_seconds, arr.params.allreduce_shrink)
