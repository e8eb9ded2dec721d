r"""The LP over several waiting jobs at once (docs/formulation.md §14.3; MODEL.md §3, §4b).

At an event in slot t the running jobs are fixed (residual capacity C̃), and the head of
the pending queue, jobs i ∈ J (|J| ≤ ``joint_jobs``), is planned **jointly** on blocks
b = 0..B−1 of ω_b slots covering [t, T) (a block's capacity is the minimum residual over
its slots; block 0 starts now). Machines are shared groups g ∈ G: singletons for the
co-location candidates of any job in J (job i may co-locate on its own candidates
K_i ⊆ G), then groups of interchangeable machines (n_g machines, capacity n_g·C̃).
Variables per job i and block b (all in [0, ·], the relaxation):

    u[i,j,b]  co-located on j ∈ K_i     wL[i,j,b]  its workers (one PS: β·u)
    v[i,b]    distributed               wD[i,g,b], sD[i,g,b]  its workers / PSs in g
    z[i,b]    i is still running in b (its term in the total completion time)

    minimize   Σ_i Σ_b ω_b · z[i,b]                                (total completion time)
    subject to
      Σ_j u[i,j,b] + v[i,b] ≤ z[i,b];  z[i,b+1] ≤ z[i,b]            (mode; monotone)
      wL[i,j,b] ≤ L[i,j,b]·u[i,j,b];  Σ_g wD[i,g,b] ≤ L_D[i,b]·v[i,b]   (link, tight)
      Σ_g sD[i,g,b] ≥ ρ_i Σ_g wD[i,g,b];  Σ_g sD ≤ Σ_g wD             (PS covering; cap)
        (fixed PS count S_i:  Σ_g sD = S_i·v,  Σ_g wD ≥ S_i·v)
      Σ_i α_i[r](wL[i,g,b] + wD[i,g,b]) + β_i[r](u[i,g,b] + sD[i,g,b]) ≤ n_g C̃[g,r,b]  (capacity)
      Σ_b ω_b (ν_in,i Σ_j wL[i,j,b] + ν_ex,i Σ_g wD[i,g,b]) ≥ V_i                (work)
      z[i,b] ≥ 1 − (1/V_i) Σ_{b' < b} ω_b' (ν_in,i Σ_j wL[i,j,b'] + ν_ex,i Σ_g wD[i,g,b'])
                                                                   (completion cut)

The last row is valid for the integer program (a job whose work is not yet done is still
running) and is what makes the relaxation's objective a meaningful completion time: with
z bounded only by the mode row, an LP could report a job "finished" while it still has
work to do. T is long enough for every job to finish (the running jobs' end, then the
jobs of J one after another at their fastest shape), so the program is always feasible.
L and L_D are the tight link coefficients of :mod:`.job_lp` (the most workers the mode
can hold in that block); column bounds add the same whole-task caps. A job that names
GPU types sees no GPU room on the groups of other types (``JointInstance.gpu_ok``): its
GPU-task columns there have upper bound 0 (HiGHS's presolve removes them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .eligibility import BoolArray, masked
from .highs_lp import INF, LpStatus, SparseLp, solve_lp
from .job_lp import FloatArray, IntArray, JobShape, whole_task_caps


@dataclass(frozen=True)
class JointInstance:
    """Blocks, groups and capacities of one joint LP."""

    widths: IntArray  # (B,) slots per block
    group_sizes: IntArray  # (G,)
    cap: FloatArray  # (G, 3, B) capacity of the whole group
    per_machine: FloatArray  # (G, 3, B) capacity of one machine of the group
    colo: tuple[tuple[int, ...], ...]  # per job: its co-location candidates (group indices)
    #: per job, per group: whether its GPU tasks may go there (None or empty: everywhere);
    #: a group it excludes gets no GPU room for it, so those variables are fixed at 0
    gpu_ok: tuple[BoolArray | None, ...] = ()

    def job_per_machine(self, i: int) -> FloatArray:
        """``per_machine`` as job i sees it (no GPU room on the groups it excludes)."""
        ok = self.gpu_ok[i] if self.gpu_ok else None
        return masked(self.per_machine, ok)


@dataclass(frozen=True)
class JobPlanLp:
    """One job's part of the joint LP solution (arrays over blocks)."""

    colo: tuple[int, ...]  # group index of each co-location candidate
    u: FloatArray  # (k_i, B)
    wl: FloatArray  # (k_i, B)
    v: FloatArray  # (B,)
    wd: FloatArray  # (G, B)
    sd: FloatArray  # (G, B)
    z: FloatArray  # (B,)

    def completion_slots(self, widths: IntArray) -> float:
        """Σ_b ω_b z[b]: the LP's (fractional) completion time in slots from now."""
        return float((self.z * widths).sum())


@dataclass(frozen=True)
class JointSolution:
    status: LpStatus
    jobs: tuple[JobPlanLp, ...]
    objective: float

    @property
    def feasible(self) -> bool:
        return self.status == LpStatus.OPTIMAL


def _layout(k: int, g: int) -> dict[str, IntArray]:
    """Column offsets of one (job, block) inside its slice."""
    at = 0
    out: dict[str, IntArray] = {}
    for name, n in (("u", k), ("wl", k), ("v", 1), ("wd", g), ("sd", g), ("z", 1)):
        out[name] = np.arange(at, at + n, dtype=np.int64)
        at += n
    out["size"] = np.array([at], dtype=np.int64)
    return out


class _Coo:
    """Row blocks of a sparse LP gathered as numpy arrays."""

    def __init__(self) -> None:
        self.rows: list[IntArray] = []
        self.cols: list[IntArray] = []
        self.vals: list[FloatArray] = []
        self.lo: list[FloatArray] = []
        self.hi: list[FloatArray] = []
        self.n = 0

    def rows_of(
        self, rows: IntArray, cols: IntArray, vals: FloatArray, lo: FloatArray, hi: FloatArray
    ) -> None:
        """Add len(lo) rows; ``rows`` are indices local to them (0..len(lo)-1)."""
        self.rows.append(np.asarray(rows, dtype=np.int64) + self.n)
        self.cols.append(np.asarray(cols, dtype=np.int64))
        self.vals.append(np.asarray(vals, dtype=np.float64))
        self.lo.append(np.asarray(lo, dtype=np.float64))
        self.hi.append(np.asarray(hi, dtype=np.float64))
        self.n += len(lo)


def _job_rows(
    coo: _Coo,
    shape: JobShape,
    k: int,
    g_count: int,
    b_count: int,
    col0: int,
    widths: FloatArray,
    wl_fit: FloatArray,
    link_dist: FloatArray,
) -> None:
    """The rows of one job (everything but the shared capacity rows)."""
    lay = _layout(k, g_count)
    nv = int(lay["size"][0])
    base = col0 + nv * np.arange(b_count, dtype=np.int64)  # (B,) first column per block
    ones_g = np.ones(g_count)
    # per block: mode (Σu + v − z ≤ 0), links, PS rows
    r_list: list[IntArray] = []
    c_list: list[IntArray] = []
    v_list: list[FloatArray] = []
    lo: list[float] = []
    hi: list[float] = []
    local = 0

    def row(cols: IntArray, vals: FloatArray, low: float, high: float) -> None:
        nonlocal local
        r_list.append(np.full(len(cols), local, dtype=np.int64))
        c_list.append(cols)
        v_list.append(vals)
        lo.append(low)
        hi.append(high)
        local += 1

    for b in range(b_count):
        o = int(base[b])
        iu, iwl, iv = o + lay["u"], o + lay["wl"], o + lay["v"]
        iwd, isd, iz = o + lay["wd"], o + lay["sd"], o + lay["z"]
        row(np.r_[iu, iv, iz], np.r_[np.ones(k + 1), -1.0], -INF, 0.0)
        if k:
            r_list.append(local + np.repeat(np.arange(k), 2))
            c_list.append(np.column_stack([iwl, iu]).ravel())
            v_list.append(np.column_stack([np.ones(k), -wl_fit[:, b]]).ravel())
            lo.extend([-INF] * k)
            hi.extend([0.0] * k)
            local += k
        row(np.r_[iwd, iv], np.r_[ones_g, -link_dist[b]], -INF, 0.0)
        if shape.ps_fixed is None:
            row(np.r_[isd, iwd], np.r_[ones_g, -shape.rho * ones_g], 0.0, INF)
            row(np.r_[isd, iwd], np.r_[ones_g, -ones_g], -INF, 0.0)
        else:
            s = float(shape.ps_fixed)
            row(np.r_[isd, iv], np.r_[ones_g, -s], 0.0, 0.0)
            row(np.r_[iwd, iv], np.r_[ones_g, -s], 0.0, INF)
        if b + 1 < b_count:
            row(np.r_[iz + nv, iz], np.array([1.0, -1.0]), -INF, 0.0)  # monotone
    # work per block: columns and coefficients
    wcols = np.stack([np.r_[int(o) + lay["wl"], int(o) + lay["wd"]] for o in base])  # (B, k+G)
    wvals = np.stack(
        [np.r_[np.full(k, shape.nu_in * w), np.full(g_count, shape.nu_ex * w)] for w in widths]
    )
    for b in range(1, b_count):  # completion cut: V·z[b] + Σ_{b'<b} work[b'] ≥ V
        row(
            np.r_[int(base[b]) + lay["z"], wcols[:b].ravel()],
            np.r_[shape.workload, wvals[:b].ravel()],
            shape.workload,
            INF,
        )
    row(wcols.ravel(), wvals.ravel(), shape.workload, INF)  # work covering
    coo.rows_of(
        np.concatenate(r_list),
        np.concatenate(c_list),
        np.concatenate(v_list),
        np.array(lo),
        np.array(hi),
    )


def build_joint_lp(shapes: tuple[JobShape, ...], inst: JointInstance) -> tuple[SparseLp, list[int]]:
    """The LP of the module docstring; also the first column of each job's slice."""
    g_count, b_count = len(inst.group_sizes), len(inst.widths)
    widths = inst.widths.astype(np.float64)
    coo = _Coo()
    starts: list[int] = []
    lbs: list[FloatArray] = []
    ubs: list[FloatArray] = []
    costs: list[FloatArray] = []
    cap_r: list[IntArray] = []  # capacity entries: row (b·G + g)·3 + r, column, value
    cap_c: list[IntArray] = []
    cap_v: list[FloatArray] = []
    col = 0
    for i, shape in enumerate(shapes):
        cand = np.array(inst.colo[i], dtype=np.int64)
        k = len(cand)
        lay = _layout(k, g_count)
        nv = int(lay["size"][0])
        starts.append(col)
        per_machine = inst.job_per_machine(i)
        colo_cap = per_machine[cand] if k else np.zeros((0, 3, b_count))
        wl_fit, wd_fit, sd_fit = whole_task_caps(shape, colo_cap, per_machine, inst.group_sizes)
        link_dist = np.minimum(wd_fit.sum(axis=0), float(shape.n_dist_max))
        _job_rows(coo, shape, k, g_count, b_count, col, widths, wl_fit, link_dist)
        lb = np.zeros((b_count, nv))
        ub = np.zeros((b_count, nv))
        cost = np.zeros((b_count, nv))
        ub[:, lay["u"]] = np.where(wl_fit.T >= 1, 1.0, 0.0)
        ub[:, lay["wl"]] = wl_fit.T
        ub[:, lay["v"][0]] = np.where(wd_fit.sum(axis=0) >= shape.n_dist_min, 1.0, 0.0)
        ub[:, lay["wd"]] = np.maximum(wd_fit.T, 0.0)
        ub[:, lay["sd"]] = np.maximum(sd_fit.T, 0.0)
        ub[:, lay["z"][0]] = 1.0
        lb[0, lay["z"][0]] = 1.0  # nothing is done before the first block
        cost[:, lay["z"][0]] = widths
        # capacity entries of this job
        base = col + nv * np.arange(b_count, dtype=np.int64)
        for r in range(3):
            a, bt = float(shape.alpha[r]), float(shape.beta[r])
            for coef, offs, groups in (
                (a, lay["wd"], np.arange(g_count)),
                (bt, lay["sd"], np.arange(g_count)),
                (a, lay["wl"], cand),
                (bt, lay["u"], cand),
            ):
                if coef <= 0 or len(groups) == 0:
                    continue
                cols = (base[:, None] + offs[None, :]).ravel()
                rows = ((np.arange(b_count)[:, None] * g_count + groups[None, :]) * 3 + r).ravel()
                cap_r.append(rows)
                cap_c.append(cols)
                cap_v.append(np.full(len(cols), coef))
        lbs.append(lb.ravel())
        ubs.append(ub.ravel())
        costs.append(cost.ravel())
        col += nv * b_count
    if cap_r:
        rows = np.concatenate(cap_r)
        used, local = np.unique(rows, return_inverse=True)
        b_idx, rest = np.divmod(used, g_count * 3)
        g_idx, r_idx = np.divmod(rest, 3)
        coo.rows_of(
            local,
            np.concatenate(cap_c),
            np.concatenate(cap_v),
            np.full(len(used), -INF),
            inst.cap[g_idx, r_idx, b_idx],
        )
    lp = SparseLp(
        np.concatenate(costs),
        np.concatenate(lbs),
        np.concatenate(ubs),
        np.concatenate(coo.rows),
        np.concatenate(coo.cols),
        np.concatenate(coo.vals),
        np.concatenate(coo.lo),
        np.concatenate(coo.hi),
    )
    return lp, starts


def solve_joint_lp(
    shapes: tuple[JobShape, ...], inst: JointInstance, time_limit_s: float = 60.0
) -> JointSolution:
    """Build and solve the joint LP; per-job solution arrays (zeros when not optimal)."""
    lp, starts = build_joint_lp(shapes, inst)
    res = solve_lp(lp, time_limit_s)
    g_count, b_count = len(inst.group_sizes), len(inst.widths)
    x = np.maximum(res.x, 0.0) if res.status == LpStatus.OPTIMAL else np.zeros(len(lp.c))
    out: list[JobPlanLp] = []
    for i, start in enumerate(starts):
        k = len(inst.colo[i])
        lay = _layout(k, g_count)
        nv = int(lay["size"][0])
        xs = x[start : start + nv * b_count].reshape(b_count, nv)
        out.append(
            JobPlanLp(
                colo=inst.colo[i],
                u=np.minimum(xs[:, lay["u"]].T, 1.0),
                wl=xs[:, lay["wl"]].T,
                v=np.minimum(xs[:, lay["v"][0]], 1.0),
                wd=xs[:, lay["wd"]].T,
                sd=xs[:, lay["sd"]].T,
                z=np.minimum(xs[:, lay["z"][0]], 1.0),
            )
        )
    return JointSolution(res.status, tuple(out), res.objective)
