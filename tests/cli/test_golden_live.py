"""Golden JSON of the live commands (issue 16, item 3): ``plan``, ``plan --reserve``,
``submit`` / ``plan SCRIPT`` (live dry run), ``reconcile``, ``cluster``, ``plugins check``,
``remote trust``, ``policies``, ``calibrate`` and ``report``.

Commands that need no Slurm run through Typer's CliRunner with a fixed clock and a real
SQLite store; ``cluster`` runs against the stand-in Slurm commands of
tests/cli/test_cluster_cli.py; the others (Slurm, SSH, Lua) golden their service result
built from the stand-ins the unit tests use. Refresh: ``MLSUB_UPDATE_GOLDEN=1``."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from slurm_mlsched.files.job_script import JobScript
from slurm_mlsched.plugins.check import CheckReport, Finding, PluginReport, parse_check_output
from slurm_mlsched.remote.trust import Trusted
from slurm_mlsched.services.calibrate import calibrate
from slurm_mlsched.services.clock import FixedClock
from slurm_mlsched.services.reconcile import reconcile
from slurm_mlsched.services.submit import submit_job
from slurm_mlsched.services.viewer import Viewer
from slurm_mlsched.slurm.jobs import JobStatus, StatusReport
from slurm_mlsched.storage import DecisionState, SqlDecisionStore, open_store
from tests.cli.test_cluster_cli import fake_slurm
from tests.golden_json import assert_golden
from tests.unit.test_calibrate import run_jobs
from tests.unit.test_submit_service import (
    JOB,
    NOW,
    FakeSource,
    FakeSubmitter,
    interrupted,
    opts,
    status,
    wiring,
)

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = "examples/cluster.yaml"  # relative (the test runs in ROOT): the JSON names it
SCRIPT = "examples/train_resnet.py"
FIXED = "2026-03-01T10:07:30Z"
#: Values that differ between runs or installs: package versions, wall times.
VOLATILE = ("mlsub_version", "solver_version", "timings_ms", "decision_ms")
S = DecisionState

runner = CliRunner()


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    monkeypatch.chdir(ROOT)
    return {
        "MLSUB_FIXED_NOW": FIXED,
        "MLSUB_DEBUG": "",
        "MLSUB_DB_URL": f"sqlite:///{tmp_path / 'decisions.db'}",
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "MLSUB_CONFIG": str(tmp_path / "no-config.toml"),
        "MLSUB_AS_USER": "",
        "MLSUB_ADMINS": "",
    }


def ok_json(env: dict[str, str], *args: str) -> Any:
    result = runner.invoke(app, [*args, "--json"], env=env)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture
def store(tmp_path: Path) -> SqlDecisionStore:
    return open_store(f"sqlite:///{tmp_path / 'd.db'}", grace_s=600.0)


# --- plan, plan --reserve -----------------------------------------------------------------


def test_plan(env: dict[str, str]) -> None:
    data = ok_json(env, "plan", SCRIPT, "--cluster", CLUSTER)
    assert_golden("live/plan", data, volatile=VOLATILE)


def test_plan_elastic_several_slots(env: dict[str, str]) -> None:
    data = ok_json(
        env, "plan", "--cluster", CLUSTER, "--form", "elastic", "--policy", "yu-rr",
        "--workers", "8", "--step-time", "0.5", "--model-size", "100",
        "--batches-per-epoch", "4000", "--epochs", "3",
    )  # fmt: skip
    assert_golden("live/plan_elastic", data, volatile=VOLATILE)


def test_plan_reserve(env: dict[str, str]) -> None:
    ok_json(env, "plan", SCRIPT, "--cluster", CLUSTER, "--reserve")
    data = ok_json(env, "plan", SCRIPT, "--cluster", CLUSTER, "--reserve")
    assert data["decision_id"] == 2
    assert_golden("live/plan_reserve", data, volatile=VOLATILE)


# --- submit, plan SCRIPT (live dry run) ------------------------------------------------------


def test_submit_outcome(store: SqlDecisionStore) -> None:
    w = wiring(store, FakeSource(), FakeSubmitter())
    submit_job(w, opts(workers=2), JOB)
    out = submit_job(w, opts(), JOB)
    assert_golden("live/submit", out.to_json(), volatile=VOLATILE)


def test_submit_dry_run_outcome(store: SqlDecisionStore) -> None:
    w = wiring(store, FakeSource(), FakeSubmitter())
    out = submit_job(w, opts(), JobScript(Path("/home/alice/run.sh")), dry_run=True)
    assert_golden("live/submit_dry_run", out.to_json(), volatile=VOLATILE)


def test_submit_with_a_warning(store: SqlDecisionStore) -> None:
    from slurm_mlsched.errors import StoreError

    w = wiring(store, FakeSource(), FakeSubmitter())

    class Broken:
        def __getattr__(self, name: str) -> Any:
            return getattr(store, name)

        def transition(self, *a: object, **kw: object) -> None:
            raise StoreError("database is locked")

    out = submit_job(replace(w, store=Broken()), opts(), JOB)  # type: ignore[arg-type]
    assert out.warnings
    assert_golden("live/submit_warning", out.to_json(), volatile=VOLATILE)


def test_plan_script_on_the_live_cluster(tmp_path: Path, env: dict[str, str]) -> None:
    """``mlsub plan SCRIPT`` without --cluster: the dry run through the CLI."""
    slurm = fake_slurm(tmp_path, "24.11", "busy")
    script = tmp_path / "train.py"
    script.write_text("# mlsub: --workers 2 --gpus-per-worker 1 --step-time 0.5\n")
    e = {**env, **{k: v for k, v in slurm.items() if k not in ("MLSUB_FIXED_NOW",)}}
    e["MLSUB_FIXED_NOW"] = "2026-11-29T17:00:00Z"
    data = ok_json(e, "plan", str(script), "--model-size", "10", "--batches-per-epoch", "100")
    assert data["decision_id"] is None
    assert_golden("live/plan_script_live", data, volatile=(*VOLATILE, "script"))


# --- reconcile ---------------------------------------------------------------------------------


def reconcile_json(store: SqlDecisionStore, jobs: dict[str, JobStatus], when: Any) -> Any:
    class Reader:
        def queue(self) -> dict[str, JobStatus]:
            return jobs

        def accounting(self, *, since: object, job_ids: object = ()) -> StatusReport:
            return StatusReport({})

    return reconcile(
        store=store, reader=Reader(), clock=FixedClock(when),  # type: ignore[arg-type]
        cluster_name="lab", viewer=Viewer("alice"),
    ).to_json()  # fmt: skip


def test_reconcile(store: SqlDecisionStore) -> None:
    did, tag = interrupted(store)
    w = wiring(store, FakeSource(), FakeSubmitter())
    submit_job(w, opts(workers=1), JOB)
    submit_job(w, opts(workers=1), JOB)
    t1, t2 = NOW + timedelta(seconds=5), NOW + timedelta(seconds=90)
    jobs = {
        "7": status("7", "COMPLETED", f"x;{tag}", start=t1, end=t2, exit_code="0", user="alice"),
        "101": status("101", "RUNNING", start=t1),
    }
    data = reconcile_json(store, jobs, NOW + timedelta(minutes=5))
    assert [d["decision_id"] for d in data["decisions"]] == [did, 2, 3]
    assert_golden("live/reconcile", data)


def test_reconcile_nothing_open(env: dict[str, str], tmp_path: Path) -> None:
    slurm = fake_slurm(tmp_path, "24.11", "busy")
    data = ok_json({**env, **slurm, "MLSUB_DB_URL": env["MLSUB_DB_URL"]}, "reconcile")
    assert_golden("live/reconcile_empty", data)


# --- cluster -----------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario", ["busy", "states"])
def test_cluster(tmp_path: Path, scenario: str) -> None:
    env = fake_slurm(tmp_path, "24.11", scenario)
    result = runner.invoke(app, ["cluster", "--json", "--slot-seconds", "60"], env=env)
    assert result.exit_code == 0, result.stderr
    assert_golden(f"live/cluster_{scenario}", json.loads(result.stdout), volatile=VOLATILE)


# --- plugins check, remote trust, policies -----------------------------------------------------


def test_plugins_check() -> None:
    source = "local SITE = {\n  mode = 'x',\n}\nreturn M\n"
    text = (
        "kind\tjob_submit\n"
        "error\tsyntax\t/etc/slurm/job_submit.lua:7: '=' expected near 'y'\n"
        "note\tnote\tslurm_job_submit is there\n"
    )
    kind, findings = parse_check_output("/etc/slurm/job_submit.lua", source, text)
    report = CheckReport(
        "lua5.1",
        (
            PluginReport("/etc/slurm/job_submit.lua", kind, findings),
            PluginReport("/etc/slurm/cli_filter.lua", "cli_filter", ()),
            PluginReport("x.lua", None, (Finding("x.lua", None, "no such file", "load"),)),
        ),
    )
    assert_golden("live/plugins_check", report.to_json())


def test_remote_trust() -> None:
    done = Trusted("login.example.org", "ssh-ed25519", "SHA256:" + "A" * 43, "/h/kh", True)
    assert_golden("live/remote_trust", done.to_json())


def test_policies(env: dict[str, str]) -> None:
    assert_golden("live/policies", ok_json(env, "policies"))


# --- calibrate, report -------------------------------------------------------------------------


def test_calibrate_reset(env: dict[str, str]) -> None:
    assert_golden("live/calibrate_empty", ok_json(env, "calibrate"))
    data = ok_json(env, "calibrate", "--reset", "--model", "resnet-50")
    assert_golden("live/calibrate_reset", data)


def test_calibrate_fitted(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'c.db'}", grace_s=0.0)
    run_jobs(store, [2.0] * 6)
    run_jobs(store, [1.0] * 2, user="bob")
    report = calibrate(store, cluster_name="lab", now=NOW, by="root")
    assert_golden("live/calibrate_fitted", report.to_json())


def test_report(env: dict[str, str], tmp_path: Path) -> None:
    ok_json(env, "plan", SCRIPT, "--cluster", CLUSTER, "--reserve")
    out = tmp_path / "out"
    out.mkdir()
    data = ok_json(env, "report", "--out", str(out))
    assert data["path"] == str(out / "report.html")
    assert_golden("live/report", data, volatile=("path",))
