"""In-process LP adapter over HiGHS (docs/formulation.md §4): sparse arrays in, status + x out.

Building a model as PuLP objects costs as much as solving it; the per-arrival LPs are
built as COO arrays with numpy and handed to HiGHS directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from functools import cache
from importlib import metadata

import highspy
import numpy as np
import numpy.typing as npt
from scipy import sparse

FloatArray = npt.NDArray[np.float64]
INF = float(highspy.kHighsInf)


class LpStatus(StrEnum):
    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    OTHER = "other"


@dataclass(frozen=True)
class LpResult:
    status: LpStatus
    x: FloatArray
    objective: float
    detail: str
    row_dual: FloatArray = field(default_factory=lambda: np.zeros(0))
    """The rows' dual values (HiGHS's sign: ≤ 0 on a binding upper bound of a
    minimization), with ``duals=True`` and an optimal status; else empty."""


@dataclass
class SparseLp:
    """min c·x  s.t.  row_lo ≤ A x ≤ row_hi,  lb ≤ x ≤ ub (A given as COO triplets)."""

    c: FloatArray
    lb: FloatArray
    ub: FloatArray
    rows: npt.NDArray[np.int64]
    cols: npt.NDArray[np.int64]
    vals: FloatArray
    row_lo: FloatArray
    row_hi: FloatArray

    @property
    def shape(self) -> tuple[int, int]:
        return (len(self.row_lo), len(self.c))


@cache
def highs_version() -> str:
    try:
        return metadata.version("highspy")
    except metadata.PackageNotFoundError:  # pragma: no cover
        return "unknown"


_STATUS = {
    highspy.HighsModelStatus.kOptimal: LpStatus.OPTIMAL,
    highspy.HighsModelStatus.kInfeasible: LpStatus.INFEASIBLE,
    highspy.HighsModelStatus.kUnbounded: LpStatus.UNBOUNDED,
    highspy.HighsModelStatus.kModelEmpty: LpStatus.OPTIMAL,
}


def solve_lp(lp: SparseLp, time_limit_s: float = 60.0, duals: bool = False) -> LpResult:
    """Solve ``lp`` with HiGHS in-process (single thread, quiet); ``duals``: also return
    the rows' dual values."""
    nrow, ncol = lp.shape
    mat = sparse.csc_matrix((lp.vals, (lp.rows, lp.cols)), shape=(nrow, ncol))
    mat.sum_duplicates()
    h = highspy._core._Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("time_limit", float(time_limit_s))
    passed = h.passModel(
        ncol,
        nrow,
        int(mat.nnz),
        1,  # column-wise
        1,  # minimize
        0.0,
        lp.c,
        lp.lb,
        lp.ub,
        lp.row_lo,
        lp.row_hi,
        mat.indptr.astype(np.int32),
        mat.indices.astype(np.int32),
        mat.data.astype(np.float64),
        np.zeros(ncol, dtype=np.int32),  # all continuous
    )
    if passed == highspy.HighsStatus.kError:
        raise RuntimeError(f"HiGHS rejected the LP ({nrow} rows, {ncol} columns)")
    h.run()
    model_status = h.getModelStatus()
    status = _STATUS.get(model_status, LpStatus.OTHER)
    if status == LpStatus.OTHER and model_status == highspy.HighsModelStatus.kUnboundedOrInfeasible:
        status = LpStatus.INFEASIBLE
    x = (
        np.asarray(h.getSolution().col_value, dtype=np.float64)
        if status == LpStatus.OPTIMAL
        else np.zeros(ncol)
    )
    objective = (
        float(h.getInfo().objective_function_value) if status == LpStatus.OPTIMAL else float("nan")
    )
    row_dual = (
        np.asarray(h.getSolution().row_dual, dtype=np.float64)
        if duals and status == LpStatus.OPTIMAL
        else np.zeros(0)
    )
    return LpResult(status, x, objective, h.modelStatusToString(model_status), row_dual)
