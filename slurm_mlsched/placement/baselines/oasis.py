"""``oasis``, ``oasis-x0.5``, ``oasis-x2``: OASiS primal–dual pricing on arrival (MODEL.md §6,
Appendix A; Bao et al., INFOCOM 2018), on our shared machines.

On the arrival of job i (slot a), against the reservations of the jobs before it:

1. **Prices.** Each machine h, resource r and slot t has the price
   P = L·(U/L)^(g/c), g = what the reservations take of its capacity c
   (:mod:`.oasis_prices`; the job's own tasks raise g as they are added). Reservations are
   intervals, so prices are constant over **segments** of slots between two reservation
   boundaries; a segment's slots are interchangeable.
2. **Per-slot greedy** (per segment s): tasks are added in steps, one worker at a time
   with the PSs the PS rule then needs (PSs first; with a fixed PS count S, the first step
   is S workers + S PSs), each task on the machine with the lowest Σ_r P·d̂_r where it
   fits. This gives the slot cost curve: the marginal cost c_s(j) of step j and the
   most workers W_s a slot of s can hold. OASiS always runs **distributed** (rate
   ν = Δ/θ_ex, never the internal-bandwidth rate), even when the tasks share a machine.
3. **Split over slots** for a completion slot t̂: the work needs ⌈V/ν⌉ worker-slots;
   (segment, step) entries are taken cheapest per worker first, c_s(j) / Δw_j made
   non-decreasing in j (ironed), over the slots of [a, t̂], until the work is covered: the
   dynamic program over slots with the per-slot curves, exact when they are convex (the PS
   steps can break that by one PS). Cost(t̂) = Σ of the entries taken.
4. **Candidates**: t̂ = the earliest feasible end E₀ (every slot at W_s), then durations
   ×√2 each, ``oasis_end_candidates`` in all; only E₀ when its schedule costs less than
   the utility lost by ending one slot later. Payoff(t̂) = f(d) − Cost(t̂), d = the
   schedule's last slot − a + 1, compared in the log domain (scaled by the best utility:
   OASiS's choices do not change when utilities and prices are scaled together); equal
   payoffs go to the cheaper, then the earlier schedule.
5. **Realization**: each run of slots with the same worker count keeps one placement, its
   tasks on the machines cheapest over the whole run (:func:`_place_run`), else each
   segment keeps its greedy's.
6. **Admission**: the committed schedule's payoff > 0 → it is the decision (elastic: counts
   may change per segment); otherwise the job is **rejected** (:class:`RejectedError`; the
   replay counts it as rejected, with its ln utility and ln cost).

A fast path skips steps 2–5 when one placement holds the job's largest shape from a until
it is done and that schedule dominates every later end (:func:`_fast_path`).

Details, choices and deviations: docs/formulation.md §13.2 (search in :mod:`.oasis_search`,
prices and the constants U, L in :mod:`.oasis_prices`).

The three registered names differ only in the factor applied to the oracle U and L.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from ...errors import MlschedError, NeverFitsError
from ...model import ClusterSnapshot, Decision, Form, JobRequest, Mode, SlotPlan
from ...model.decision import merge_runs
from ...model.speed import worker_rates
from ..params import ArrivalFn, PlacementParams
from ..program.eligibility import allowed
from ..utility import draw_utility
from .oasis_prices import (
    log_prices,
    log_task_cost,
    normalized,
    price_bounds,
    utility_seed,
)
from .oasis_search import Context, Schedule, Steps, Window, search, segments
from .reserved import Reserved

FloatArray = npt.NDArray[np.float64]

SOLVER = "oasis-greedy"
#: policy name -> the factor applied to the oracle U and L (MODEL.md: ×0.5 and ×2 estimates)
VARIANTS: dict[str, float] = {"oasis": 1.0, "oasis-x0.5": 0.5, "oasis-x2": 2.0}


class RejectedError(MlschedError):
    """A policy with admission control (``oasis``) declined the job: its best schedule's
    payoff (utility − cost) is not positive. The job is not run; the replay counts it as
    rejected. (Exit code 4, like a job that can never fit: it gets no placement.)"""

    code = "rejected"
    exit_code = 4


def _pick(room: np.ndarray, cost: np.ndarray, demand: np.ndarray) -> int | None:
    """The cheapest machine where one task of ``demand`` fits, ties to the lower index."""
    ok: npt.NDArray[np.bool_] = np.asarray((room >= demand - 1e-9).all(axis=1))
    h = int(np.argmin(np.where(ok, cost, np.inf)))
    return h if ok[h] else None


Piece = tuple[int, int, int, int]  # (segment, level, first slot, slots)
Placed = tuple[Counter[int], Counter[int], float]  # workers, PSs per machine; ln cost


def _pieces(win: Window, sched: Schedule) -> list[Piece]:
    """The schedule's running pieces in time order: each segment at its level, the partial
    segment cut in two."""
    avail = win.slots_until(sched.end)
    out: list[Piece] = []
    for s in np.flatnonzero(avail > 0).tolist():
        level, start, slots = int(sched.levels[s]), int(win.starts[s]), int(avail[s])
        parts = [(level, start, slots)]
        if sched.partial and sched.partial[0] == s:
            cut, up = sched.partial[1], sched.partial[2]
            parts = [(up, start, cut), (level, start + cut, slots - cut)]
        out += [(s, lvl, first, n) for lvl, first, n in parts if lvl > 0 and n > 0]
    return out


def _runs(pieces: list[Piece]) -> list[list[Piece]]:
    """Maximal runs of contiguous pieces with the same level (worker count)."""
    out: list[list[Piece]] = []
    for piece in pieces:
        last = out[-1][-1] if out else None
        if last is not None and last[1] == piece[1] and last[2] + last[3] == piece[2]:
            out[-1].append(piece)
        else:
            out.append([piece])
    return out


def _place_run(ctx: Context, win: Window, run: list[Piece]) -> Placed | None:
    """One placement for a whole run of pieces (:func:`_place_tasks`)."""
    segs = np.array([p[0] for p in run])
    slots = np.array([p[3] for p in run], dtype=np.float64)
    first = {k: c[segs] for k, c in win.curves.first_cost.items()}  # copies
    return _place_tasks(ctx, win.used[segs], slots, run[0][1], first)


def _place_tasks(
    ctx: Context,
    used: FloatArray,
    slots: FloatArray,
    level: int,
    first: dict[bool, FloatArray] | None = None,
) -> Placed | None:
    """The tasks of ``level`` steps placed once for a run of segments (``used`` (k, H, 3),
    ``slots`` (k,) of each): each task on the machine with the lowest price summed over the
    run's slots, ln Σ_s n_s·Σ_r P_s,r·d̂_r, among those with room in every slot of the run.
    None when the run's least room cannot hold them. ``first``: the tasks' per-slot log
    costs on the run's segments before any is placed, when already known."""
    ln_n = np.log(slots)
    used = used.copy()
    room = ctx.room(used).min(axis=0)
    if first is None:
        price = log_prices(used, ctx.capacity, ctx.ln_u, ctx.ln_l)
        first = {k: log_task_cost(price, ctx.unit(k)) for k in set(ctx.steps.tasks)}
    per_slot = first
    kinds = set(ctx.steps.tasks[: int(ctx.steps.first_task[level])])
    total = {k: np.logaddexp.reduce(per_slot[k] + ln_n[:, None], axis=0) for k in kinds}
    counts: dict[bool, Counter[int]] = {False: Counter(), True: Counter()}
    terms: list[float] = []
    tasks = ctx.steps.tasks[: int(ctx.steps.first_task[level])]
    for t, is_ps in enumerate(tasks):
        demand = ctx.demand(is_ps)
        h = _pick(room, total[is_ps], demand)
        if h is None:
            return None
        terms.append(float(total[is_ps][h]))
        counts[is_ps][h] += 1
        later = set(tasks[t + 1 :])  # the task types whose prices still matter
        if not later:
            break
        room[h] -= demand
        used[:, h] += demand
        rows = log_prices(used[:, h], ctx.capacity[h], ctx.ln_u, ctx.ln_l)
        for k in later:
            per_slot[k][:, h] = log_task_cost(rows, ctx.unit(k))
            total[k][h] = np.logaddexp.reduce(per_slot[k][:, h] + ln_n)
    return counts[False], counts[True], float(np.logaddexp.reduce(terms))


def _fast_path(
    ctx: Context, tl: Reserved, log_utility: Callable[[int], float]
) -> tuple[SlotPlan, float] | None:
    """The search's answer when it is known without it: one placement holds the job's
    largest shape in every slot from a until the work is covered, d = ⌈need / W⌉ slots
    (:func:`_place_tasks`), and that schedule costs less than the utility lost by ending
    one slot later. Then E₀ = a + d − 1, no later end pays more, and the split at E₀ takes
    (nearly) every slot at the largest shape: the fast path runs that shape in all d slots,
    its last slot doing up to W − 1 worker-slots more than the split's (which would drop
    them from its dearest slots), as one run (docs/formulation.md §13.2)."""
    most = int(ctx.steps.workers.sum())
    d = math.ceil(ctx.need / most)
    stop = ctx.a + d
    cut = None if stop >= tl.free_after else stop
    starts, lengths, used = segments(tl, ctx.a, cut, ctx.max_segments)
    slots = np.minimum(starts + lengths, stop) - starts
    inside = slots > 0
    placed = _place_tasks(ctx, used[inside], slots[inside].astype(np.float64), len(ctx.steps))
    if placed is None:
        return None
    workers, ps, ln_cost = placed
    now, later = log_utility(d), log_utility(d + 1)
    lost = -math.expm1(later - now)
    if not (lost > 0 and ln_cost < now + math.log(lost)):
        return None
    names = tl.names
    plan = SlotPlan(
        ctx.a,
        Mode.DISTRIBUTED,
        tuple((names[h], c) for h, c in sorted(workers.items())),
        tuple((names[h], c) for h, c in sorted(ps.items())),
        d,
    )
    return plan, ln_cost


def _place_piece(ctx: Context, win: Window, piece: Piece) -> Placed:
    """A piece placed as its segment's per-slot greedy did (always fits)."""
    s, level, _, n = piece
    tasks = int(ctx.steps.first_task[level])
    picks = win.curves.picks[s, :tasks].tolist()
    workers = Counter(h for h, is_ps in zip(picks, ctx.steps.tasks, strict=False) if not is_ps)
    ps = Counter(h for h, is_ps in zip(picks, ctx.steps.tasks, strict=False) if is_ps)
    cost = float(np.logaddexp.reduce(win.curves.cost[s, :level])) + math.log(n)
    return workers, ps, cost


def _realize(
    ctx: Context, win: Window, sched: Schedule, names: tuple[str, ...]
) -> tuple[tuple[SlotPlan, ...], float]:
    """The schedule's slot plans and their cost. Each run of slots with the same worker
    count keeps one placement (:func:`_place_run`; tasks move only when the count
    changes), or, when the run's least room is too small, each segment keeps its per-slot
    greedy placement."""

    def plan(first: int, length: int, workers: Counter[int], ps: Counter[int]) -> SlotPlan:
        return SlotPlan(
            first,
            Mode.DISTRIBUTED,
            tuple((names[h], c) for h, c in sorted(workers.items())),
            tuple((names[h], c) for h, c in sorted(ps.items())),
            length,
        )

    plans: list[SlotPlan] = []
    costs: list[float] = []
    for run in _runs(_pieces(win, sched)):
        whole = _place_run(ctx, win, run) if len(run) > 1 else None
        if whole is not None:
            plans += [plan(p[2], p[3], whole[0], whole[1]) for p in run]
            costs.append(whole[2])
            continue
        for piece in run:
            workers, ps, cost = _place_piece(ctx, win, piece)
            plans.append(plan(piece[2], piece[3], workers, ps))
            costs.append(cost)
    return merge_runs(plans), float(np.logaddexp.reduce(costs))


_Shape = tuple[FloatArray, FloatArray, FloatArray, FloatArray, Steps]
#: the last machines' capacity (kept, compared by identity) and the job shapes seen on it
_SHAPES: tuple[FloatArray | None, dict[tuple[object, ...], _Shape]] = (None, {})


def _shape(job: JobRequest, capacity: FloatArray) -> _Shape:
    """α, β, α̂, β̂ and the steps of the job's shape (cached per shape: a replay asks for
    the same few shapes tens of thousands of times)."""
    global _SHAPES
    key = (job.worker, job.ps, job.max_workers, job.ps_count, job.profile.ps_per_worker)
    kept, shapes = _SHAPES
    if kept is not capacity:
        kept, shapes = capacity, {}
        _SHAPES = (kept, shapes)
    hit = shapes.get(key)
    if hit is None:
        units = capacity.max(axis=0)
        hit = shapes[key] = (
            np.asarray(job.worker.as_tuple()),
            np.asarray(job.ps.as_tuple()),
            normalized(job.worker.as_tuple(), units),
            normalized(job.ps.as_tuple(), units),
            Steps.of(job),
        )
        for a in (*hit[:4], hit[4].workers, hit[4].ps, hit[4].first_task):
            a.flags.writeable = False  # shared by every job of the shape
    return hit


def _context(
    job: JobRequest, params: PlacementParams, factor: float, tl: Reserved, snapshot: ClusterSnapshot
) -> Context:
    alpha, beta, alpha_hat, beta_hat, steps = _shape(job, tl.capacity)
    if params.oasis_ln_u is None or params.oasis_ln_l is None:
        utility = {job.job_id: draw_utility(utility_seed(params), job.job_id)}
        alone = price_bounds([job], utility, snapshot)
        ln_u = alone.ln_u if params.oasis_ln_u is None else params.oasis_ln_u
        ln_l = alone.ln_l if params.oasis_ln_l is None else params.oasis_ln_l
    else:
        ln_u, ln_l = params.oasis_ln_u, params.oasis_ln_l
    nu = worker_rates(job, snapshot.slot_seconds)[1]
    return Context(
        job=job,
        a=tl.t0,
        nu=nu,
        need=max(1, math.ceil(job.workload / nu - 1e-9)),
        ln_u=ln_u + math.log(factor),
        ln_l=min(ln_l, ln_u) + math.log(factor),
        capacity=tl.capacity,
        alpha=alpha,
        beta=beta,
        alpha_hat=alpha_hat,
        beta_hat=beta_hat,
        steps=steps,
        max_segments=max(1, params.oasis_max_segments),
        ok=allowed(job, snapshot.machines),
    )


def _exp(x: float) -> float:
    return math.exp(min(x, 700.0))  # a cost e^700 times the utility: the payoff is negative


def _never(job: JobRequest) -> NeverFitsError:
    return NeverFitsError(
        f"job {job.job_id!r}: oasis runs every job distributed, and its smallest distributed "
        f"shape ({job.min_distributed_workers()} worker(s) + their PSs) never fits the cluster",
        hint="replay it with a policy that co-locates, or on a bigger cluster",
        context={"job_id": job.job_id},
    )


def _searched(
    ctx: Context, tl: Reserved, log_utility: Callable[[int], float], params: PlacementParams
) -> tuple[tuple[SlotPlan, ...], float, float]:
    """The best candidate of the search, realized: plans, ln cost, ln utility."""
    found = search(ctx, tl, max(1, params.oasis_end_candidates), log_utility)
    if not found or not found[1]:
        raise _never(ctx.job)
    win, schedules = found
    log_f = [log_utility(s.end - ctx.a + 1) for s in schedules]
    top = max(log_f)
    payoffs = [
        _exp(lf - top) - _exp(s.log_cost - top) for lf, s in zip(log_f, schedules, strict=True)
    ]
    # equal scaled payoffs (the costs underflow next to the utility): the cheaper, then earlier
    best = max(range(len(schedules)), key=lambda k: (payoffs[k], -schedules[k].log_cost, -k))
    plans, ln_cost = _realize(ctx, win, schedules[best], tl.names)
    return plans, ln_cost, log_f[best]


def _place(
    job: JobRequest, snapshot: ClusterSnapshot, params: PlacementParams, policy: str, factor: float
) -> Decision:
    began = time.perf_counter()
    tl = Reserved.of(snapshot, max(job.arrival_slot, snapshot.now_slot))
    ctx = _context(job, params, factor, tl, snapshot)
    utility = draw_utility(utility_seed(params), job.job_id)
    if not len(ctx.steps):
        raise _never(job)
    fast = _fast_path(ctx, tl, utility.log_value)
    if fast is not None:
        plans: tuple[SlotPlan, ...] = (fast[0],)
        ln_cost, ln_f = fast[1], utility.log_value(fast[0].length)
    else:
        plans, ln_cost, ln_f = _searched(ctx, tl, utility.log_value, params)
    payoff = 1.0 - _exp(ln_cost - ln_f)
    stats = (
        ("ln_utility", round(ln_f, 6)),
        ("ln_cost", round(ln_cost, 6)),
        ("payoff_over_utility", payoff),
        ("ln_u", ctx.ln_u),
        ("ln_l", ctx.ln_l),
    )
    if not payoff > 0:
        raise RejectedError(
            f"oasis rejects job {job.job_id!r}: its best schedule costs more than its utility "
            f"(ln utility {ln_f:.4g}, ln cost {ln_cost:.4g})",
            hint="admission control: the job would hold resources priced above its value",
            context={"job_id": job.job_id, **dict(stats)},
        )
    elapsed = (time.perf_counter() - began) * 1000.0
    return Decision(
        job_id=job.job_id,
        policy=policy,
        form=Form.ELASTIC,
        seed=params.seed,
        slots=plans,
        start_slot=plans[0].slot,
        end_slot=plans[-1].stop - 1,
        work_covered=ctx.nu * sum(p.total_workers * p.length for p in plans),
        arrival_slot=job.arrival_slot,
        solver=SOLVER,
        timings_ms=(("oasis", round(elapsed, 3)),),
        notes=(
            f"prices L·(U/L)^(g/c) with ln U = {ctx.ln_u:.6g}, ln L = {ctx.ln_l:.6g} "
            f"(oracle × {factor:g})",
            "OASiS runs every job distributed (θ_ex), even on one machine",
        ),
        stats=stats,
    )


def _variant(name: str, factor: float) -> ArrivalFn:
    def place_oasis(
        job: JobRequest, snapshot: ClusterSnapshot, params: PlacementParams
    ) -> Decision:
        return _place(job, snapshot, params, name, factor)

    place_oasis.__doc__ = (
        f"OASiS primal-dual pricing, admission by utility − cost > 0 (U, L: oracle × {factor:g})."
    )
    return place_oasis


#: The three variants by name, each the policy of its factor (the table of
#: :mod:`..policy_table` lists them).
VARIANT_POLICIES: dict[str, ArrivalFn] = {
    name: _variant(name, factor) for name, factor in VARIANTS.items()
}
