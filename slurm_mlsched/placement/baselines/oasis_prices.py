"""OASiS's resource prices and their constants U and L (MODEL.md Appendix A), pure.

Resources are measured in **machine units**: r's amount divided by the largest capacity of
r over the machines, Ĉ_r = max_h C[h][r] (α̂ = α/Ĉ, β̂ = β/Ĉ; a resource no machine has is
left out). Then one U and one L serve every resource. For job i (a_i arrival slot, V_i
workload, f_i its sigmoid utility, ν_i = Δ/θ_ex since OASiS always runs distributed,
N_i^D its most distributed workers):

* shortest duration d_i = ⌈V_i / (N_i^D·ν_i)⌉ slots, worker-time W_i = V_i / ν_i
  worker-slots;
* U = max_i f_i(d_i) / min_{r: α̂_i^r > 0} α̂_i^r: the largest utility per unit of any one
  resource a task takes, so that a resource priced at U is too dear for any job;
* horizon T = max_i (a_i + ⌈V_i/ν_i⌉) − 1 (every job done by one worker from its
  arrival), η = max_i max_r (N_i^D α_i^r + S(N_i^D) β_i^r) / Σ_h C[h][r] ∈ (0, 1] (the
  largest share of the cluster one job can hold), and
  L = 1/(4η) · min_i f_i(T − a_i + 1) / (W_i · Σ_r (α̂_i^r + β̂_i^r)), capped at U.

The price of resource r on machine h in a slot where g of its capacity c is taken is
P(g) = L·(U/L)^(g/c): L on an idle machine, U on a full one. Both constants are kept as
logarithms (``ln_u``, ``ln_l``): with time-critical sigmoid utilities f(T − a + 1)
underflows a float (ln L is about −8.8·10⁵ on Philly), and every comparison OASiS makes
(machine prices, utility − cost) is done in the log domain.

The oracle constants come from the whole trace (:func:`prepare_oasis`, the policy's
prepare hook, called by the replay once before the run); the ``oasis-x0.5`` and
``oasis-x2`` variants multiply both U and L by their factor (an estimate off by ×0.5/×2).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from ...model import ClusterSnapshot, JobRequest, Machine
from ...model.speed import worker_rates
from ..params import PlacementParams
from ..utility import Utility, draw_utilities, log_expit

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PriceBounds:
    """ln U and ln L of the price function, and what they were computed from."""

    ln_u: float
    ln_l: float
    horizon: int = 0
    eta: float = 1.0


def machine_units(machines: Sequence[Machine]) -> FloatArray:
    """Ĉ_r = the largest capacity of r over the machines (0 where no machine has r)."""
    caps = np.array([m.capacity.as_tuple() for m in machines], dtype=np.float64)
    out: FloatArray = caps.reshape(len(machines), 3).max(axis=0)
    return out


def normalized(demand: tuple[float, float, float], units: FloatArray) -> FloatArray:
    """A demand in machine units (0 for a resource no machine has)."""
    d = np.asarray(demand, dtype=np.float64)
    out: FloatArray = np.divide(d, units, out=np.zeros(3), where=units > 0)
    return out


def price_bounds(
    requests: Sequence[JobRequest], utilities: Mapping[str, Utility], cluster: ClusterSnapshot
) -> PriceBounds:
    """U and L of the module docstring over ``requests`` (the whole trace for the oracle)."""
    if not requests:
        raise ValueError("price bounds need at least one job")
    units = machine_units(cluster.machines)
    total = np.asarray(cluster.total_capacity().as_tuple())
    delta = cluster.slot_seconds
    nu = np.array([worker_rates(j, delta)[1] for j in requests])
    work = np.array([j.workload for j in requests])
    arrival = np.array([j.arrival_slot for j in requests], dtype=np.int64)
    n_d = np.array([max(j.max_distributed_workers(), 1) for j in requests], dtype=np.float64)
    s_d = np.array([j.ps_needed(max(j.max_distributed_workers(), 1)) for j in requests])
    alpha = np.array([j.worker.as_tuple() for j in requests]).reshape(-1, 3)
    beta = np.array([j.ps.as_tuple() for j in requests]).reshape(-1, 3)
    us = [utilities[j.job_id] for j in requests]
    g1 = np.log(np.array([u.gamma1 for u in us]))
    g2 = np.array([u.gamma2 for u in us])
    g3 = np.array([u.gamma3 for u in us])

    def ln_f(slots: FloatArray) -> FloatArray:
        out: FloatArray = g1 + log_expit(-g2 * (slots - g3))
        return out

    a_hat = np.divide(alpha, units, out=np.zeros_like(alpha), where=units > 0)
    b_hat = np.divide(beta, units, out=np.zeros_like(beta), where=units > 0)
    shortest = np.maximum(1, np.ceil(work / (n_d * nu) - 1e-9))
    smallest = np.where(a_hat > 0, a_hat, np.inf).min(axis=1)
    has = np.isfinite(smallest)
    if has.any():
        ln_u = float((ln_f(shortest) - np.log(np.where(has, smallest, 1.0)))[has].max())
    else:  # no task takes any resource a machine has
        ln_u = float(ln_f(np.ones(len(requests))).max())
    slowest = np.maximum(1, np.ceil(work / nu - 1e-9))
    horizon = int((arrival + slowest).max() - 1)
    held = alpha * n_d[:, None] + beta * s_d[:, None]
    shares = np.divide(held, total, out=np.zeros_like(held), where=total > 0)
    eta = float(min(shares.max(), 1.0)) or 1.0
    per_slot = a_hat.sum(axis=1) + b_hat.sum(axis=1)
    takes = per_slot > 0
    if takes.any():
        at_horizon = ln_f((horizon - arrival + 1).astype(np.float64))
        ln_per = at_horizon - np.log(work / nu) - np.log(np.where(takes, per_slot, 1.0))
        ln_l = min(float(ln_per[takes].min()) - math.log(4.0 * eta), ln_u)
    else:
        ln_l = ln_u
    return PriceBounds(ln_u=ln_u, ln_l=ln_l, horizon=horizon, eta=eta)


def utility_seed(params: PlacementParams) -> int:
    """The seed of the utility draws: ``params.utility_seed``, else ``params.seed``."""
    return params.seed if params.utility_seed is None else params.utility_seed


def prepare_oasis(
    requests: Sequence[JobRequest], cluster: ClusterSnapshot, params: PlacementParams
) -> PlacementParams:
    """The oracle: ``params`` with the utility seed and U, L of the whole trace (values
    already set in ``params`` are kept)."""
    seed = utility_seed(params)
    out = replace(params, utility_seed=seed)
    if not requests or (params.oasis_ln_u is not None and params.oasis_ln_l is not None):
        return out
    bounds = price_bounds(requests, draw_utilities((r.job_id for r in requests), seed), cluster)
    return replace(
        out,
        oasis_ln_u=bounds.ln_u if params.oasis_ln_u is None else params.oasis_ln_u,
        oasis_ln_l=bounds.ln_l if params.oasis_ln_l is None else params.oasis_ln_l,
    )


def log_prices(used: FloatArray, capacity: FloatArray, ln_u: float, ln_l: float) -> FloatArray:
    """ln P(g) = ln L + (g/c)·(ln U − ln L) elementwise; ``used`` (..., H, 3) over
    ``capacity`` (H, 3); 0 where c = 0 (no task that needs r can go there)."""
    if capacity.all():  # every machine has every resource: a plain division
        share = used / capacity
    else:
        share = np.divide(used, capacity, out=np.zeros_like(used), where=capacity > 0)
    np.maximum(share, 0.0, out=share)  # np.clip(share, 0, 1), without its wrapper's cost
    np.minimum(share, 1.0, out=share)
    out: FloatArray = ln_l + share * (ln_u - ln_l)
    return out


def log_task_cost(log_price: FloatArray, demand: FloatArray) -> FloatArray:
    """ln Σ_r P_r·d̂_r for one task of normalized ``demand`` (3,) on each machine: the
    log-sum-exp over the resources the task takes (−inf for a task that takes nothing)."""
    out: FloatArray | None = None
    for r, d in enumerate(demand.tolist()):
        if not d > 0:
            continue
        term = log_price[..., r] + math.log(d)
        out = term if out is None else logaddexp(out, term)
    if out is None:
        return np.full(log_price.shape[:-1], -np.inf)
    return out


#: |x − y| from which ln(e^x + e^y) is max(x, y) in floating point: e^−746 rounds to 0
_FAR = 746.0
#: below this many elements numpy's own logaddexp is as fast
_SPLIT_FROM = 256


def logaddexp(x: FloatArray, y: FloatArray) -> FloatArray:
    """``np.logaddexp(x, y)`` bit for bit, with its exp and log1p evaluated only where x
    and y are within ``_FAR`` of each other; elsewhere it is max(x, y) exactly (numpy adds
    log1p(e^−|x−y|) = 0). Prices span ln U − ln L ≈ 10⁵–10⁶, so most pairs are far apart."""
    if x.size < _SPLIT_FROM:
        out: FloatArray = np.logaddexp(x, y)
        return out
    if np.isfinite(x).all() and np.isfinite(y).all():
        near = np.abs(x - y) < _FAR
    else:  # inf − inf is NaN: not near, and max(x, y) is numpy's answer there
        with np.errstate(invalid="ignore"):
            near = np.abs(x - y) < _FAR
    out = np.maximum(x, y)
    if near.any():
        out[near] = np.logaddexp(x[near], y[near])
    return out
