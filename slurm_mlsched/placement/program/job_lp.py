r"""The per-arrival LP relaxation of one job's program (docs/formulation.md §4), in blocks.

On arrival of job i the earlier jobs are fixed, so the program of §3 reduces to job i on
residual capacity C̃. The window of slots [a, D] is split into blocks b = 1..B of
ω_b slots each (ω_b = 1 when the window has at most ``lp_max_blocks`` slots; otherwise
slots are merged and a block's capacity is the *minimum* residual over its slots, which
keeps every block solution feasible slot by slot). Machines are the co-location
candidates j ∈ K (the k with most room) and groups g ∈ G of interchangeable machines
(each j ∈ K is also its own singleton group; a group of n identical machines has
capacity n·C̃). Variables per block b:

    ū[j,b] ∈ [0,1]       co-located on machine j
    v̄[b]   ∈ [0,1]       distributed
    wL[j,b], sL[j,b]     co-located worker / PS counts on j
    wD[g,b], sD[g,b]     distributed worker / PS counts in group g

Constraints per block b (N = max workers, N_D = max distributed workers,
ρ = b_ex / B_ex, α, β = worker and PS demand):

    Σ_j ū[j,b] + v̄[b] ≤ 1                                    (mode, packing)
    wL[j,b] ≤ L[j,b]·ū[j,b];  sL[j,b] = ū[j,b]               (link; one PS co-located, O3)
    Σ_g wD[g,b] ≤ L_D[b]·v̄[b]                                (link)
    Σ_g sD[g,b] ≥ ρ·Σ_g wD[g,b];  Σ_g sD[g,b] ≤ Σ_g wD[g,b]   (PS covering; PS cap)
      (fixed PS count S instead: Σ_g sD = S·v̄,  Σ_g wD ≥ S·v̄)
    α_r(wL[j,b] + wD[j,b]) + β_r(sL[j,b] + sD[j,b]) ≤ C̃[j,r,b]   (capacity, j ∈ K)
    α_r·wD[g,b] + β_r·sD[g,b] ≤ n_g·C̃[g,r,b]                  (capacity, other groups)

and over the window, the work covering row

    Σ_b ω_b (ν_in Σ_j wL[j,b] + ν_ex Σ_g wD[g,b]) ≥ V.

With ``tight_links`` (default) L[j,b] = min(N, ⌊(C̃[j,b] − β)/α⌋) and L_D[b] =
min(N_D, Σ_g n_g⌊C̃[g,b]/α⌋), the most workers the mode can hold in that block; MODEL.md
§3 writes N and N_D, which is the same integer program but a much weaker relaxation (a
job could be "co-located" a quarter on each of four machines at full count). Scaling a
mode's counts by 1/probability then never asks for more than the machine holds.
Column bounds add valid cuts: wL[j,b] ≤ ⌊(C̃[j,b] − β)/α⌋ and wD[g,b] ≤ n_g·⌊C̃[g,b]/α⌋
(per machine, whole tasks). The objective is either zero (feasibility, in the deadline
search), the load-priced usage (tie-break, §4 step 2)

    min Σ_b ω_b·(1 + τ_w·b/B)·Σ_{h,r} p[h,r,b]·usage[h,r,b],   p = (1 + load) / C,

or the rate (max ν_in Σ wL + ν_ex Σ wD, without the work row: the non-elastic search).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from ...model import JobRequest
from ...model.speed import worker_rates
from .highs_lp import INF, LpResult, LpStatus, SparseLp, solve_lp

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class Objective(StrEnum):
    FEASIBILITY = "feasibility"
    PRICED = "priced"
    MAX_RATE = "max-rate"


@dataclass(frozen=True)
class JobShape:
    """What the LP needs to know of the job (derived once per arrival)."""

    alpha: FloatArray  # (3,)
    beta: FloatArray  # (3,)
    n_max: int
    n_dist_max: int
    n_dist_min: int
    ps_fixed: int | None
    rho: float
    nu_in: float
    nu_ex: float
    workload: float
    slot_seconds: float = 600.0  # Δ the rates are per

    @staticmethod
    def of(job: JobRequest, slot_seconds: float) -> JobShape:
        return JobShape(
            alpha=np.array(job.worker.as_tuple()),
            beta=np.array(job.ps.as_tuple()),
            n_max=job.max_workers,
            n_dist_max=job.max_distributed_workers(),
            n_dist_min=job.min_distributed_workers(),
            ps_fixed=job.ps_count,
            rho=job.profile.ps_per_worker,
            nu_in=worker_rates(job, slot_seconds)[0],
            nu_ex=worker_rates(job, slot_seconds)[1],
            workload=job.workload,
            slot_seconds=slot_seconds,
        )


@dataclass(frozen=True)
class LpInstance:
    """Blocks and capacities of one LP: ``cap`` is (G, 3, B) group capacity (n_g × C̃)."""

    widths: IntArray  # (B,)
    n_colo: int  # the first n_colo groups are the co-location candidates (singletons)
    group_sizes: IntArray  # (G,)
    cap: FloatArray  # (G, 3, B) capacity of the whole group per block
    price: FloatArray  # (G, 3, B) price of one unit of resource on one machine of g


@dataclass(frozen=True)
class LpSolution:
    status: LpStatus
    u: FloatArray  # (K, B)
    wl: FloatArray  # (K, B)
    v: FloatArray  # (B,)
    wd: FloatArray  # (G, B)
    sd: FloatArray  # (G, B)
    objective: float

    @property
    def feasible(self) -> bool:
        return self.status == LpStatus.OPTIMAL


def _floor_div(cap: FloatArray, demand: FloatArray) -> FloatArray:
    """⌊cap / demand⌋ over resources with demand > 0 (min over r); shape cap[...,3,B]."""
    mask = demand > 0
    if not mask.any():
        return np.full(cap.shape[:-2] + cap.shape[-1:], np.inf)
    q = np.floor(cap[..., mask, :] / demand[mask][:, None] + 1e-9)
    out: FloatArray = q.min(axis=-2)
    return out


def whole_task_caps(
    shape: JobShape, colo_cap: FloatArray, per_machine: FloatArray, group_sizes: IntArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per block, the most whole tasks each column can hold (valid for the integer
    program): co-located workers on each candidate, min(N, ⌊(C̃ − β)/α⌋) (K, B) from its
    capacity ``colo_cap`` (K, 3, B); distributed workers and PSs per group,
    min(N_D, n_g·⌊C̃/α⌋) and min(N_D, n_g·⌊C̃/β⌋) (G, B) from ``per_machine`` (G, 3, B)."""
    wl_fit = np.minimum(_floor_div(colo_cap - shape.beta[None, :, None], shape.alpha), shape.n_max)
    wl_fit = np.maximum(wl_fit, 0.0)
    wd_fit = np.minimum(
        group_sizes[:, None] * _floor_div(per_machine, shape.alpha), float(shape.n_dist_max)
    )
    sd_fit = np.minimum(
        group_sizes[:, None] * _floor_div(per_machine, shape.beta), float(shape.n_dist_max)
    )
    return wl_fit, wd_fit, sd_fit


def build_lp(
    shape: JobShape,
    inst: LpInstance,
    objective: Objective,
    time_weight: float = 0.05,
    tight_links: bool = True,
) -> SparseLp:
    """Assemble the block LP described in the module docstring as sparse arrays."""
    k, g_count, b_count = inst.n_colo, len(inst.group_sizes), len(inst.widths)
    nv = 3 * k + 1 + 2 * g_count
    iu, iwl, isl = np.arange(k), k + np.arange(k), 2 * k + np.arange(k)
    iv = 3 * k
    iwd, isd = 3 * k + 1 + np.arange(g_count), 3 * k + 1 + g_count + np.arange(g_count)
    res_mask = (shape.alpha > 0) | (shape.beta > 0)
    res_idx = np.flatnonzero(res_mask)
    nres = len(res_idx)

    rows: list[IntArray] = []
    cols: list[IntArray] = []
    vals: list[FloatArray] = []
    lo: list[float] = []
    hi: list[float] = []
    r = 0

    def add(cidx: IntArray, cval: FloatArray, low: float, high: float) -> None:
        nonlocal r
        rows.append(np.full(len(cidx), r, dtype=np.int64))
        cols.append(np.asarray(cidx, dtype=np.int64))
        vals.append(np.asarray(cval, dtype=np.float64))
        lo.append(low)
        hi.append(high)
        r += 1

    # --- per-block whole-task caps (valid for the integer program) ---
    per_machine = inst.cap / inst.group_sizes[:, None, None]
    wl_fit, wd_fit, sd_fit = whole_task_caps(shape, inst.cap[:k], per_machine, inst.group_sizes)
    if tight_links:
        link_colo = wl_fit  # wL ≤ min(N, fit_j)·u
        link_dist = np.minimum(wd_fit.sum(axis=0), float(shape.n_dist_max))  # (B,)
    else:
        link_colo = np.full((k, b_count), float(shape.n_max))
        link_dist = np.full(b_count, float(shape.n_dist_max))

    # --- one block's pattern (column indices local to the block) ---
    add(np.r_[iu, iv], np.ones(k + 1), -INF, 1.0)  # mode
    link_pos: list[int] = []  # positions (in the pattern's values) of -cap·u terms
    for j in range(k):
        link_pos.append(sum(len(v) for v in vals) + 1)
        add(np.array([iwl[j], iu[j]]), np.array([1.0, -1.0]), -INF, 0.0)
        add(np.array([isl[j], iu[j]]), np.array([1.0, -1.0]), 0.0, 0.0)
    dist_pos = sum(len(v) for v in vals) + g_count
    add(np.r_[iwd, iv], np.r_[np.ones(g_count), -1.0], -INF, 0.0)
    if shape.ps_fixed is None:
        add(np.r_[isd, iwd], np.r_[np.ones(g_count), -shape.rho * np.ones(g_count)], 0.0, INF)
        add(np.r_[isd, iwd], np.r_[np.ones(g_count), -np.ones(g_count)], -INF, 0.0)
    else:
        s = float(shape.ps_fixed)
        add(np.r_[isd, iv], np.r_[np.ones(g_count), -s], 0.0, 0.0)
        add(np.r_[iwd, iv], np.r_[np.ones(g_count), -s], 0.0, INF)
    # capacity rows: colo machines then other groups, one per (group, resource)
    cap_row_start = r
    for g in range(g_count):
        for ri in res_idx:
            a, bta = shape.alpha[ri], shape.beta[ri]
            if g < k:
                add(
                    np.array([iwl[g], isl[g], iwd[g], isd[g]]),
                    np.array([a, bta, a, bta]),
                    -INF,
                    0.0,
                )
            else:
                add(np.array([iwd[g], isd[g]]), np.array([a, bta]), -INF, 0.0)
    nr = r
    brow = np.concatenate(rows)
    bcol = np.concatenate(cols)
    bval = np.concatenate(vals)
    blo = np.array(lo)
    bhi = np.array(hi)
    nnz = len(bval)

    # --- tile over blocks ---
    offs_r = (np.arange(b_count) * nr)[:, None]
    offs_c = (np.arange(b_count) * nv)[:, None]
    all_rows = (brow[None, :] + offs_r).ravel()
    all_cols = (bcol[None, :] + offs_c).ravel()
    all_vals = np.tile(bval, b_count)
    for b in range(b_count):
        all_vals[b * nnz + np.array(link_pos, dtype=np.int64)] = -link_colo[:, b]
        all_vals[b * nnz + dist_pos] = -link_dist[b]
    row_lo = np.tile(blo, b_count)
    row_hi = np.tile(bhi, b_count)
    # capacity right-hand sides: cap[g, res_idx, b]
    cap_rhs = inst.cap[:, res_idx, :]  # (G, nres, B)
    cap_pos = cap_row_start + np.arange(g_count * nres)
    for b in range(b_count):
        row_hi[b * nr + cap_pos] = cap_rhs[:, :, b].ravel()

    ncol = nv * b_count
    lb = np.zeros(ncol)
    ub = np.empty(ncol)
    for b in range(b_count):
        o = b * nv
        ub[o + iu] = np.where(wl_fit[:, b] >= 1, 1.0, 0.0)
        ub[o + iwl] = wl_fit[:, b]
        ub[o + isl] = 1.0
        ub[o + iv] = 1.0 if wd_fit[:, b].sum() >= shape.n_dist_min else 0.0
        ub[o + iwd] = wd_fit[:, b]
        ub[o + isd] = np.maximum(sd_fit[:, b], 0.0)

    c = np.zeros(ncol)
    widths = inst.widths.astype(np.float64)
    if objective == Objective.PRICED:
        tw = 1.0 + time_weight * np.arange(b_count) / max(b_count - 1, 1)
        for b in range(b_count):
            o = b * nv
            pw = (inst.price[:, :, b] * shape.alpha[None, :]).sum(axis=1)  # (G,)
            ps = (inst.price[:, :, b] * shape.beta[None, :]).sum(axis=1)
            scale = widths[b] * tw[b]
            c[o + iwl] = scale * pw[:k]
            c[o + isl] = scale * ps[:k]
            c[o + iwd] = scale * pw
            c[o + isd] = scale * ps
    elif objective == Objective.MAX_RATE:
        for b in range(b_count):
            o = b * nv
            c[o + iwl] = -shape.nu_in * widths[b]
            c[o + iwd] = -shape.nu_ex * widths[b]

    if objective != Objective.MAX_RATE:
        wrow = len(row_lo)
        wcols = np.concatenate([np.r_[b * nv + iwl, b * nv + iwd] for b in range(b_count)]).astype(
            np.int64
        )
        wvals = np.concatenate(
            [
                np.r_[
                    np.full(k, shape.nu_in * widths[b]), np.full(g_count, shape.nu_ex * widths[b])
                ]
                for b in range(b_count)
            ]
        )
        all_rows = np.r_[all_rows, np.full(len(wcols), wrow, dtype=np.int64)]
        all_cols = np.r_[all_cols, wcols]
        all_vals = np.r_[all_vals, wvals]
        row_lo = np.r_[row_lo, shape.workload]
        row_hi = np.r_[row_hi, INF]

    return SparseLp(c, lb, ub, all_rows, all_cols, all_vals, row_lo, row_hi)


def solve_job_lp(
    shape: JobShape,
    inst: LpInstance,
    objective: Objective,
    time_weight: float = 0.05,
    time_limit_s: float = 60.0,
    tight_links: bool = True,
) -> LpSolution:
    lp = build_lp(shape, inst, objective, time_weight, tight_links)
    res: LpResult = solve_lp(lp, time_limit_s)
    k, g_count, b_count = inst.n_colo, len(inst.group_sizes), len(inst.widths)
    nv = 3 * k + 1 + 2 * g_count
    x = res.x.reshape(b_count, nv) if res.status == LpStatus.OPTIMAL else np.zeros((b_count, nv))
    x = np.maximum(x, 0.0)
    return LpSolution(
        status=res.status,
        u=np.minimum(x[:, :k].T, 1.0),
        wl=x[:, k : 2 * k].T,
        v=np.minimum(x[:, 3 * k], 1.0),
        wd=x[:, 3 * k + 1 : 3 * k + 1 + g_count].T,
        sd=x[:, 3 * k + 1 + g_count :].T,
        objective=res.objective,
    )
