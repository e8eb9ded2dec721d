r"""Predictions that learn: per-model speed factors fitted from real runtimes (pure).

The planner's speed model (MODEL.md §2) takes each model's profile from the shipped table
(``data/profiles.csv``): τ, g, b_ex, b_in. A site whose jobs run f× slower than the
profile gets plans wrong by f× for ever. A **profile fit** is one factor f per model name
(per cluster) applied to the profile as

    τ' = f·τ,   b_ex' = b_ex / f,   b_in' = b_in / f,   B_ex' = B_ex / f

so that every per-mini-batch time (θ_in, θ_ex: compute plus transfer) becomes f·θ and a
predicted runtime f× the profile's.

**Fit** (:func:`fit_factor`). From completed decisions of the model: r_i = actual_i ÷
predicted_i (actual: Slurm's start to end; predicted: the time model's runtime of the
decision as planned, with the factor f_i it was planned with), so f_i·r_i estimates f for
run i. The fit is their **median**: robust (one outlier, however far, moves the median by
at most one rank), and the median relative error is reported before (planned with f_i)
and after (with the fit). Fewer than ``min_samples`` runs: no fit (the model keeps the
factor it has).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .job import JobProfile

#: One fit to record: model, scope, factor, samples, error before, error after.
FitRow = tuple[str, str, float, int, float | None, float | None]

#: Fewest completed runs a fit is made from (``mlsub calibrate --min-samples``).
DEFAULT_MIN_SAMPLES = 5


@dataclass(frozen=True)
class ProfileFit:
    """A stored fit: ``factor`` for ``model`` on ``cluster`` (version = its id)."""

    version: int
    cluster: str
    model: str
    factor: float
    samples: int
    error_before: float | None
    error_after: float | None
    scope: str = ""  # "" = every user's runs; "user:NAME" = one user's

    @property
    def key(self) -> str:
        return fit_key(self.model, self.scope)

    def apply(self, profile: JobProfile) -> JobProfile:
        """``profile`` with every time per mini-batch × ``factor`` (module docstring)."""
        return scaled(profile, self.factor)

    def note(self) -> str:
        whose = f" of {self.scope.removeprefix('user:')}" if self.scope else ""
        return (
            f"speed profile {self.model}: calibration v{self.version} (×{self.factor:.3g} "
            f"from {self.samples} completed run(s){whose})"
        )


def fit_key(model: str, scope: str = "") -> str:
    """How fits are looked up: ``model`` or ``model|user:NAME``."""
    return f"{model}|{scope}" if scope else model


def fit_for(fits: Mapping[str, ProfileFit], model: str, user: str | None) -> ProfileFit | None:
    """The fit a plan of ``model`` by ``user`` uses: the user's own when there is one
    (their jobs may differ from everyone's: data, code), else the model's."""
    if user is not None:
        own = fits.get(fit_key(model, f"user:{user}"))
        if own is not None:
            return own
    return fits.get(model)


def scaled(profile: JobProfile, factor: float) -> JobProfile:
    if not (factor > 0 and math.isfinite(factor)):
        raise ValueError(f"a speed factor must be a finite number > 0, got {factor!r}")
    if factor == 1.0:
        return profile
    return replace(
        profile,
        step_time_s=profile.step_time_s * factor,
        bw_ex_mbps=profile.bw_ex_mbps / factor,
        bw_in_mbps=profile.bw_in_mbps / factor,
        ps_bw_mbps=None if profile.ps_bw_mbps is None else profile.ps_bw_mbps / factor,
    )


def factor_of(used: JobProfile, base: JobProfile) -> float:
    """The factor ``used`` was scaled from ``base`` with (1.0 for the profile itself)."""
    return used.step_time_s / base.step_time_s


@dataclass(frozen=True)
class Sample:
    """One completed run: what the plan predicted (with ``factor``) and what Slurm saw."""

    decision_id: int
    model: str
    predicted_s: float
    actual_s: float
    factor: float  # the factor its plan used
    user: str = ""


@dataclass(frozen=True)
class Fit:
    """The outcome for one model: a factor, or why none."""

    model: str
    samples: int
    factor: float | None
    error_before: float | None
    error_after: float | None
    skipped: str = ""
    scope: str = ""


def fit_factor(model: str, samples: Sequence[Sample], min_samples: int, scope: str = "") -> Fit:
    """The median fit of ``samples`` (module docstring)."""
    usable = [s for s in samples if s.predicted_s > 0 and s.actual_s > 0]
    if len(usable) < min_samples:
        why = f"{len(usable)} completed run(s), fewer than {min_samples}"
        return Fit(model, len(usable), None, _error(usable, None), None, why, scope)
    factor = statistics.median(s.factor * s.actual_s / s.predicted_s for s in usable)
    return Fit(model, len(usable), factor, _error(usable, None), _error(usable, factor), "", scope)


def fits_of(model: str, samples: Sequence[Sample], min_samples: int) -> list[Fit]:
    """The model's fit over every run, and one per user with at least ``min_samples`` runs
    of their own (users with fewer use the model's fit; no per-user line for them)."""
    out = [fit_factor(model, samples, min_samples)]
    by_user: dict[str, list[Sample]] = {}
    for s in samples:
        if s.user:
            by_user.setdefault(s.user, []).append(s)
    if len(by_user) > 1:  # one user's fit would only repeat the model's
        for user, own in sorted(by_user.items()):
            if len(own) >= min_samples:
                out.append(fit_factor(model, own, min_samples, scope=f"user:{user}"))
    return out


def _error(samples: Sequence[Sample], factor: float | None) -> float | None:
    """Median |predicted − actual| ÷ actual, as planned (``None``) or with ``factor``."""
    if not samples:
        return None
    errors = []
    for s in samples:
        predicted = s.predicted_s if factor is None else s.predicted_s * factor / s.factor
        errors.append(abs(predicted - s.actual_s) / s.actual_s)
    return statistics.median(errors)
