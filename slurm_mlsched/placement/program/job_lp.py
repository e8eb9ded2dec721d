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
    """Assemble the block LP described in the module docstring as sparse arrays: one
    block's rows (the pattern), tiled over the blocks with each block's link
    coefficients, capacities, column bounds and costs, then the work row."""
    k, g_count, b_count = inst.n_colo, len(inst.group_sizes), len(inst.widths)
    nv = 3 * k + 1 + 2 * g_count
    iu, iwl, isl = np.arange(k), k + np.arange(k), 2 * k + np.arange(k)
    iv = 3 * k
    iwd, isd = 3 * k + 1 + np.arange(g_count), 3 * k + 1 + g_count + np.arange(g_count)
    res_idx = np.flatnonzero((shape.alpha > 0) | (shape.beta > 0))
    nres = len(res_idx)

    # --- per-block whole-task caps (valid for the integer program) ---
    per_machine = inst.cap / inst.group_sizes[:, None, None]
    wl_fit, wd_fit, sd_fit = whole_task_caps(shape, inst.cap[:k], per_machine, inst.group_sizes)
    if tight_links:
        link_colo = wl_fit  # wL ≤ min(N, fit_j)·u
        link_dist = np.minimum(wd_fit.sum(axis=0), float(shape.n_dist_max))  # (B,)
    else:
        link_colo = np.full((k, b_count), float(shape.n_max))
        link_dist = np.full(b_count, float(shape.n_dist_max))

    # --- one block's pattern (column indices local to the block), row by row ---
    ones_g = np.ones(g_count)
    # the mode row, then per co-location candidate j its two link rows: wL_j − L·u_j ≤ 0
    # (the −L entry, position 1 of the row, set per block below) and sL_j − u_j = 0
    pattern_cols = [np.r_[iu, iv], np.stack([iwl, iu, isl, iu], axis=1).ravel()]
    pattern_vals = [np.ones(k + 1), np.tile([1.0, -1.0, 1.0, -1.0], k)]
    lo = [np.array([-INF]), np.tile([-INF, 0.0], k)]
    hi = [np.array([1.0]), np.zeros(2 * k)]
    link_pos = (k + 1) + 4 * np.arange(k) + 1  # positions of the −L·u entries
    dist_pos = (k + 1) + 4 * k + g_count  # position of the −L_D·v entry
    pattern_cols.append(np.r_[iwd, iv])
    pattern_vals.append(np.r_[ones_g, -1.0])
    lo.append(np.array([-INF]))
    hi.append(np.array([0.0]))
    if shape.ps_fixed is None:
        pattern_cols += [np.r_[isd, iwd], np.r_[isd, iwd]]
        pattern_vals += [np.r_[ones_g, -shape.rho * ones_g], np.r_[ones_g, -ones_g]]
        lo.append(np.array([0.0, -INF]))
        hi.append(np.array([INF, 0.0]))
    else:
        s = float(shape.ps_fixed)
        pattern_cols += [np.r_[isd, iv], np.r_[iwd, iv]]
        pattern_vals += [np.r_[ones_g, -s], np.r_[ones_g, -s]]
        lo.append(np.array([0.0, 0.0]))
        hi.append(np.array([0.0, INF]))
    # capacity rows, one per (group, resource): colo machines (wL, sL, wD, sD) first,
    # then the other groups (wD, sD)
    cap_row_start = 1 + 2 * k + 1 + 2
    a_r, b_r = shape.alpha[res_idx], shape.beta[res_idx]
    kc = min(k, g_count)
    colo_cols = np.stack([iwl[:kc], isl[:kc], iwd[:kc], isd[:kc]], axis=1)  # (kc, 4)
    pattern_cols.append(np.repeat(colo_cols, nres, axis=0).ravel())
    pattern_vals.append(np.tile(np.stack([a_r, b_r, a_r, b_r], axis=1).ravel(), kc))
    other_cols = np.stack([iwd[kc:], isd[kc:]], axis=1)  # (G − kc, 2)
    pattern_cols.append(np.repeat(other_cols, nres, axis=0).ravel())
    pattern_vals.append(np.tile(np.stack([a_r, b_r], axis=1).ravel(), g_count - kc))
    lo.append(np.full(g_count * nres, -INF))
    hi.append(np.zeros(g_count * nres))
    row_len = np.r_[
        k + 1,
        np.full(2 * k, 2),
        g_count + 1,
        [len(c) for c in pattern_cols[-4:-2]],  # the two PS rows
        np.full(kc * nres, 4),
        np.full((g_count - kc) * nres, 2),
    ].astype(np.int64)
    nr = len(row_len)
    brow = np.repeat(np.arange(nr, dtype=np.int64), row_len)
    bcol = np.concatenate(pattern_cols).astype(np.int64)
    bval = np.concatenate(pattern_vals).astype(np.float64)
    blo = np.concatenate(lo)
    bhi = np.concatenate(hi)

    # --- tile over blocks ---
    blocks = np.arange(b_count)
    all_rows = (brow[None, :] + (blocks * nr)[:, None]).ravel()
    all_cols = (bcol[None, :] + (blocks * nv)[:, None]).ravel()
    vals_b = np.tile(bval, (b_count, 1))  # (B, nnz)
    vals_b[:, link_pos] = -link_colo.T
    vals_b[:, dist_pos] = -link_dist
    all_vals = vals_b.ravel()
    row_lo = np.tile(blo, b_count)
    hi_b = np.tile(bhi, (b_count, 1))  # (B, nr)
    # capacity right-hand sides: cap[g, res_idx, b]
    hi_b[:, cap_row_start : cap_row_start + g_count * nres] = (
        inst.cap[:, res_idx, :].transpose(2, 0, 1).reshape(b_count, -1)
    )
    row_hi = hi_b.ravel()

    ub_b = np.empty((b_count, nv))
    ub_b[:, iu] = np.where(wl_fit.T >= 1, 1.0, 0.0)
    ub_b[:, iwl] = wl_fit.T
    ub_b[:, isl] = 1.0
    ub_b[:, iv] = np.where(wd_fit.sum(axis=0) >= shape.n_dist_min, 1.0, 0.0)
    ub_b[:, iwd] = wd_fit.T
    ub_b[:, isd] = np.maximum(sd_fit.T, 0.0)
    ub = ub_b.ravel()
    ncol = nv * b_count
    lb = np.zeros(ncol)

    c_b = np.zeros((b_count, nv))
    widths = inst.widths.astype(np.float64)
    if objective == Objective.PRICED:
        tw = 1.0 + time_weight * blocks / max(b_count - 1, 1)
        pw = (inst.price * shape.alpha[None, :, None]).sum(axis=1).T  # (B, G)
        ps = (inst.price * shape.beta[None, :, None]).sum(axis=1).T
        scale = (widths * tw)[:, None]
        c_b[:, iwl] = scale * pw[:, :k]
        c_b[:, isl] = scale * ps[:, :k]
        c_b[:, iwd] = scale * pw
        c_b[:, isd] = scale * ps
    elif objective == Objective.MAX_RATE:
        c_b[:, iwl] = -shape.nu_in * widths[:, None]
        c_b[:, iwd] = -shape.nu_ex * widths[:, None]
    c = c_b.ravel()

    if objective != Objective.MAX_RATE:
        # the work row: Σ_b ω_b (ν_in Σ_j wL[j,b] + ν_ex Σ_g wD[g,b]) ≥ V
        wrow = len(row_lo)
        wcols = (np.r_[iwl, iwd][None, :] + (blocks * nv)[:, None]).ravel().astype(np.int64)
        wvals = (
            np.r_[np.full(k, shape.nu_in), np.full(g_count, shape.nu_ex)][None, :] * widths[:, None]
        ).ravel()
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
