"""``mlsub calibrate``: fit each model's speed factor from completed decisions' runtimes.

For every completed decision of the cluster whose job used a profiled model
(``--model NAME``), the actual runtime is Slurm's start to end (the ``running`` and
``completed`` transitions, recorded by reconcile with Slurm's times) and the predicted one
is the time model's runtime of the decision as planned
(:func:`.plan.predicted_runtime_s`, with the factor it was planned with). The fit and its
rules are :mod:`slurm_mlsched.model.calibration` (median; at least ``min_samples`` runs).
Fits are appended to the store (``profile_fits``, Alembic revision 0006); the planner
applies the newest fit of a model to every later plan and names its version in the
decision's notes. ``--reset`` appends factor 1 (the shipped profile again).

It reads decisions only through the store's read path (no planning lock: it never holds
up a submission) and writes the fits in one transaction.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from ..errors import InputError, MlschedError
from ..files.profiles import get_profile
from ..model.calibration import (
    DEFAULT_MIN_SAMPLES,
    Fit,
    FitRow,
    ProfileFit,
    Sample,
    factor_of,
    fits_of,
)
from ..storage import DecisionRecord, DecisionState, HistoryFilter, SqlDecisionStore
from .plan import predicted_runtime_s

S = DecisionState


@dataclass(frozen=True)
class CalibrationReport:
    """``mlsub calibrate``: per model (and scope: everyone's runs, or one user's) the fit
    made, or why none (``fits``); the fits recorded in the store (``recorded``, each with
    its version); ``reset`` when the models went back to the shipped profiles."""

    cluster_name: str
    fits: tuple[Fit, ...]
    recorded: tuple[ProfileFit, ...]
    reset: bool = False

    def version(self, fit: Fit) -> int | None:
        """The version ``fit`` was recorded as (None: not recorded)."""
        versions = {(r.model, r.scope): r.version for r in self.recorded}
        return versions.get((fit.model, fit.scope))

    def to_json(self) -> dict[str, object]:
        return {
            "cluster_name": self.cluster_name,
            "reset": self.reset,
            "models": [
                {
                    "model": f.model,
                    "samples": f.samples,
                    "factor": f.factor,
                    "error_before": f.error_before,
                    "error_after": f.error_after,
                    "scope": f.scope or None,
                    "version": self.version(f),
                    "skipped": f.skipped or None,
                }
                for f in self.fits
            ],
        }


def sample_of(record: DecisionRecord) -> Sample | None:
    """The run of a completed decision of a profiled model, or None."""
    model = record.request.profile.name
    if record.state != S.COMPLETED or not model or model == "custom":
        return None
    started = next((t.at for t in record.transitions if t.state == S.RUNNING), None)
    ended = next((t.at for t in record.transitions if t.state == S.COMPLETED), None)
    if started is None or ended is None:
        return None
    try:
        base = get_profile(model)
    except MlschedError:
        return None  # a model the shipped table no longer has
    predicted = predicted_runtime_s(record.decision, record.request, record.snapshot.slot_seconds)
    return Sample(
        decision_id=record.decision_id,
        model=model,
        predicted_s=predicted,
        actual_s=(ended - started).total_seconds(),
        # the calibration factor alone: the GPU type's speed (formulation §17) is applied
        # on top of it at every plan, so it is divided out here
        factor=factor_of(record.request.profile, base) * record.request.gpu_speed,
        user=record.summary.user,
    )


def calibrate(
    store: SqlDecisionStore,
    *,
    cluster_name: str,
    now: datetime,
    by: str,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    models: Sequence[str] = (),
    reset: bool = False,
) -> CalibrationReport:
    """Fit (or with ``reset``, reset) the models' speed factors; record the fits made."""
    if min_samples < 1:
        raise InputError(
            f"option --min-samples must be at least 1, got {min_samples}",
            context={"option": "--min-samples", "value": min_samples},
        )
    for name in models:
        get_profile(name, or_else="")  # unknown: an input error (with "did you mean")
    if reset:
        in_force = store.profile_fits(cluster_name).values()
        keys = sorted({(f.model, f.scope) for f in in_force if not models or f.model in models})
        keys += [(m, "") for m in models if (m, "") not in keys]
        fits = tuple(Fit(m, 0, 1.0, None, None, "", scope) for m, scope in keys)
        rows: list[FitRow] = [(f.model, f.scope, 1.0, 0, None, None) for f in fits]
        recorded = store.add_profile_fits(cluster_name, rows, at=now, by=by) if rows else ()
        return CalibrationReport(cluster_name, fits, recorded, reset=True)
    samples: dict[str, list[Sample]] = defaultdict(list)
    where = HistoryFilter(state=S.COMPLETED, cluster=cluster_name)
    for summary in store.history(where):
        sample = sample_of(store.get(summary.decision_id))
        if sample is not None and (not models or sample.model in models):
            samples[sample.model].append(sample)
    names = sorted(set(samples) | set(models))
    fits = tuple(f for m in names for f in fits_of(m, samples.get(m, []), min_samples))
    rows = [
        (f.model, f.scope, f.factor, f.samples, f.error_before, f.error_after)
        for f in fits
        if f.factor is not None
    ]
    recorded = store.add_profile_fits(cluster_name, rows, at=now, by=by) if rows else ()
    return CalibrationReport(cluster_name, fits, recorded)
