"""Predictions that learn (issue 20): ``mlsub calibrate`` fits a model's speed factor from
completed runs in the real store (a SQLite file), robustly, and later plans use it.

Runs are made with the live path against stand-ins for Slurm (tests/unit/test_submit_service.py)
and completed with Slurm-like times: each run really took ``slow`` × what the shipped
profile predicts for its plan."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import pytest

from slurm_mlsched.errors import InputError
from slurm_mlsched.files.job_options import merge_options
from slurm_mlsched.files.profiles import get_profile
from slurm_mlsched.model.calibration import Sample, fit_factor, scaled
from slurm_mlsched.services.calibrate import calibrate
from slurm_mlsched.services.live_queue import LiveWiring
from slurm_mlsched.services.plan import predicted_runtime_s
from slurm_mlsched.services.submit import submit_job
from slurm_mlsched.services.viewer import Viewer
from slurm_mlsched.storage import DecisionState, SqlDecisionStore, open_store
from tests.unit.test_submit_service import JOB, NOW, FakeSource, FakeSubmitter, wiring

S = DecisionState
MODEL = "resnet-50"


@pytest.fixture
def store(tmp_path: Path) -> SqlDecisionStore:
    return open_store(f"sqlite:///{tmp_path / 'd.db'}", grace_s=0.0)


def resnet(**kw: object) -> object:
    base = {
        "workers": 2, "gpus_per_worker": 1, "cpus_per_worker": 1, "mem_per_worker": "1G",
        "cpus_per_ps": 1, "mem_per_ps": "1G", "model": MODEL, "epochs": 1,
        "batches_per_epoch": 2000,
    }  # fmt: skip
    return merge_options([], {**base, **kw})


def as_user(store: SqlDecisionStore, user: str) -> LiveWiring:
    return replace(wiring(store, FakeSource(), FakeSubmitter()), viewer=Viewer(user))


def run_jobs(store: SqlDecisionStore, slowness: list[float], user: str = "alice") -> list[float]:
    """Submit one job per entry and complete it after ``slowness`` × the runtime the
    shipped profile predicts for its plan; return the shipped predictions."""
    base = get_profile(MODEL)
    shipped = []
    for k, slow in enumerate(slowness):
        out = submit_job(as_user(store, user), resnet(), JOB)
        assert out.record is not None
        rec = store.get(out.record.decision_id)
        request = replace(rec.request, profile=base)
        truth = predicted_runtime_s(rec.decision, request, rec.snapshot.slot_seconds)
        shipped.append(truth)
        start = NOW + timedelta(hours=k)
        store.transition(rec.decision_id, S.RUNNING, start, "slurm: running")
        store.transition(rec.decision_id, S.COMPLETED, start + timedelta(seconds=slow * truth))
    return shipped


def test_jobs_twice_as_slow_as_the_profile_are_predicted_within_15_percent_after(
    store: SqlDecisionStore,
) -> None:
    run_jobs(store, [2.0] * 6)
    report = calibrate(store, cluster_name="lab", now=NOW, by="root")
    (fit,) = report.fits
    assert fit.model == MODEL and fit.samples == 6
    assert fit.factor == pytest.approx(2.0, rel=0.02)
    assert fit.error_before == pytest.approx(0.5, abs=0.02)  # predicted half the time
    assert fit.error_after is not None and fit.error_after < 0.15
    (recorded,) = report.recorded
    assert store.profile_fits("lab")[MODEL] == recorded

    # a later plan of the model uses the fit and says so
    out = submit_job(wiring(store, FakeSource(), FakeSubmitter()), resnet(), JOB)
    rec = store.get(out.record.decision_id)  # type: ignore[union-attr]
    assert any(f"calibration v{recorded.version}" in n for n in rec.decision.notes)
    shipped = replace(rec.request, profile=get_profile(MODEL))
    actual = 2.0 * predicted_runtime_s(rec.decision, shipped, rec.snapshot.slot_seconds)
    predicted = out.plan.predicted_runtime_s
    assert abs(predicted - actual) / actual < 0.15
    # ... and runs planned with it count with their factor at the next calibration
    store.transition(rec.decision_id, S.RUNNING, NOW + timedelta(days=1), "")
    store.transition(rec.decision_id, S.COMPLETED, NOW + timedelta(days=1, seconds=actual))
    again = calibrate(store, cluster_name="lab", now=NOW, by="root")
    assert again.fits[0].factor == pytest.approx(2.0, rel=0.02) and again.fits[0].samples == 7


def test_one_outlier_does_not_move_the_fit_far(store: SqlDecisionStore) -> None:
    run_jobs(store, [2.0, 2.1, 1.9, 2.0, 100.0])
    (fit,) = calibrate(store, cluster_name="lab", now=NOW, by="root").fits
    assert fit.factor == pytest.approx(2.0, rel=0.06)


def test_too_few_runs_fit_nothing_and_reset_goes_back(store: SqlDecisionStore) -> None:
    run_jobs(store, [2.0] * 3)
    report = calibrate(store, cluster_name="lab", now=NOW, by="root")
    (fit,) = report.fits
    assert fit.factor is None and "fewer than 5" in fit.skipped and report.recorded == ()
    assert store.profile_fits("lab") == {}
    fitted = calibrate(store, cluster_name="lab", now=NOW, by="root", min_samples=3)
    assert fitted.recorded[0].factor == pytest.approx(2.0, rel=0.02)
    reset = calibrate(store, cluster_name="lab", now=NOW, by="root", reset=True)
    assert [(f.model, f.factor) for f in reset.recorded] == [(MODEL, 1.0)]
    assert store.profile_fits("lab")[MODEL].factor == 1.0  # the newest row is in force
    out = submit_job(wiring(store, FakeSource(), FakeSubmitter()), resnet(), JOB)
    assert out.plan.request.profile == get_profile(MODEL)
    assert not any("calibration" in n for n in out.plan.decision.notes)


def test_unknown_model_and_bad_min_samples_are_input_errors(store: SqlDecisionStore) -> None:
    with pytest.raises(InputError, match="unknown model 'resnet50'") as err:
        calibrate(store, cluster_name="lab", now=NOW, by="root", models=("resnet50",))
    assert "did you mean resnet-50" in err.value.hint
    with pytest.raises(InputError, match="--min-samples"):
        calibrate(store, cluster_name="lab", now=NOW, by="root", min_samples=0)


def test_the_factor_scales_every_time_per_mini_batch() -> None:
    base = get_profile(MODEL)
    twice = scaled(base, 2.0)
    assert twice.theta_in == pytest.approx(2 * base.theta_in)
    assert twice.theta_ex == pytest.approx(2 * base.theta_ex)
    with pytest.raises(ValueError):
        scaled(base, 0.0)
    samples = [Sample(k, MODEL, 100.0, 150.0, 1.5) for k in range(5)]  # planned with ×1.5
    fit = fit_factor(MODEL, samples, 5)
    assert fit.factor == pytest.approx(2.25) and fit.error_after == pytest.approx(0.0)


def test_a_user_with_enough_runs_of_their_own_gets_their_own_fit(
    store: SqlDecisionStore,
) -> None:
    """Alice's runs take twice the profile, Bob's as long as it says: each gets a fit of
    their own (and plans with it); a third user with no runs plans with the model's."""
    run_jobs(store, [2.0] * 5, user="alice")
    run_jobs(store, [1.0] * 5, user="bob")
    report = calibrate(store, cluster_name="lab", now=NOW, by="root")
    by_scope = {f.scope: f for f in report.fits}
    assert set(by_scope) == {"", "user:alice", "user:bob"}
    assert by_scope["user:alice"].factor == pytest.approx(2.0, rel=0.02)
    assert by_scope["user:bob"].factor == pytest.approx(1.0, rel=0.02)
    assert by_scope["user:alice"].error_after < 0.15 and by_scope["user:bob"].error_after < 0.15
    fits = store.profile_fits("lab")
    for user, factor in (("alice", 2.0), ("bob", 1.0), ("carol", by_scope[""].factor)):
        out = submit_job(as_user(store, user), resnet(), JOB)
        used = out.plan.request.profile.step_time_s / get_profile(MODEL).step_time_s
        assert used == pytest.approx(factor, rel=0.02), user
    assert any("of alice" in n for n in submit_job(as_user(store, "alice"), resnet(), JOB)
               .plan.decision.notes)  # fmt: skip
    assert fits[f"{MODEL}|user:alice"].scope == "user:alice"
    reset = calibrate(store, cluster_name="lab", now=NOW, by="root", reset=True)
    assert {(f.scope, f.factor) for f in reset.recorded} == {
        ("", 1.0), ("user:alice", 1.0), ("user:bob", 1.0),
    }  # fmt: skip
