"""``mlsub report`` without a browser: what the page's data says about a real store (a
SQLite file filled through the live path with stand-ins for Slurm), and that no stored
string can break out of the page's data block. In headless Chromium against a store of
real runs and a synthetic store of 100,000 decisions: tests/integration/test_report_browser.py."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest

from slurm_mlsched.services.report import render_page, report_data
from slurm_mlsched.services.submit import submit_job
from slurm_mlsched.storage import DecisionState, HistoryFilter, SqlDecisionStore, open_store
from tests.unit.test_replan_service import fill_and_queue
from tests.unit.test_submit_service import JOB, NOW, FakeSource, FakeSubmitter, opts, wiring

S = DecisionState


@pytest.fixture
def store(tmp_path: Path) -> SqlDecisionStore:
    return open_store(f"sqlite:///{tmp_path / 'd.db'}", grace_s=0.0)


def data_of(store: SqlDecisionStore, **where: object) -> dict[str, object]:
    rows = store.report_rows(HistoryFilter(cluster="lab", **where))  # type: ignore[arg-type]
    return report_data(rows, now=NOW + timedelta(hours=1), cluster_name="lab", filters={}, fits={})


def test_each_decision_shows_its_plan_and_what_slurm_did(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    _sub, ids = fill_and_queue(store, tmp_path)  # four submitted, one queued
    start, end = NOW + timedelta(seconds=30), NOW + timedelta(seconds=330)
    store.transition(ids[0], S.RUNNING, start, "slurm: running")
    store.transition(ids[0], S.COMPLETED, end, "slurm: completed")
    store.transition(ids[1], S.CANCELLED, end, "scancel")
    data = data_of(store)
    rows = {r["i"]: r for r in data["decisions"]}  # type: ignore[attr-defined]
    done = rows[ids[0]]
    assert (done["s"], done["as"], done["ae"], done["ar"]) == (
        "completed", start.timestamp(), end.timestamp(), 300.0,
    )  # fmt: skip
    assert done["pr"] > 0 and done["g"] == 4 and done["sj"] == ["101"]
    assert done["n"] == [p.node for p in store.get(ids[0]).decision.placement][:1]
    assert rows[ids[4]]["s"] == "queued" and rows[ids[4]]["as"] is None
    agg = data["aggregates"]
    assert agg["by_state"] == {"cancelled": 1, "completed": 1, "queued": 1, "submitted": 2}
    assert agg["by_user"] == {"alice": agg["by_state"]}
    (model,) = agg["error_by_model"]
    assert model["runs"] == 1 and model["median_error"] == pytest.approx(
        abs(done["pr"] - 300.0) / 300.0
    )
    # the queued job waits until now: the queue series reaches 1
    assert max(n for _, n in agg["queue"]) >= 1
    assert sorted(data["nodes"]) == sorted({f"node{k}" for k in range(1, 5)})
    # filters: one user, a time window
    assert data_of(store, user="bob")["decisions"] == []
    assert len(data_of(store, until=NOW)["decisions"]) == 0
    assert len(data_of(store, since=NOW - timedelta(minutes=1))["decisions"]) == 5


def test_no_stored_string_breaks_out_of_the_data_block(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    name = "</script><script>alert(1)</script><!--"
    submit_job(wiring(store, FakeSource(), FakeSubmitter()), opts(name=name), JOB)
    data = data_of(store)
    page = render_page(data)
    assert "<script>alert(1)" not in page
    block = re.search(
        r'<script id="report-data" type="application/json">(.*?)</script>', page, re.S
    )
    assert block is not None
    assert json.loads(block.group(1)) == json.loads(json.dumps(data))
    assert json.loads(block.group(1))["decisions"][0]["j"] == name
    assert page.count("<script") == 2  # the data block and the page's own script


def test_the_page_is_written_privately_and_bad_input_is_refused(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from slurm_mlsched.cli.app import app

    url = f"sqlite:///{tmp_path / 'd.db'}"
    open_store(url, grace_s=0.0).close()
    env = {"MLSUB_DB_URL": url, "MLSUB_FIXED_NOW": "2026-11-29T12:00:05Z", "MLSUB_AS_USER": ""}
    runner = CliRunner()
    out = tmp_path / "out"
    missing = runner.invoke(app, ["report", "--out", str(out)], env=env)
    assert missing.exit_code == 3 and "not a directory" in missing.stderr
    out.mkdir()
    done = runner.invoke(app, ["report", "--out", str(out), "--json"], env=env)
    assert done.exit_code == 0, done.stderr
    result = json.loads(done.stdout)
    page = Path(result["path"])
    assert result["decisions"] == 0 and page.parent == out
    assert page.stat().st_mode & 0o777 == 0o600
    bad = runner.invoke(app, ["report", "--out", str(out), "--since", "yesterday"], env=env)
    assert bad.exit_code == 3 and "--since" in bad.stderr
    other = runner.invoke(
        app, ["report", "--out", str(out), "--user", "bob"], env={**env, "MLSUB_AS_USER": "alice"}
    )
    assert other.exit_code == 3 and "only list their own" in other.stderr


def test_a_row_it_cannot_read_or_a_non_number_is_shown_not_fatal(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    from sqlalchemy import update

    from slurm_mlsched.storage.models import DecisionRow

    first = submit_job(wiring(store, FakeSource(), FakeSubmitter()), opts(name="a"), JOB)
    second = submit_job(wiring(store, FakeSource(), FakeSubmitter()), opts(name="b"), JOB)
    assert first.record is not None and second.record is not None
    with store._engine.begin() as conn:
        conn.execute(update(DecisionRow).where(DecisionRow.id == first.record.decision_id)
                     .values(decision_json="{not json", lp_value=float("nan")))  # fmt: skip
        conn.execute(update(DecisionRow).where(DecisionRow.id == second.record.decision_id)
                     .values(lp_value=float("inf")))  # fmt: skip
    data = data_of(store)
    rows = {r["i"]: r for r in data["decisions"]}  # type: ignore[attr-defined]
    assert "could not be read" in rows[first.record.decision_id]["no"][0]
    assert rows[second.record.decision_id]["lp"] is None
    page = render_page(data)
    block = re.search(
        r'<script id="report-data" type="application/json">(.*?)</script>', page, re.S
    )
    assert block is not None

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in the page's data: JSON.parse would fail")

    json.loads(block.group(1), parse_constant=refuse)
