"""OASiS's job utility (MODEL.md Appendix A), drawn per job with the replay seed (pure).

It lives in ``placement`` because the ``oasis`` policy prices each job against its utility;
the replay metrics (``sim.utility`` re-exports it) score every policy with the same draws.

f(d) = γ1 / (1 + exp(γ2 · (d − γ3))), d = completion − arrival in slots (the job's
completion term, end − a + 1). γ1 ∈ [1, 100] is the priority and γ3 ∈ [1, 15] the target
duration (slots); γ2 = 0 for time-insensitive jobs (10%), γ2 ∈ [0.01, 1] for time-sensitive
(55%) and γ2 ∈ [4, 6] for time-critical ones (35%), all uniform. Each job draws from its
own generator, seeded from the replay seed and the job id, so a job's utility does not
depend on the other jobs, their order, or the policy: every policy of a replay is scored
with the same draws.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import numpy.typing as npt

from .params import derive_seed


def log_expit(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """ln σ(x) = −ln(1 + e^(−x)), finite for every finite x (numpy only: scipy.special
    would cost half a second of start-up in every command)."""
    return np.asarray(-np.logaddexp(0.0, -np.asarray(x, dtype=np.float64)), dtype=np.float64)


def expit(x: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """σ(x) = 1 / (1 + e^(−x)), without overflow."""
    return np.exp(log_expit(x))


#: (class, probability, γ2 range)
CLASSES: tuple[tuple[str, float, tuple[float, float]], ...] = (
    ("time-insensitive", 0.10, (0.0, 0.0)),
    ("time-sensitive", 0.55, (0.01, 1.0)),
    ("time-critical", 0.35, (4.0, 6.0)),
)
GAMMA1 = (1.0, 100.0)
GAMMA3 = (1.0, 15.0)


@dataclass(frozen=True)
class Utility:
    kind: str
    gamma1: float
    gamma2: float
    gamma3: float

    def value(self, slots: float) -> float:
        """f(d) for a completion term of ``slots`` slots."""
        return float(self.gamma1 * expit(-self.gamma2 * (slots - self.gamma3)))

    def log_value(self, slots: float) -> float:
        """ln f(d) = ln γ1 + ln σ(−γ2·(d − γ3)), finite where f(d) underflows to 0.
        (Computed in plain Python, bit for bit what :func:`log_expit` gives: ``oasis``
        asks it several times per job.)"""
        return self._ln_gamma1 - _logaddexp0(self.gamma2 * (slots - self.gamma3))

    @cached_property
    def _ln_gamma1(self) -> float:
        return float(np.log(self.gamma1))


_LN2 = math.log(2.0)


def _logaddexp0(y: float) -> float:
    """ln(1 + e^y): numpy's ``logaddexp(0, y)`` step for step (the same libm exp and
    log1p), so ``-_logaddexp0(-x)`` equals ``log_expit(x)`` exactly."""
    if y == 0.0:
        return _LN2
    if y < 0.0:
        return math.log1p(math.exp(y))
    if y > 0.0:
        return y + math.log1p(math.exp(-y))
    return y - y  # NaN


@lru_cache(maxsize=1 << 17)  # a replay draws each job's utility for the metrics and oasis
def draw_utility(seed: int, job_id: str) -> Utility:
    """The job's utility parameters, from its own generator (module docstring)."""
    rng = np.random.default_rng(derive_seed(seed, f"utility:{job_id}"))
    u = float(rng.random())
    cum = 0.0
    kind, (lo, hi) = CLASSES[-1][0], CLASSES[-1][2]
    for name, share, bounds in CLASSES:
        cum += share
        if u < cum:
            kind, (lo, hi) = name, bounds
            break
    gamma1 = float(rng.uniform(*GAMMA1))
    gamma2 = float(rng.uniform(lo, hi)) if hi > lo else lo
    gamma3 = float(rng.uniform(*GAMMA3))
    return Utility(kind, gamma1, gamma2, gamma3)


def draw_utilities(job_ids: Iterable[str], seed: int) -> dict[str, Utility]:
    return {job_id: draw_utility(seed, job_id) for job_id in job_ids}


def total_utility(terms: Mapping[str, int], utilities: Mapping[str, Utility]) -> float:
    """Σ f_i(d_i) over jobs given as {job id: completion term in slots}."""
    if not terms:
        return 0.0
    us = [utilities[j] for j in terms]
    g1 = np.array([u.gamma1 for u in us])
    g2 = np.array([u.gamma2 for u in us])
    g3 = np.array([u.gamma3 for u in us])
    d = np.array(list(terms.values()), dtype=np.float64)
    return float((g1 * expit(-g2 * (d - g3))).sum())
