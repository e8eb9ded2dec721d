"""``yu-rr``, non-elastic form (docs/formulation.md §6; MODEL.md §5): constant counts from σ.

A job whose counts are constant from σ for d slots sees, per machine, the *minimum*
residual over [σ, σ + d); its LP is the one-block LP of :mod:`job_lp` with width d.
The smallest LP-feasible deadline D = σ + d − 1 is found exactly by walking, for each
candidate start σ (the arrival, then each slot where capacity changes), the segments in
which that window minimum is constant: inside a segment the LP's largest fractional rate
R is fixed, so the shortest feasible d there is ⌈V / R⌉ (an LP with the rate as its
objective). This is the deadline search of §4 step 2, made exact where feasibility in d
is not monotone (a reservation starting later can make a longer window infeasible).
Then the load-priced LP at (σ, D), K rounding trials, and repair, as in §4 steps 2–4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...errors import SolverError
from ...model import Mode
from ..program.highs_lp import LpStatus
from ..program.job_lp import FloatArray, IntArray, JobShape, LpSolution, Objective, solve_job_lp
from ..program.packing import (
    EPS,
    fill_distributed,
    first_fit,
    fit_counts,
    overloaded,
    shed_and_replace,
    unbiased_round,
)
from .arrival import Arrival


@dataclass
class StartSearch:
    start: int
    duration: int
    solution: LpSolution
    lp_solves: int

    @property
    def deadline(self) -> int:
        return self.start + self.duration - 1


def _rate_upper_bound(arr: Arrival, mins: FloatArray) -> float:
    """An upper bound on the LP's rate with window minimum ``mins`` (from column bounds)."""
    shape = arr.shape
    colo = np.array(arr.colo, dtype=np.int64)
    best_colo = 0.0
    if len(colo):
        fit = np.minimum(fit_counts(mins[colo] - shape.beta, shape.alpha), shape.n_max)
        best_colo = shape.nu_in * float(fit.max())
    dist = min(
        int(np.minimum(fit_counts(mins, shape.alpha), shape.n_dist_max).sum()), shape.n_dist_max
    )
    return max(best_colo, shape.nu_ex * dist)


def search_start(arr: Arrival) -> StartSearch:
    p, shape, res = arr.params, arr.shape, arr.res
    # Room only grows where a reservation ends: those slots (and the arrival) are the
    # only starts worth trying, in time order; every one is tried until a start is found
    # that no later one can beat. ``max_start_candidates`` caps how many of them reach
    # the LP (a safety bound on work; the empty cluster at free_after is always tried).
    grows = [t for t in res.increase_slots() if t > arr.a]
    candidates = [arr.a, *grows]
    if res.free_after > arr.a and res.free_after not in candidates:
        candidates.append(res.free_after)  # the empty cluster always works
    best: tuple[int, int] | None = None  # (start, duration)
    solves = 0
    tried = 0
    for sigma in candidates:
        if best is not None and sigma + arr.d_min - 1 >= best[0] + best[1] - 1:
            break
        if tried >= max(1, p.max_start_candidates) and sigma != res.free_after:
            continue
        if _rate_upper_bound(arr, res.window_min(sigma, sigma + arr.d_min)) <= EPS:
            continue  # nothing fits even for the shortest run: no LP needed
        tried += 1
        later = [t for t in res.change_slots() if t > sigma]
        seg_lo = arr.d_min
        while True:
            if best is not None and sigma + seg_lo - 1 >= best[0] + best[1] - 1:
                break
            nxt = next((t for t in later if t > sigma + seg_lo - 1), None)
            seg_hi = (nxt - sigma) if nxt is not None else math.inf
            mins = res.window_min(sigma, sigma + seg_lo)
            ub = _rate_upper_bound(arr, mins)
            if ub <= EPS:
                break
            if seg_hi * ub < shape.workload - 1e-9:
                seg_lo = int(seg_hi) + 1
                continue
            inst = arr.instance(np.array([sigma]), np.array([sigma + seg_lo]))
            sol = solve_job_lp(
                shape,
                inst,
                Objective.MAX_RATE,
                time_limit_s=p.time_limit_s,
                tight_links=p.tight_links,
            )
            solves += 1
            if sol.status != LpStatus.OPTIMAL:  # the rate LP is always feasible (all zero)
                raise SolverError(
                    f"HiGHS ended the rate LP at start slot {sigma} with status {sol.status}",
                    hint="raise time_limit_s, or report the instance",
                )
            rate = -sol.objective / seg_lo
            if rate <= EPS:
                break
            d = max(seg_lo, math.ceil(shape.workload / rate - 1e-9))
            if d <= seg_hi:
                if best is None or sigma + d < best[0] + best[1]:
                    best = (sigma, d)
                break
            seg_lo = int(seg_hi) + 1
    if best is None:
        raise RuntimeError("no start slot is LP-feasible, not even on the empty cluster")
    sigma, d = best
    inst = arr.instance(np.array([sigma]), np.array([sigma + d]))
    sol = solve_job_lp(shape, inst, Objective.PRICED, p.time_weight, p.time_limit_s, p.tight_links)
    solves += 1
    if not sol.feasible:  # numerical edge: the rate LP said yes at this width
        raise SolverError(
            f"the priced LP at start slot {sigma}, duration {d} ended {sol.status} although "
            "the rate LP allowed it",
            hint="report this as a bug with the job and cluster",
        )
    return StartSearch(sigma, d, sol, solves)


@dataclass
class Shape:
    """A constant placement: start, mode (machine index if co-located, -1 distributed)."""

    start: int
    colo: int
    w: IntArray
    s: IntArray
    actions: list[str] = field(default_factory=list)

    @property
    def workers(self) -> int:
        return int(self.w.sum())

    def copy(self) -> Shape:
        return Shape(self.start, self.colo, self.w.copy(), self.s.copy(), list(self.actions))


def duration(arr: Arrival, sh: Shape) -> int:
    rate = (arr.shape.nu_in if sh.colo >= 0 else arr.shape.nu_ex) * sh.workers
    return math.ceil(arr.shape.workload / rate - 1e-9) if rate > 0 else 0


def end_slot(arr: Arrival, sh: Shape) -> int:
    return sh.start + duration(arr, sh) - 1


def work_by(arr: Arrival, sh: Shape, deadline: int) -> float:
    """Work the shape covers by the end of slot ``deadline`` (at most V)."""
    rate = (arr.shape.nu_in if sh.colo >= 0 else arr.shape.nu_ex) * sh.workers
    return min(arr.shape.workload, rate * max(0, deadline - sh.start + 1))


def _room(arr: Arrival, sh: Shape, with_job: bool = True) -> FloatArray:
    d = max(duration(arr, sh), 1)
    room = arr.res.window_min(sh.start, sh.start + d).copy()
    if with_job:
        room -= sh.w[:, None] * arr.shape.alpha + sh.s[:, None] * arr.shape.beta
    return room


def violations(arr: Arrival, sh: Shape) -> int:
    if sh.workers == 0:
        return 0
    return int(overloaded(_room(arr, sh)).sum())


def max_overload(arr: Arrival, sh: Shape) -> float:
    """max over machines and resources of use / residual − 1 over the shape's run (≥ 0)."""
    if sh.workers == 0:
        return 0.0
    d = max(duration(arr, sh), 1)
    free = arr.res.window_min(sh.start, sh.start + d)
    use = sh.w[:, None] * arr.shape.alpha + sh.s[:, None] * arr.shape.beta
    ratio = np.where(use > 1e-9, use / np.maximum(free, 1e-9), 0.0)
    return float(max(ratio.max(initial=0.0) - 1.0, 0.0))


def round_trial(arr: Arrival, ss: StartSearch, rng: np.random.Generator) -> Shape:
    sol, lam, shape = ss.solution, arr.params.scale, arr.shape
    h_count, k = arr.res.n_machines, len(arr.colo)
    sh = Shape(ss.start, -1, np.zeros(h_count, dtype=np.int64), np.zeros(h_count, dtype=np.int64))
    probs = np.r_[sol.u[:, 0], sol.v[0]]
    pick = int(np.searchsorted(np.cumsum(probs), rng.random(), side="right"))
    if pick < k and sol.u[pick, 0] > EPS:
        h = arr.colo[pick]
        w = int(unbiased_round(np.array([lam * sol.wl[pick, 0] / sol.u[pick, 0]]), rng)[0])
        w = min(w, shape.n_max)
        if w > 0:
            sh.colo, sh.w[h], sh.s[h] = h, w, 1
    elif pick == k and sol.v[0] > EPS:
        gw = unbiased_round(lam * sol.wd[:, 0] / sol.v[0], rng)
        gs = unbiased_round(lam * sol.sd[:, 0] / sol.v[0], rng)
        room = arr.res.window_min(ss.start, ss.start + ss.duration).copy()
        spread_in_groups(sh, room, shape, gw, gs, arr.groups)
    return sh


def spread_in_groups(
    sh: Shape,
    room: FloatArray,
    shape: JobShape,
    gw: IntArray,
    gs: IntArray,
    groups: tuple[tuple[int, ...], ...],
) -> None:
    """Distributed counts drawn per group, onto machines: first fit in each group's
    machine order, PSs first, against ``room`` (updated); what does not fit stays on the
    group's first machine, over capacity, for repair to see; then at most N_D workers."""
    for g in np.flatnonzero((gs > 0) | (gw > 0)):
        order = np.array(groups[g], dtype=np.int64)
        for demand, count, row in ((shape.beta, gs[g], sh.s), (shape.alpha, gw[g], sh.w)):
            if count <= 0:
                continue
            placed = first_fit(room, demand, int(count), order)
            row += placed
            left = int(count) - int(placed.sum())
            if left > 0:
                row[order[0]] += left
                room[order[0]] -= demand * left
    _cap_workers(sh, shape.n_dist_max)


def _cap_workers(sh: Shape, limit: int) -> None:
    excess = sh.workers - limit
    for h in np.flatnonzero(sh.w)[::-1]:
        if excess <= 0:
            break
        take = min(excess, int(sh.w[h]))
        sh.w[h] -= take
        excess -= take


def _ps_rule(arr: Arrival, sh: Shape) -> None:
    """Distributed: exactly the PSs the rule asks (add where there is room, else shed
    workers); co-located: one PS on the machine."""
    job, shape = arr.job, arr.shape
    if sh.colo >= 0:
        sh.s[:] = 0
        sh.s[sh.colo] = 1 if sh.workers else 0
        return
    order = np.arange(arr.res.n_machines, dtype=np.int64)
    while sh.workers > 0:
        if shape.ps_fixed is not None and sh.workers < shape.ps_fixed:
            sh.w[:] = 0
            break
        need, have = job.ps_needed(sh.workers), int(sh.s.sum())
        if have > need:
            for h in np.flatnonzero(sh.s)[::-1]:
                drop = min(have - need, int(sh.s[h]))
                sh.s[h] -= drop
                have -= drop
            return
        if have == need:
            return
        room = _room(arr, sh)
        added = first_fit(room, shape.beta, need - have, order)
        sh.s += added
        if int(added.sum()) == need - have:
            return
        sh.w[np.flatnonzero(sh.w)[-1]] -= 1
    sh.s[:] = 0


def normalize(sh: Shape) -> None:
    """A distributed shape whose tasks all sit on one machine is co-located (O1)."""
    used = np.flatnonzero((sh.w + sh.s) > 0)
    if sh.colo < 0 and len(used) == 1 and sh.w[used[0]] > 0:
        sh.colo = int(used[0])
        sh.s[sh.colo] = 1


def repair(arr: Arrival, sh: Shape, deadline: int) -> Shape:
    """Make ``sh`` fit over its whole run, then add workers while it ends after D."""
    shape, names = arr.shape, arr.res.names
    order = np.arange(arr.res.n_machines, dtype=np.int64)
    _ps_rule(arr, sh)
    for _ in range(4 * (shape.n_max + 2)):
        if sh.workers == 0:
            break
        room = _room(arr, sh)
        over = overloaded(room)
        if not over.any():
            break
        if sh.colo >= 0:
            h, w = sh.colo, sh.workers
            free = _room(arr, sh, with_job=False)
            fit = fit_counts(free - shape.beta, shape.alpha)
            fit[h] = -1
            x = int(np.argmax(fit))
            sh.w[:] = 0
            sh.s[:] = 0
            if fit[x] >= w:
                sh.colo, sh.w[x], sh.s[x] = x, w, 1
                sh.actions.append(f"moved co-located job from {names[h]} to {names[x]}")
                continue
            sh.colo = -1
            sh.w, sh.s = fill_distributed(
                free,
                shape.alpha,
                shape.beta,
                arr.job.ps_needed,
                min(w, shape.n_dist_max),
                shape.n_dist_min,
                order,
            )
            sh.actions.append(
                f"co-located on {names[h]} did not fit; turned distributed with "
                f"{sh.workers} worker(s)"
            )
        else:
            shed_and_replace(room, sh.w, sh.s, shape.alpha, shape.beta, order)
            sh.actions.append(f"removed tasks over capacity; {sh.workers} worker(s) remain")
        _ps_rule(arr, sh)
        normalize(sh)
    if sh.workers == 0 or overloaded(_room(arr, sh)).any():
        return _fallback(arr, sh)
    add_workers(arr, sh, deadline)
    return sh


def add_workers(arr: Arrival, sh: Shape, deadline: int) -> None:
    """While the job ends after D, add a worker (and the PSs it needs) if it still fits."""
    shape = arr.shape
    order = np.arange(arr.res.n_machines, dtype=np.int64)
    added = 0
    while end_slot(arr, sh) > deadline:
        trial = sh.copy()
        if trial.colo >= 0:
            if trial.workers >= shape.n_max:
                break
            trial.w[trial.colo] += 1
        else:
            if trial.workers >= shape.n_dist_max:
                break
            trial.w, trial.s = fill_distributed(
                _room(arr, trial),
                shape.alpha,
                shape.beta,
                arr.job.ps_needed,
                1,
                0,
                order,
                trial.w,
                trial.s,
            )
        if trial.workers <= sh.workers or overloaded(_room(arr, trial)).any():
            break
        sh.w, sh.s = trial.w, trial.s
        added += 1
    if added:
        sh.actions.append(f"added {added} worker(s) to end sooner (LP deadline {deadline})")


def _fallback(arr: Arrival, sh: Shape) -> Shape:
    """Repair could not keep a shape at σ: start at the first candidate slot from which the
    largest shape that fits stays feasible until the cluster is empty (greedy)."""
    shape, res, job = arr.shape, arr.res, arr.job
    order = np.arange(res.n_machines, dtype=np.int64)
    starts = sorted({t for t in (sh.start, *res.change_slots(), res.free_after) if t >= sh.start})
    for sigma in starts:
        mins = res.window_min(sigma, max(res.free_after, sigma + 1))
        colo_fit = np.minimum(fit_counts(mins - shape.beta, shape.alpha), shape.n_max)
        h = int(np.argmax(colo_fit))
        w, s = fill_distributed(
            mins.copy(),
            shape.alpha,
            shape.beta,
            job.ps_needed,
            shape.n_dist_max,
            shape.n_dist_min,
            order,
        )
        out = Shape(sigma, -1, w, s, list(sh.actions))
        _ps_rule(arr, out)
        dist_rate = shape.nu_ex * out.workers
        if colo_fit[h] >= 1 and shape.nu_in * colo_fit[h] >= dist_rate:
            out.colo = h
            out.w[:] = 0
            out.s[:] = 0
            out.w[h], out.s[h] = int(colo_fit[h]), 1
        elif out.workers == 0:
            continue
        normalize(out)
        out.actions.append(
            f"rounded shape infeasible at slot {sh.start}; greedy start at "
            f"slot {sigma} with {out.workers} worker(s)"
        )
        return out
    raise RuntimeError("no start slot holds the job, not even on the empty cluster")


def signature(sh: Shape) -> bytes:
    """Identity of a drawn shape (start, mode, counts): equal draws repair equally."""
    return b"%d:%d:" % (sh.start, sh.colo) + sh.w.tobytes() + sh.s.tobytes()


def task_slots(arr: Arrival, sh: Shape) -> int:
    """Tasks × slots the shape holds (the tie-break: fewer is better)."""
    return (sh.workers + int(sh.s.sum())) * duration(arr, sh)


def trim(arr: Arrival, sh: Shape) -> Shape:
    """Remove workers that do not bring the end earlier (slot rounding), from the machine
    with the most workers last in machine order, with the PSs the rule then needs; a
    distributed shape left on one machine becomes co-located (faster, O1)."""
    if sh.workers <= 1:
        return sh
    end = end_slot(arr, sh)
    removed = 0
    while sh.workers > 1:
        trial = sh.copy()
        h = int(np.flatnonzero(trial.w)[-1])
        trial.w[h] -= 1
        if trial.colo < 0:
            if trial.workers < arr.shape.n_dist_min:
                break
            need = arr.job.ps_needed(trial.workers)
            for g in np.flatnonzero(trial.s)[::-1]:
                drop = min(int(trial.s.sum()) - need, int(trial.s[g]))
                if drop <= 0:
                    break
                trial.s[g] -= drop
            normalize(trial)
        if end_slot(arr, trial) > end or overloaded(_room(arr, trial)).any():
            break
        sh = trial
        removed += 1
    if removed:
        sh.actions.append(f"trimmed {removed} worker(s) that did not bring the end earlier")
    return sh


def mode_of(sh: Shape) -> Mode:
    return Mode.COLOCATED if sh.colo >= 0 else Mode.DISTRIBUTED
