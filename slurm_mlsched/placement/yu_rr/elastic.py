"""``yu-rr``, elastic form (docs/formulation.md §5; MODEL.md §4): counts change per slot.

1. Deadline search: the smallest D such that the job's LP relaxation on [a, D] is
   feasible (exponential then binary search; feasibility is monotone in D).
2. Load-priced LP at D (tie-break).
3. Per-block randomized rounding, K seeded trials; the trial with fewest capacity
   violations, then most covered work, is kept.
4. Repair at slot level: capacity first (move a co-located slot whole, else turn it
   distributed; drop and re-place distributed tasks), then cover the work at the earliest
   slots with room (past D if needed), then trim what is not needed; PS rules everywhere.
5. The restart cost (MODEL.md §6, the time model of every policy): each change of the
   allocation after the job first ran costs its new rate × ``restart_s``/Δ of work, and
   the schedule is extended until the work net of those losses is covered
   (:func:`pay_restarts`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...errors import SolverError
from ...model import Mode, SlotPlan
from ..program.highs_lp import LpStatus
from ..program.job_lp import FloatArray, IntArray, LpInstance, LpSolution, Objective, solve_job_lp
from ..program.packing import (
    EPS,
    fill_distributed,
    first_fit,
    fit_counts,
    overloaded,
    shed_and_replace,
    unbiased_round,
)
from .arrival import Arrival, blocks_for, slot_plan

IDLE, DIST = -1, -2


@dataclass
class SearchResult:
    deadline: int
    solution: LpSolution
    starts: IntArray
    stops: IntArray
    lp_solves: int
    instance: LpInstance


def search_deadline(arr: Arrival) -> SearchResult:
    """Smallest D with a feasible LP on [a, D], then the priced LP at that D."""
    p = arr.params
    solves = 0

    def feasible(deadline: int) -> bool:
        nonlocal solves
        solves += 1
        st, sp = blocks_for(arr.a, deadline, p.lp_max_blocks, arr.cuts())
        sol = solve_job_lp(
            arr.shape,
            arr.instance(st, sp),
            Objective.FEASIBILITY,
            time_limit_s=p.time_limit_s,
            tight_links=p.tight_links,
        )
        return _feasible(sol, deadline)

    # no LP solution ends earlier (the bound uses the tight link rows' caps)
    lo = arr.earliest_end_bound() if p.tight_links else arr.a + arr.d_min - 1
    last_ok: int | None = None
    if feasible(lo):
        last_ok = lo
    else:
        step, prev_bad, cap = 1, lo, arr.longest_end()
        while True:
            cand = min(prev_bad + step, cap)
            if feasible(cand):
                last_ok = cand
                break
            if cand >= cap:
                raise RuntimeError("LP infeasible at a deadline where the cluster is empty")
            prev_bad, step = cand, step * 2
        lo_bad = prev_bad
        while last_ok - lo_bad > 1:
            mid = (lo_bad + last_ok) // 2
            if feasible(mid):
                last_ok = mid
            else:
                lo_bad = mid
    st, sp = blocks_for(arr.a, last_ok, p.lp_max_blocks, arr.cuts())
    inst = arr.instance(st, sp)
    sol = solve_job_lp(
        arr.shape,
        inst,
        Objective.PRICED,
        p.time_weight,
        p.time_limit_s,
        p.tight_links,
    )
    solves += 1
    if not _feasible(sol, last_ok):
        raise SolverError(
            f"the priced LP at deadline slot {last_ok} is infeasible although the feasibility "
            "LP was not",
            hint="report this as a bug with the job and cluster",
        )
    return SearchResult(last_ok, sol, st, sp, solves, inst)


def _feasible(sol: LpSolution, deadline: int) -> bool:
    """Optimal means feasible, infeasible means not; any other end is an error, never
    read as infeasible."""
    if sol.status in (LpStatus.OPTIMAL, LpStatus.INFEASIBLE):
        return sol.feasible
    raise SolverError(
        f"HiGHS ended the LP for deadline slot {deadline} with status {sol.status}",
        hint="raise time_limit_s, or report the instance",
        context={"deadline": deadline, "status": str(sol.status)},
    )


@dataclass
class BlockDraw:
    """One rounding trial: per block, the mode and the group counts."""

    mode: IntArray  # (B,) IDLE, DIST or a colo index j
    colo_w: IntArray  # (B,)
    dist_w: IntArray  # (G, B)
    dist_s: IntArray  # (G, B)
    violations: float = 0.0
    work: float = 0.0
    max_overload: float = 0.0  # max over (machine group, resource, block) of use/cap − 1


def round_trial(arr: Arrival, sr: SearchResult, rng: np.random.Generator) -> BlockDraw:
    sol, lam, shape = sr.solution, arr.params.scale, arr.shape
    k, g_count, b_count = len(arr.colo), len(arr.groups), len(sr.starts)
    draw = BlockDraw(
        mode=np.full(b_count, IDLE, dtype=np.int64),
        colo_w=np.zeros(b_count, dtype=np.int64),
        dist_w=np.zeros((g_count, b_count), dtype=np.int64),
        dist_s=np.zeros((g_count, b_count), dtype=np.int64),
    )
    for b in range(b_count):
        probs = np.r_[sol.u[:, b], sol.v[b]]
        pick = int(np.searchsorted(np.cumsum(probs), rng.random(), side="right"))
        if pick < k and sol.u[pick, b] > EPS:
            w = unbiased_round(np.array([lam * sol.wl[pick, b] / sol.u[pick, b]]), rng)[0]
            draw.mode[b], draw.colo_w[b] = pick, min(int(w), shape.n_max)
        elif pick == k and sol.v[b] > EPS:
            draw.mode[b] = DIST
            draw.dist_w[:, b] = unbiased_round(lam * sol.wd[:, b] / sol.v[b], rng)
            draw.dist_s[:, b] = unbiased_round(lam * sol.sd[:, b] / sol.v[b], rng)
            _cap_total(draw.dist_w[:, b], shape.n_dist_max)
    _score(arr, sr, draw)
    return draw


def _cap_total(counts: IntArray, limit: int) -> None:
    excess = int(counts.sum()) - limit
    for g in range(len(counts) - 1, -1, -1):
        if excess <= 0:
            break
        take = min(excess, int(counts[g]))
        counts[g] -= take
        excess -= take


def _score(arr: Arrival, sr: SearchResult, draw: BlockDraw) -> None:
    inst = sr.instance
    shape = arr.shape
    widths = inst.widths.astype(np.float64)
    use = (
        shape.alpha[None, :, None] * draw.dist_w[:, None, :]
        + shape.beta[None, :, None] * draw.dist_s[:, None, :]
    )  # (G, 3, B)
    for b in np.flatnonzero(draw.mode >= 0):
        j = int(draw.mode[b])
        use[j, :, b] += shape.alpha * draw.colo_w[b] + shape.beta
    over = (use > inst.cap + 1e-7).any(axis=1).sum(axis=0)  # (B,)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(use > 1e-9, use / np.maximum(inst.cap, 1e-9), 0.0)
    draw.max_overload = float(max(ratio.max(initial=0.0) - 1.0, 0.0))
    draw.violations = float((over * widths).sum())
    rate = np.where(draw.mode >= 0, shape.nu_in * draw.colo_w, 0.0)
    rate = rate + np.where(draw.mode == DIST, shape.nu_ex * draw.dist_w.sum(axis=0), 0.0)
    draw.work = float((rate * widths).sum())


@dataclass
class Working:
    """A slot-level schedule being repaired: slots a .. a + T − 1."""

    a: int
    mode: IntArray  # (T,) IDLE, DIST, or the machine index h it is co-located on
    w: IntArray  # (T, H)
    s: IntArray  # (T, H)
    actions: list[str] = field(default_factory=list)

    def grow(self, length: int) -> None:
        extra = length - len(self.mode)
        if extra > 0:
            h = self.w.shape[1]
            self.mode = np.r_[self.mode, np.full(extra, IDLE, dtype=np.int64)]
            self.w = np.vstack([self.w, np.zeros((extra, h), dtype=np.int64)])
            self.s = np.vstack([self.s, np.zeros((extra, h), dtype=np.int64)])


def materialize(arr: Arrival, sr: SearchResult, draw: BlockDraw) -> Working:
    """Expand block draws to machines and slots (groups filled first-fit)."""
    h_count = arr.res.n_machines
    length = int(sr.stops[-1]) - arr.a
    ws = Working(
        arr.a,
        np.full(length, IDLE, dtype=np.int64),
        np.zeros((length, h_count), dtype=np.int64),
        np.zeros((length, h_count), dtype=np.int64),
    )
    shape = arr.shape
    for b, (st, sp) in enumerate(zip(sr.starts, sr.stops, strict=True)):
        t_lo, t_hi = int(st) - arr.a, int(sp) - arr.a
        if draw.mode[b] >= 0:
            h = arr.colo[int(draw.mode[b])]
            if draw.colo_w[b] > 0:
                ws.mode[t_lo:t_hi] = h
                ws.w[t_lo:t_hi, h] = draw.colo_w[b]
                ws.s[t_lo:t_hi, h] = 1
        elif draw.mode[b] == DIST and draw.dist_w[:, b].sum() > 0:
            room = arr.res.window_min(int(st), int(sp)).copy()
            w_row = np.zeros(h_count, dtype=np.int64)
            s_row = np.zeros(h_count, dtype=np.int64)
            for g, members in enumerate(arr.groups):
                order = np.array(members, dtype=np.int64)
                for demand, count, row in (
                    (shape.beta, draw.dist_s[g, b], s_row),
                    (shape.alpha, draw.dist_w[g, b], w_row),
                ):
                    placed = first_fit(room, demand, int(count), order)
                    row += placed
                    left = int(count) - int(placed.sum())
                    if left > 0:  # over capacity: keep it on the group's first machine
                        row[order[0]] += left
                        room[order[0]] -= demand * left
            ws.mode[t_lo:t_hi] = DIST
            ws.w[t_lo:t_hi] = w_row
            ws.s[t_lo:t_hi] = s_row
    return ws


def _room(arr: Arrival, ws: Working, t: int, exclude_job: bool = False) -> FloatArray:
    base = arr.res.at(ws.a + t).copy()
    if not exclude_job:
        base -= ws.w[t][:, None] * arr.shape.alpha + ws.s[t][:, None] * arr.shape.beta
    return base


def _ps_rule(arr: Arrival, ws: Working, t: int) -> None:
    """Enforce PS rules in a distributed slot: enough PSs for the workers, never more PSs
    than needed (nor than workers); drop workers when no PS can be added."""
    job, shape = arr.job, arr.shape
    if ws.mode[t] != DIST:
        return
    while True:
        workers = int(ws.w[t].sum())
        if workers == 0 or (shape.ps_fixed is not None and workers < shape.ps_fixed):
            ws.w[t] = 0
            ws.s[t] = 0
            ws.mode[t] = IDLE
            return
        need = job.ps_needed(workers)
        have = int(ws.s[t].sum())
        if have > need:
            for h in np.flatnonzero(ws.s[t])[::-1]:
                drop = min(have - need, int(ws.s[t, h]))
                ws.s[t, h] -= drop
                have -= drop
            return
        if have == need:
            return
        room = _room(arr, ws, t)
        added = first_fit(room, shape.beta, need - have, np.arange(len(room), dtype=np.int64))
        ws.s[t] += added
        if int(added.sum()) == need - have:
            return
        last = np.flatnonzero(ws.w[t])[-1]  # no room for a PS: shed a worker and retry
        ws.w[t, last] -= 1


def repair_capacity(arr: Arrival, ws: Working) -> None:
    shape = arr.shape
    order_all = np.arange(arr.res.n_machines, dtype=np.int64)
    for t in range(len(ws.mode)):
        if ws.mode[t] == IDLE:
            continue
        room = _room(arr, ws, t)
        if not overloaded(room).any():
            _ps_rule(arr, ws, t)
            _normalize(ws, t)
            continue
        slot = ws.a + t
        if ws.mode[t] >= 0:
            h = int(ws.mode[t])
            w = int(ws.w[t, h])
            free = _room(arr, ws, t, exclude_job=True)
            fit = fit_counts(free - shape.beta, shape.alpha)
            fit[h] = -1
            x = int(np.argmax(fit))
            ws.w[t] = 0
            ws.s[t] = 0
            if fit[x] >= w:
                ws.mode[t] = x
                ws.w[t, x], ws.s[t, x] = w, 1
                ws.actions.append(
                    f"slot {slot}: moved co-located job from "
                    f"{arr.res.names[h]} to {arr.res.names[x]}"
                )
                continue
            ws.mode[t] = DIST
            ws.w[t], ws.s[t] = fill_distributed(
                free,
                shape.alpha,
                shape.beta,
                arr.job.ps_needed,
                min(w, shape.n_dist_max),
                shape.n_dist_min,
                order_all,
            )
            if int(ws.w[t].sum()) == 0:
                ws.mode[t] = IDLE
            ws.actions.append(
                f"slot {slot}: co-located on {arr.res.names[h]} did not fit; "
                f"turned distributed with {int(ws.w[t].sum())} worker(s)"
            )
        else:
            shed_and_replace(room, ws.w[t], ws.s[t], shape.alpha, shape.beta, order_all)
            ws.actions.append(
                f"slot {slot}: removed tasks over capacity; {int(ws.w[t].sum())} worker(s) remain"
            )
        _ps_rule(arr, ws, t)
        _normalize(ws, t)


def _normalize(ws: Working, t: int) -> None:
    """A distributed slot whose tasks all sit on one machine is co-located (O1)."""
    if ws.mode[t] != DIST:
        return
    used = np.flatnonzero((ws.w[t] + ws.s[t]) > 0)
    if len(used) == 1 and ws.w[t, used[0]] > 0:
        h = int(used[0])
        ws.mode[t] = h
        ws.s[t, h] = 1


def _slot_rate(arr: Arrival, ws: Working, t: int) -> float:
    if ws.mode[t] == IDLE:
        return 0.0
    rate = arr.shape.nu_in if ws.mode[t] >= 0 else arr.shape.nu_ex
    return rate * float(ws.w[t].sum())


def cover_work(arr: Arrival, ws: Working, target: float | None = None) -> None:
    """Add workers at the earliest slots with room until the work (``target``, default
    V) is covered."""
    shape, job = arr.shape, arr.job
    goal = shape.workload if target is None else target
    order_all = np.arange(arr.res.n_machines, dtype=np.int64)
    covered = sum(_slot_rate(arr, ws, t) for t in range(len(ws.mode)))
    t = 0
    added_slots: list[int] = []
    slowest = min(shape.nu_ex * shape.n_dist_min, shape.nu_in)
    limit = arr.longest_end() - arr.a + 1 + math.ceil(max(0.0, goal - shape.workload) / slowest)
    while covered < goal - 1e-9:
        if t > limit:
            raise RuntimeError(
                f"repair could not cover the work of job {job.job_id!r} by slot "
                f"{arr.a + t}, past the slot where the cluster is empty"
            )
        if t >= len(ws.mode):
            ws.grow(max(2 * len(ws.mode), t + 1))
        before = _slot_rate(arr, ws, t)
        remaining = goal - covered
        room = _room(arr, ws, t)
        if ws.mode[t] >= 0:
            h = int(ws.mode[t])
            need = math.ceil(remaining / shape.nu_in - 1e-9)
            add = min(
                shape.n_max - int(ws.w[t, h]),
                int(fit_counts(room[h : h + 1], shape.alpha)[0]),
                need,
            )
            ws.w[t, h] += max(add, 0)
        elif ws.mode[t] == DIST:
            _add_distributed(arr, ws, t, room, math.ceil(remaining / shape.nu_ex - 1e-9), order_all)
        else:
            colo_fit = np.minimum(fit_counts(room - shape.beta, shape.alpha), shape.n_max)
            h = int(np.argmax(colo_fit))
            w_try, _ = fill_distributed(
                room.copy(),
                shape.alpha,
                shape.beta,
                job.ps_needed,
                shape.n_dist_max,
                shape.n_dist_min,
                order_all,
            )
            dist_rate = shape.nu_ex * int(w_try.sum())
            if colo_fit[h] >= 1 and shape.nu_in * colo_fit[h] >= dist_rate:
                need = math.ceil(remaining / shape.nu_in - 1e-9)
                ws.mode[t] = h
                ws.w[t, h] = min(int(colo_fit[h]), need)
                ws.s[t, h] = 1
            elif dist_rate > 0:
                ws.mode[t] = DIST
                _add_distributed(
                    arr, ws, t, room, math.ceil(remaining / shape.nu_ex - 1e-9), order_all
                )
        gained = _slot_rate(arr, ws, t) - before
        if gained > 0:
            added_slots.append(ws.a + t)
        covered += gained
        t += 1
    if added_slots:
        ws.actions.append(
            f"added workers in {len(added_slots)} slot(s) "
            f"({added_slots[0]}..{added_slots[-1]}) to cover the work"
        )


def _add_distributed(
    arr: Arrival, ws: Working, t: int, room: FloatArray, wanted: int, order: IntArray
) -> None:
    """Add up to ``wanted`` workers (with the PSs they need) in a distributed slot."""
    shape = arr.shape
    wanted = min(max(wanted, shape.n_dist_min), shape.n_dist_max - int(ws.w[t].sum()))
    ws.w[t], ws.s[t] = fill_distributed(
        room,
        shape.alpha,
        shape.beta,
        arr.job.ps_needed,
        wanted,
        shape.n_dist_min,
        order,
        ws.w[t],
        ws.s[t],
    )
    if int(ws.w[t].sum()) == 0:
        ws.mode[t] = IDLE
        ws.s[t] = 0
    else:
        _normalize(ws, t)


def trim(arr: Arrival, ws: Working) -> None:
    """Clear everything after the slot where the work is covered, and shrink that slot to
    the workers it still needs."""
    covered = 0.0
    for t in range(len(ws.mode)):
        rate = _slot_rate(arr, ws, t)
        if rate <= 0:
            continue
        if covered + rate >= arr.shape.workload - 1e-9:
            per = arr.shape.nu_in if ws.mode[t] >= 0 else arr.shape.nu_ex
            need = math.ceil((arr.shape.workload - covered) / per - 1e-9)
            _shrink(arr, ws, t, need)
            ws.mode[t + 1 :] = IDLE
            ws.w[t + 1 :] = 0
            ws.s[t + 1 :] = 0
            return
        covered += rate


def _shrink(arr: Arrival, ws: Working, t: int, need: int) -> None:
    excess = int(ws.w[t].sum()) - need
    if excess <= 0:
        return
    if ws.mode[t] == DIST and arr.shape.ps_fixed is not None:
        need = max(need, arr.shape.ps_fixed)
        excess = int(ws.w[t].sum()) - need
    for h in np.flatnonzero(ws.w[t])[::-1]:
        if excess <= 0:
            break
        take = min(excess, int(ws.w[t, h]))
        ws.w[t, h] -= take
        excess -= take
    _ps_rule(arr, ws, t)
    _normalize(ws, t)


def to_plans(arr: Arrival, ws: Working) -> tuple[tuple[SlotPlan, ...], float]:
    plans: list[SlotPlan] = []
    work = 0.0
    for t in range(len(ws.mode)):
        if ws.mode[t] == IDLE or ws.w[t].sum() == 0:
            continue
        mode = Mode.COLOCATED if ws.mode[t] >= 0 else Mode.DISTRIBUTED
        plans.append(slot_plan(ws.a + t, mode, arr.res.names, ws.w[t], ws.s[t]))
        work += _slot_rate(arr, ws, t)
    return tuple(plans), work


def restart_losses(arr: Arrival, ws: Working) -> tuple[float, int]:
    """The work the schedule's allocation changes cost (MODEL.md §6, ``restart_s``) and
    how many there are: a slot whose allocation (mode, per-machine counts) differs from
    the previous slot's, after the job has run once (the first start is free; a resume
    after idle slots is a change), loses its new rate × ``restart_s``/Δ — the charge of
    the re-allocating policies' loop (``sim.realloc``)."""
    restart = max(0.0, arr.params.restart_s) / _slot_seconds(arr)
    lost, changes, ran = 0.0, 0, False
    prev: tuple[int, bytes, bytes] | None = None
    for t in range(len(ws.mode)):
        active = ws.mode[t] != IDLE and ws.w[t].sum() > 0
        now = (int(ws.mode[t]), ws.w[t].tobytes(), ws.s[t].tobytes()) if active else None
        if active and ran and now != prev:
            lost += _slot_rate(arr, ws, t) * restart
            changes += 1
        ran = ran or active
        prev = now
    return lost, changes


def _slot_seconds(arr: Arrival) -> float:
    """Δ, the slot length the job's rates are per."""
    return arr.shape.slot_seconds


def stabilize(arr: Arrival, ws: Working) -> None:
    """Keep an allocation rather than change it for nothing: a slot whose allocation
    differs from the previous slot's takes the previous one instead when that one fits
    the slot's room and trains at least as fast (a migration between equal machines, or a
    shrink-then-grow, costs a restart and buys nothing)."""
    kept = 0
    for t in range(1, len(ws.mode)):
        prev_on = ws.mode[t - 1] != IDLE and ws.w[t - 1].sum() > 0
        if not prev_on or ws.mode[t] == IDLE or ws.w[t].sum() == 0:
            continue
        if (
            ws.mode[t] == ws.mode[t - 1]
            and (ws.w[t] == ws.w[t - 1]).all()
            and (ws.s[t] == ws.s[t - 1]).all()
        ):
            continue
        before = _slot_rate(arr, ws, t)
        mode, w, s = ws.mode[t], ws.w[t].copy(), ws.s[t].copy()
        ws.mode[t], ws.w[t], ws.s[t] = ws.mode[t - 1], ws.w[t - 1], ws.s[t - 1]
        if _slot_rate(arr, ws, t) + 1e-12 < before or overloaded(_room(arr, ws, t)).any():
            ws.mode[t], ws.w[t], ws.s[t] = mode, w, s
        else:
            kept += 1
    if kept:
        ws.actions.append(f"kept the previous allocation in {kept} slot(s) (no restart)")


def pay_restarts(arr: Arrival, ws: Working) -> int:
    """Cover the work the restarts cost (:func:`restart_losses`): the last allocation is
    kept for more slots while the room allows (no new change), else workers are added at
    the earliest slots with room after it; repeated until the work net of every restart is
    covered. Returns the number of restarts of the final schedule."""
    for _ in range(64):
        lost, changes = restart_losses(arr, ws)
        gross = float(sum(_slot_rate(arr, ws, t) for t in range(len(ws.mode))))
        deficit = arr.shape.workload + lost - gross
        if deficit <= 1e-9:
            return changes
        active = [t for t in range(len(ws.mode)) if ws.mode[t] != IDLE and ws.w[t].sum() > 0]
        last = active[-1]
        added = 0
        t = last + 1
        while deficit > 1e-9:
            if t >= len(ws.mode):
                ws.grow(max(2 * len(ws.mode), t + 1))
            use = ws.w[last][:, None] * arr.shape.alpha + ws.s[last][:, None] * arr.shape.beta
            if overloaded(arr.res.at(ws.a + t) - use).any():
                break
            ws.mode[t], ws.w[t], ws.s[t] = ws.mode[last], ws.w[last], ws.s[last]
            deficit -= _slot_rate(arr, ws, t)
            added += 1
            t += 1
        if added:
            ws.actions.append(f"kept the last allocation {added} more slot(s) to pay restarts")
        if deficit > 1e-9:
            cover_work(arr, ws, target=gross + deficit)
    raise RuntimeError(f"restarts of job {arr.job.job_id!r} could not be paid for")
