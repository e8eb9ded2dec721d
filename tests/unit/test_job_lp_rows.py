"""The per-arrival block LP (placement/program/job_lp.py) against its docstring.

A reference assembles the program row by row, straight from the module docstring's
constraints, as a dense matrix; ``build_lp`` (tiled sparse arrays) must give the same
matrix, row bounds, column bounds and costs, on instances with several blocks, groups
past the co-location candidates, a fixed PS count and each objective.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import sparse

from slurm_mlsched.placement.program.highs_lp import INF
from slurm_mlsched.placement.program.job_lp import (
    JobShape,
    LpInstance,
    Objective,
    build_lp,
    whole_task_caps,
)


def _shape(ps_fixed: int | None) -> JobShape:
    return JobShape(
        alpha=np.array([1.0, 4.0, 16384.0]),
        beta=np.array([0.0, 2.0, 8192.0]),
        n_max=6,
        n_dist_max=5,
        n_dist_min=2,
        ps_fixed=ps_fixed,
        rho=0.5,
        nu_in=3.0,
        nu_ex=2.0,
        workload=40.0,
    )


def _instance(rng: np.random.Generator, blocks: int) -> LpInstance:
    sizes = np.array([1, 1, 3, 2], dtype=np.int64)  # two candidates, two larger groups
    per = np.stack(
        [
            rng.integers(0, 9, (4, blocks)),
            rng.integers(0, 33, (4, blocks)),
            rng.integers(0, 9, (4, blocks)) * 32768,
        ],
        axis=1,
    ).astype(np.float64)
    return LpInstance(
        widths=rng.integers(1, 4, blocks).astype(np.int64),
        n_colo=2,
        group_sizes=sizes,
        cap=per * sizes[:, None, None],
        price=rng.random((4, 3, blocks)),
    )


def _reference(
    shape: JobShape, inst: LpInstance, objective: Objective, tw: float, tight: bool
) -> tuple[np.ndarray, ...]:
    """The docstring's program, one row at a time (dense)."""
    k, g_n, b_n = inst.n_colo, len(inst.group_sizes), len(inst.widths)
    nv = 3 * k + 1 + 2 * g_n
    per_machine = inst.cap / inst.group_sizes[:, None, None]
    wl_fit, wd_fit, sd_fit = whole_task_caps(shape, inst.cap[:k], per_machine, inst.group_sizes)
    rows: list[tuple[dict[int, float], float, float]] = []
    c = np.zeros(nv * b_n)
    ub = np.zeros(nv * b_n)
    work: dict[int, float] = {}
    for b in range(b_n):
        o = b * nv

        def u(j: int, o: int = o) -> int:
            return o + j

        def wl(j: int, o: int = o) -> int:
            return o + k + j

        def sl(j: int, o: int = o) -> int:
            return o + 2 * k + j

        v = o + 3 * k

        def wd(g: int, o: int = o) -> int:
            return o + 3 * k + 1 + g

        def sd(g: int, o: int = o) -> int:
            return o + 3 * k + 1 + g_n + g

        big_l = wl_fit[:, b] if tight else np.full(k, float(shape.n_max))
        big_ld = min(wd_fit[:, b].sum(), shape.n_dist_max) if tight else shape.n_dist_max
        rows.append(({**{u(j): 1.0 for j in range(k)}, v: 1.0}, -INF, 1.0))  # mode
        for j in range(k):
            rows.append(({wl(j): 1.0, u(j): -big_l[j]}, -INF, 0.0))  # wL ≤ L·u
            rows.append(({sl(j): 1.0, u(j): -1.0}, 0.0, 0.0))  # sL = u
        rows.append(({**{wd(g): 1.0 for g in range(g_n)}, v: -big_ld}, -INF, 0.0))
        all_sd = {sd(g): 1.0 for g in range(g_n)}
        if shape.ps_fixed is None:
            rows.append(({**all_sd, **{wd(g): -shape.rho for g in range(g_n)}}, 0.0, INF))
            rows.append(({**all_sd, **{wd(g): -1.0 for g in range(g_n)}}, -INF, 0.0))
        else:
            s = float(shape.ps_fixed)
            rows.append(({**all_sd, v: -s}, 0.0, 0.0))
            rows.append(({**{wd(g): 1.0 for g in range(g_n)}, v: -s}, 0.0, INF))
        for g, r in itertools.product(range(g_n), range(3)):
            a, bt = shape.alpha[r], shape.beta[r]
            if a == 0 and bt == 0:
                continue
            terms = {wd(g): a, sd(g): bt}
            if g < k:
                terms = {wl(g): a, sl(g): bt, **terms}
            rows.append((terms, -INF, inst.cap[g, r, b]))
        for j in range(k):
            ub[u(j)] = 1.0 if wl_fit[j, b] >= 1 else 0.0
            ub[wl(j)] = wl_fit[j, b]
            ub[sl(j)] = 1.0
            work[wl(j)] = shape.nu_in * inst.widths[b]
        ub[v] = 1.0 if wd_fit[:, b].sum() >= shape.n_dist_min else 0.0
        for g in range(g_n):
            ub[wd(g)] = wd_fit[g, b]
            ub[sd(g)] = max(sd_fit[g, b], 0.0)
            work[wd(g)] = shape.nu_ex * inst.widths[b]
        weight = inst.widths[b] * (1.0 + tw * b / max(b_n - 1, 1))
        for g in range(g_n):
            pw = float(inst.price[g, :, b] @ shape.alpha)
            ps = float(inst.price[g, :, b] @ shape.beta)
            if objective == Objective.PRICED:
                c[wd(g)], c[sd(g)] = weight * pw, weight * ps
                if g < k:
                    c[wl(g)], c[sl(g)] = weight * pw, weight * ps
            elif objective == Objective.MAX_RATE:
                c[wd(g)] = -shape.nu_ex * inst.widths[b]
                if g < k:
                    c[wl(g)] = -shape.nu_in * inst.widths[b]
    if objective != Objective.MAX_RATE:
        rows.append((work, shape.workload, INF))
    dense = np.zeros((len(rows), nv * b_n))
    for i, (terms, _, _) in enumerate(rows):
        for col, val in terms.items():
            dense[i, col] = val
    lo = np.array([r[1] for r in rows])
    hi = np.array([r[2] for r in rows])
    return dense, lo, hi, c, ub


@pytest.mark.parametrize(
    ("objective", "ps_fixed", "tight", "blocks"),
    [
        (Objective.FEASIBILITY, None, True, 1),
        (Objective.PRICED, None, True, 3),
        (Objective.PRICED, 2, False, 2),
        (Objective.MAX_RATE, None, True, 3),
        (Objective.MAX_RATE, 1, True, 1),
        (Objective.FEASIBILITY, 3, False, 4),
    ],
)
def test_build_lp_is_the_docstring_program(
    objective: Objective, ps_fixed: int | None, tight: bool, blocks: int
) -> None:
    rng = np.random.default_rng(blocks * 10 + (ps_fixed or 0))
    shape, inst = _shape(ps_fixed), _instance(rng, blocks)
    lp = build_lp(shape, inst, objective, time_weight=0.05, tight_links=tight)
    dense, lo, hi, c, ub = _reference(shape, inst, objective, 0.05, tight)
    got = sparse.coo_matrix((lp.vals, (lp.rows, lp.cols)), shape=lp.shape).toarray()
    assert got.shape == dense.shape
    np.testing.assert_allclose(got, dense, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(lp.row_lo, lo)
    np.testing.assert_allclose(lp.row_hi, hi, rtol=1e-12)
    np.testing.assert_allclose(lp.c, c, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(lp.ub, ub, rtol=1e-12)
    np.testing.assert_array_equal(lp.lb, np.zeros_like(ub))
