"""``yu-rr`` under late binding, the joint program (docs/formulation.md §14.3; MODEL.md §4b).

At an event in slot t (the queue form of ``yu-rr``, ``binding: late``):

1. **The head's plan.** The first waiting job in queue order keeps its previous
   tentative plan as a fixed reservation when that plan still fits (the monotone-head step
   of :mod:`.late_binding`, on which the starvation bound rests).
2. **The window.** The next waiting jobs in queue order for which some task fits now
   (the cheap test of :mod:`.late_binding`), at most ``joint_jobs`` of them.
3. **The joint program.** With two or more jobs in the window (``queue_program:
   joint``) that compete (not every one of them gets the exact fast path now, in queue
   order), the LP relaxation of §3's program over all of them together
   (:mod:`.joint_lp`: shared capacity, total completion time with the completion cuts)
   on blocks from now to a horizon by which all of them can finish.
4. **Randomized rounding** of what starts now: for each job in queue order, one mode is
   drawn with the LP's block-0 probabilities (co-located on j w.p. u[i,j,0], distributed
   w.p. v[i,0], wait otherwise); the mode's counts are scaled by λ/probability and rounded
   unbiasedly; then **repair** (:func:`.nonelastic.repair`, against the room left by the
   jobs this trial already started) makes the shape fit its whole run, or moves it later
   (then the job waits). ``trials`` trials (seeded with the head job's seed mixed with the
   slot), identical outcomes repaired once.
5. **The trial kept** is the one with the least total completion time *after repair*:
   the started jobs' ends, plus for the jobs that wait an estimate by list scheduling (in
   queue order, each at its earliest start with its requested width on what is left);
   ties: fewer task-slots, then the lower trial. Its started jobs are **trimmed**
   (workers that do not bring their end earlier are removed).
6. **The rest** of the queue (the head's new plan, reserved jobs, backfill) goes through
   :func:`.late_binding.replan_queue` with the per-job decision, against the running jobs
   plus the jobs started in 5.

``queue_program: per-job`` skips 2–5 (every job decided alone, in queue order). Pure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ...errors import SolverError
from ...model import ClusterSnapshot, Decision, JobRequest, Reservation, SlotPlan
from ...model.decision import least_total_completion_reason
from ..params import PlacementParams, derive_seed
from ..program.eligibility import allowed_by_types
from ..program.highs_lp import highs_version
from ..program.job_lp import FloatArray, IntArray
from ..program.joint_lp import JointInstance, JointSolution, solve_joint_lp
from ..program.packing import best_fit, unbiased_round
from ..program.residual import Residual, identical_groups, residual_from
from .arrival import Arrival, prepare, slot_plan
from .late_binding import PendingJob, QueueStep, fits, might_start, ordered, replan_queue
from .list_schedule import earliest_requested, usage
from .lookahead import holds_back, may_hold_back
from .nonelastic import (
    Shape,
    add_workers,
    end_slot,
    mode_of,
    normalize,
    repair,
    spread_in_groups,
    task_slots,
    trim,
)
from .per_arrival import POLICY, place_yu_rr

SOLVER = "highs-lp-joint"


def _groups(
    arrs: list[Arrival], res: Residual, top_k: int
) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    """The shared groups (candidate singletons first, then identical groups of the rest)
    and, per job, its candidates as group indices."""
    singles: list[int] = []
    for arr in arrs:
        for h in arr.colo[:top_k]:
            if h not in singles:
                singles.append(h)
    rest = identical_groups(res, set(singles))
    groups = tuple((h,) for h in singles) + tuple(tuple(g) for g in rest)
    where = {h: i for i, h in enumerate(singles)}
    colo = tuple(tuple(where[h] for h in arr.colo[:top_k]) for arr in arrs)
    return groups, colo


def _horizon(arrs: list[Arrival], res: Residual, now: int) -> int:
    """A slot by which all jobs surely finish: the running jobs' end, then each job in
    turn with its smallest shape on the empty cluster."""
    t = max(res.free_after, now)
    for arr in arrs:
        t += arr.longest_end() - max(res.free_after, arr.a)
    return t + 1


def _blocks(
    now: int, stop: int, cuts: tuple[int, ...], max_blocks: int, free_after: int | None = None
) -> tuple[IntArray, IntArray]:
    """Blocks over [now, stop): fine near now (1, 1, 2, 4, … slots) and at the slots where
    the running jobs end (the first half of the budget), coarse later. ``free_after`` (the
    slot from which the cluster is empty) is always a boundary: a block's capacity is its
    minimum, and the horizon is sized for the jobs to finish on the empty cluster after
    it, so the last blocks must see it empty (else the LP can be infeasible)."""
    budget = max(2, max_blocks)
    inner = sorted(c for c in dict.fromkeys(cuts) if now < c < stop)[: budget // 2]
    if free_after is not None and now < free_after < stop and free_after not in inner:
        inner = [*inner[: budget // 2 - 1], free_after]
    k = 0
    geo: list[int] = []
    while now + (1 << k) < stop and len(geo) < budget:
        geo.append(now + (1 << k))
        k += 1
    points = sorted({*inner, *geo})
    while len(points) > budget - 1:  # drop geometric points first, the latest first
        extra = [p for p in points if p not in inner]
        points.remove(extra[-1] if extra else points[-1])
    bounds = np.array([now, *points, stop], dtype=np.int64)
    return bounds[:-1], bounds[1:]


def _instance(
    arrs: list[Arrival], res: Residual, params: PlacementParams, now: int
) -> tuple[JointInstance, tuple[tuple[int, ...], ...]]:
    groups, colo = _groups(arrs, res, params.joint_top_k)
    starts, stops = _blocks(
        now, _horizon(arrs, res, now), res.change_slots(), params.joint_blocks, res.free_after
    )
    mins = res.blocks_min(starts, stops)  # (H, 3, B)
    reps = np.array([g[0] for g in groups], dtype=np.int64)
    sizes = np.array([len(g) for g in groups], dtype=np.int64)
    per_machine = mins[reps]
    types = res.gpu_types
    gpu_ok = tuple(
        None if not types else allowed_by_types(arr.job, [types[g[0]] for g in groups])
        for arr in arrs
    )
    return JointInstance(
        widths=(stops - starts).astype(np.int64),
        group_sizes=sizes,
        cap=per_machine * sizes[:, None, None],
        per_machine=per_machine,
        colo=colo,
        gpu_ok=gpu_ok,
    ), groups


def _draw(
    arr: Arrival,
    sol_u: FloatArray,
    sol_wl: FloatArray,
    sol_v: float,
    sol_wd: FloatArray,
    sol_sd: FloatArray,
    cand: tuple[int, ...],
    groups: tuple[tuple[int, ...], ...],
    rng: np.random.Generator,
) -> Shape | None:
    """One rounding draw of block 0 for one job: None = it waits."""
    lam, shape, res, now = arr.params.scale, arr.shape, arr.res, arr.a
    h_count = res.n_machines
    probs = np.r_[sol_u, sol_v]
    pick = int(np.searchsorted(np.cumsum(probs), rng.random(), side="right"))
    w = np.zeros(h_count, dtype=np.int64)
    s = np.zeros(h_count, dtype=np.int64)
    if pick < len(cand) and sol_u[pick] > 1e-9:
        h = groups[cand[pick]][0]
        n = min(
            int(unbiased_round(np.array([lam * sol_wl[pick] / sol_u[pick]]), rng)[0]), shape.n_max
        )
        if n <= 0:
            return None
        w[h], s[h] = n, 1
        return Shape(now, h, w, s)
    if pick == len(cand) and sol_v > 1e-9:
        gw = unbiased_round(lam * sol_wd / sol_v, rng)
        gs = unbiased_round(lam * sol_sd / sol_v, rng)
        sh = Shape(now, -1, w, s)
        spread_in_groups(sh, res.at(now).copy(), shape, gw, gs, groups)
        return sh if sh.workers else None
    return None


def _trial(
    arrs: list[Arrival],
    sol: JointSolution,
    groups: tuple[tuple[int, ...], ...],
    widths: IntArray,
    res: Residual,
    rng: np.random.Generator,
    memo: dict[bytes, Shape | None],
    estimates: dict[bytes, int],
    grow: bool,
) -> tuple[int, int, list[tuple[int, Shape]]]:
    """One trial: (total completion after repair, task-slots, started (job index, shape))."""
    now = arrs[0].a
    path = b""  # the shapes started so far in this trial: with the draw, the repair's input
    started: list[tuple[int, Shape]] = []
    waiting: list[int] = []
    for i, arr in enumerate(arrs):
        lp = sol.jobs[i]
        drawn = _draw(
            arr,
            lp.u[:, 0],
            lp.wl[:, 0],
            float(lp.v[0]),
            lp.wd[:, 0],
            lp.sd[:, 0],
            lp.colo,
            groups,
            rng,
        )
        if drawn is None:
            waiting.append(i)
            continue
        normalize(drawn)
        here = replace(arr, res=res)
        key = (
            b"%d|" % grow
            + path
            + b"|%d:%d|" % (i, drawn.colo)
            + drawn.w.tobytes()
            + drawn.s.tobytes()
        )
        if key in memo:
            fixed = memo[key]
        else:
            fixed = _repaired(here, drawn, lp.completion_slots(widths), grow)
            memo[key] = fixed
        if fixed is None:
            waiting.append(i)
            continue
        started.append((i, fixed))
        path += b"|%d:%d|" % (i, fixed.colo) + fixed.w.tobytes() + fixed.s.tobytes()
        res = res.minus(usage(here, fixed), now, end_slot(here, fixed) + 1)
    total = sum(end_slot(arrs[i], sh) - now + 1 for i, sh in started)
    slots = sum(task_slots(arrs[i], sh) for i, sh in started)
    key = b"wait|" + path
    if key not in estimates:
        later = 0
        for i in waiting:
            end, res, _ = earliest_requested(replace(arrs[i], res=res), res)
            later += end - now + 1
        estimates[key] = later
    return total + estimates[key], slots, started


def _deadline(now: int, lp_completion: float) -> int:
    """The last slot of the LP's (fractional) completion time from ``now``, at least now."""
    return now + max(1, math.ceil(lp_completion - 1e-9)) - 1


def _repaired(arr: Arrival, drawn: Shape, lp_completion: float, grow: bool) -> Shape | None:
    """A drawn shape made to fit its whole run from now (None: the job waits): repair
    (§4 step 4, up to the job's LP completion), optionally the room left now, and never a
    start now that ends later than the requested width would at its earliest start."""
    now = arr.a
    fixed = repair(arr, drawn.copy(), _deadline(now, lp_completion))
    if fixed.start != now or fixed.workers == 0:
        return None
    if grow:  # counts are fixed once started: use the room left now
        add_workers(arr, fixed, now)
    alone, _, full = earliest_requested(arr, arr.res, room_left=False)
    if alone < end_slot(arr, fixed):  # a narrow start now would end later: not it
        if full is None or full.start != now:
            return None
        return full
    return fixed


def joint_start(
    window: list[PendingJob],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    res: Residual | None = None,
) -> tuple[Decision, ...]:
    """Steps 3–5 of the module docstring: the decisions of the window's jobs that start
    now (possibly none). ``res``: the snapshot's residual from now, if the caller has it."""
    began = time.perf_counter()
    now = snapshot.now_slot
    res = residual_from(snapshot, now) if res is None else res
    arrs = [prepare(p.request, snapshot, params.with_seed(p.seed), residual=res) for p in window]
    inst, groups = _instance(arrs, res, params, now)
    sol = solve_joint_lp(tuple(a.shape for a in arrs), inst, params.time_limit_s)
    lp_ms = (time.perf_counter() - began) * 1000.0
    if not sol.feasible:
        raise SolverError(
            f"HiGHS ended the joint LP of {len(window)} job(s) at slot {now} with status "
            f"{sol.status}",
            hint="raise time_limit_s, or report the instance",
        )
    seed = derive_seed(window[0].seed, f"joint:{now}")
    rng = np.random.default_rng(seed)
    memo: dict[bytes, Shape | None] = {}
    estimates: dict[bytes, int] = {}
    best: tuple[tuple[int, int, int], list[tuple[int, Shape]]] | None = None
    outcomes: set[tuple[tuple[int, bytes], ...]] = set()
    for k in range(max(1, params.trials)):
        grow = (params.joint_grow == "both" and k % 2 == 1) or params.joint_grow == "always"
        total, slots, started = _trial(
            arrs, sol, groups, inst.widths, res, rng, memo, estimates, grow
        )
        outcomes.add(tuple((i, sh.w.tobytes() + sh.s.tobytes()) for i, sh in started))
        if best is None or (total, slots, k) < best[0]:
            best = ((total, slots, k), started)
    assert best is not None
    (score, _, kept), chosen = best
    because = least_total_completion_reason(score, len(window))
    elapsed = (time.perf_counter() - began) * 1000.0
    out: list[Decision] = []
    for i, sh in chosen:
        arr = arrs[i]
        sh = trim(arr, sh.copy())
        end = end_slot(arr, sh)
        plan = slot_plan(now, mode_of(sh), arr.res.names, sh.w, sh.s)
        plans = (SlotPlan(now, plan.mode, plan.workers, plan.ps, end - now + 1),)
        lp = sol.jobs[i]
        out.append(
            Decision(
                job_id=arr.job.job_id,
                policy=POLICY,
                form=params.form,
                seed=seed,
                slots=plans,
                start_slot=now,
                end_slot=end,
                work_covered=arr.rate(plan.mode) * plan.total_workers * (end - now + 1),
                arrival_slot=arr.job.arrival_slot,
                lp_deadline=_deadline(now, lp.completion_slots(inst.widths)),
                lp_value=sol.objective,
                trials=params.trials,
                repair_actions=tuple(sh.actions),
                solver=SOLVER,
                solver_version=highs_version(),
                timings_ms=(
                    ("joint_lp", round(lp_ms, 3)),
                    ("joint_rounding", round(elapsed - lp_ms, 3)),
                ),
                notes=(
                    f"joint program over {len(window)} waiting job(s) at slot {now} "
                    f"(queue order); kept trial {kept} of {params.trials}",
                ),
                stats=(
                    ("joint_jobs", float(len(window))),
                    ("distinct_trial_outcomes", float(len(outcomes))),
                    ("trial_total_completion_slots", float(score)),
                    ("lp_completion_slots", lp.completion_slots(inst.widths)),
                    ("lp_solves", 1.0),
                ),
                kept_trial=kept,
                kept_because=because,
            )
        )
    return tuple(out)


def replan_yu_rr(
    pending: tuple[PendingJob, ...],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    recent: Sequence[JobRequest] = (),
) -> QueueStep:
    """Late binding (module docstring): the joint program over the head of the queue,
    then the per-job re-plan of the rest. ``recent``: the jobs that arrived lately (the
    look-ahead's forecast, :mod:`.lookahead`)."""
    if params.queue_program == "per-job" or params.joint_jobs < 2 or len(pending) < 2:
        return replan_queue(pending, snapshot, params, place_yu_rr, recent, chooses_width=True)
    queue = ordered(pending, snapshot, params)
    held: list[Reservation] = []
    head = queue[0]
    first: tuple[Decision, ...] = ()  # the head's kept plan when it starts now
    if head.plan is not None:
        mine = head.plan.reservations(head.request)
        if fits(mine, snapshot):
            held = list(mine)
            if head.plan.start_slot == snapshot.now_slot:
                first = (head.plan,)
    base = replace(snapshot, reservations=(*snapshot.reservations, *held)) if held else snapshot
    res = residual_from(base, base.now_slot)
    room = res.at(base.now_slot)
    window = [p for p in queue[1 if held else 0 :] if might_start(p.request, room)][
        : params.joint_jobs
    ]
    if len(window) < 2 or _uncontended(window, base, res):
        return replan_queue(pending, snapshot, params, place_yu_rr, recent, chooses_width=True)
    started = joint_start(window, base, params, res)
    joint = (*first, *_looked_ahead(started, queue, base, params, recent))
    if not joint:
        return replan_queue(pending, snapshot, params, place_yu_rr, recent, chooses_width=True)
    done = {d.job_id for d in joint}
    extra = tuple(r for d in joint for r in d.reservations(_request(queue, d.job_id)))
    after = ClusterSnapshot(
        snapshot.machines,
        (*snapshot.reservations, *extra),
        snapshot.slot_seconds,
        snapshot.epoch,
        snapshot.now_slot,
    )
    rest = replan_queue(
        tuple(p for p in pending if p.request.job_id not in done),
        after,
        params,
        place_yu_rr,
        recent,
        chooses_width=True,
    )
    return QueueStep(
        (*joint, *rest.started),
        rest.planned,
        rest.rejected,
        (*sorted(done), *rest.decided),
        rest.kept,
    )


def _looked_ahead(
    started: tuple[Decision, ...],
    queue: list[PendingJob],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    recent: Sequence[JobRequest],
) -> tuple[Decision, ...]:
    """The joint starts that the look-ahead (:mod:`.lookahead`) does not hold back, each
    weighed after the ones kept before it; a held-back job goes on to the per-job re-plan
    (step 6), which weighs it again there."""
    if not params.lookahead:
        return started
    position = {p.request.job_id: k for k, p in enumerate(queue)}
    kept: list[Decision] = []
    snap = snapshot
    res = residual_from(snap, snap.now_slot)
    for d in started:
        at = position[d.job_id]
        job = queue[at].request
        behind = [q.request for q in queue[at + 1 : at + 1 + params.lookahead_jobs]]
        if may_hold_back(queue[at].pausable, params) and holds_back(
            job, d, snap, res, behind, recent, params
        ):
            continue
        kept.append(d)
        snap = replace(snap, reservations=(*snap.reservations, *d.reservations(job)))
        res = residual_from(snap, snap.now_slot)
    return tuple(kept)


def _uncontended(window: list[PendingJob], snapshot: ClusterSnapshot, res: Residual) -> bool:
    """Whether every window job gets the exact fast path now, one after another in queue
    order (all N workers and one PS on one machine from now for its whole co-located run,
    best fit, as ``yu-rr`` takes it): then they do not compete, each alone is optimal and
    the joint program has nothing to decide (step 3 is skipped). ``res``: the snapshot's
    residual from now."""
    now = snapshot.now_slot
    for p in window:
        job = p.request
        need = np.array(job.worker.as_tuple()) * job.max_workers + np.array(job.ps.as_tuple())
        d_min = job.shortest_slots(snapshot.slot_seconds)
        view = res.for_job(job)
        h = best_fit(view.window_min(now, now + d_min), need, view.capacity)
        if h is None:
            return False
        use = np.zeros_like(res.capacity)
        use[h] = need
        res = res.minus(use, now, now + d_min)
    return True


def _request(queue: list[PendingJob], job_id: str) -> JobRequest:
    return next(p.request for p in queue if p.request.job_id == job_id)
