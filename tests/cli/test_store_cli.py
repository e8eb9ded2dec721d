"""The decision-store commands through Typer's CliRunner (and, for concurrency, real
``mlsub`` processes): plan --reserve, release, history, show, explain, export, db."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from alembic import command

from slurm_mlsched.api.store_access import resolve_user
from slurm_mlsched.errors import InputError
from slurm_mlsched.services.report import decision_row
from slurm_mlsched.storage import HistoryFilter, open_store
from slurm_mlsched.storage.database import alembic_config, make_engine
from tests.cli.store_cli import (
    CLUSTER,
    SCRIPT,
    busy_cluster,
    ok_json,
    run,
)


def reserve(env: dict[str, str], **extra: str) -> dict[str, Any]:
    data: dict[str, Any] = ok_json(env, "plan", SCRIPT, "--cluster", CLUSTER, "--reserve", **extra)
    return data


def test_reserve_then_history_show_release(env: dict[str, str]) -> None:
    first = reserve(env)
    second = reserve(env)
    assert (first["decision_id"], second["decision_id"]) == (1, 2)
    assert first["state"] == "planned" and first["cluster_name"] == "default"
    nodes = lambda plan: {r["node"] for r in plan["placement"]}  # noqa: E731
    assert not nodes(first) & nodes(second) or second["start_slot"] > first["start_slot"]
    rows = ok_json(env, "history")
    assert [r["decision_id"] for r in rows] == [1, 2]
    for key in ("decision_id", "created_at", "user", "state", "start", "end", "placement",
                "slurm_job_id"):  # fmt: skip
        assert key in rows[0], key
    assert rows[0]["placement"] == first["placement"] and rows[0]["start"] == first["start"]
    assert rows[0]["user"] == "root" and rows[0]["slurm_job_id"] is None
    shown = ok_json(env, "show", "1")
    assert shown["snapshot_sha256"] == first["snapshot_sha256"]
    assert [t["state"] for t in shown["transitions"]] == ["planned"]
    assert ok_json(env, "release", "1")["state"] == "released"
    again = ok_json(env, "release", "1")  # already released: a no-op, not an error
    assert again["state"] == "released"
    assert [t["state"] for t in ok_json(env, "show", "1")["transitions"]] == [
        "planned",
        "released",
    ]
    assert [r["decision_id"] for r in ok_json(env, "history", "--state", "planned")] == [2]
    third = reserve(env)  # decision 1's capacity is free again: only decision 2 is held
    assert first["cluster"]["reservations"] == 0
    assert third["cluster"]["reservations"] == second["cluster"]["reservations"] > 0


def test_explain_reproduces_bit_for_bit(env: dict[str, str], tmp_path: Path) -> None:
    plan: dict[str, Any] = ok_json(
        env, "plan", SCRIPT, "--cluster", busy_cluster(tmp_path), "--reserve", MLSUB_AS_USER=""
    )
    data = ok_json(env, "explain", str(plan["decision_id"]))
    assert data["reproduced"] is True and data["diff"] == [] and data["snapshot_digest_ok"]
    assert data["mode"] == plan["mode"] and data["lp_deadline_slot"] == plan["lp_deadline_slot"]
    assert data["why"] and data["binding"]
    kinds = [a["kind"] for a in data["alternatives"]]
    assert kinds[0] == "chosen" and any(k.startswith("plain Slurm") for k in kinds)
    chosen = data["alternatives"][0]
    assert chosen["end_slot"] == plan["end_slot"] and chosen["completion_slots"] >= 1
    trials = [a for a in data["alternatives"] if a["kind"].startswith("rounding trial")]
    assert plan["solver"] == "highs-lp"  # this example goes through LP + rounding + repair
    assert len(trials) == plan["trials"] and sum(t["kept"] for t in trials) == 1
    kept = next(t for t in trials if t["kept"])
    assert kept["kind"] == f"rounding trial {data['kept_trial']}"
    assert kept["kept_because"] == data["kept_because"]
    assert data["kept_because"].startswith("earliest end after repair (completion ")
    assert {"violations", "work_fraction", "repaired_end_slot", "repaired_workers"} <= set(kept)
    human = run(env, "explain", str(plan["decision_id"]), COLUMNS="200")
    assert human.exit_code == 0 and "reproduced exactly" in human.stdout
    assert "alternatives" in human.stdout and "kept" in human.stdout
    assert f"kept trial {data['kept_trial']} of {plan['trials']}: earliest end" in human.stdout


def test_identical_trials_share_a_row_that_is_kept_if_one_was() -> None:
    from datetime import UTC, datetime

    from slurm_mlsched.cli.output.decisions import _alternative_rows
    from slurm_mlsched.model.decision import RoundingTrial
    from slurm_mlsched.services.decision_views import Alternative, TrialOutcome

    at = datetime(2026, 3, 1, 10, 40, tzinfo=UTC)

    def trial(index: int, work: float, kept: bool) -> TrialOutcome:
        t = RoundingTrial(index, 0, work, start_slot=0, end_slot=3, workers=2, colocated=True)
        return TrialOutcome(t, at, 4, kept, "why" if kept else "")

    chosen = Alternative("chosen", "yu-rr", "non-elastic", "colocated", 2, 1, 0, 3, at, at, 4)
    rows = [chosen, trial(0, 1.0, False), trial(1, 1.0, True), trial(2, 0.5, False)]
    out = _alternative_rows(rows, grouped=True)
    assert [r[0] for r in out] == ["chosen", "trials 0-1 (2)", "trial 2"]
    assert out[1][-1].endswith("kept") and not out[2][-1].endswith("kept")
    every = _alternative_rows(rows, grouped=False)
    assert [r[0] for r in every][1:] == [f"rounding trial {i}" for i in range(3)]


def test_explain_reports_a_difference(env: dict[str, str], tmp_path: Path) -> None:
    reserve(env)
    engine = make_engine(env["MLSUB_DB_URL"])
    with engine.begin() as conn:  # tamper with the stored seed: the re-solve must notice
        row = conn.exec_driver_sql("SELECT params_json FROM decisions WHERE id = 1").scalar_one()
        params = json.loads(row)
        params["seed"] = 12345
        params["trials"] = 1
        conn.exec_driver_sql(
            "UPDATE decisions SET params_json = ? WHERE id = 1", (json.dumps(params),)
        )
    engine.dispose()
    data = ok_json(env, "explain", "1")
    assert data["reproduced"] is False  # the decision records its seed: it always differs
    assert {d["field"] for d in data["diff"]} & {"seed", "trials", "slots"}


def test_ordinary_users_see_their_own(env: dict[str, str]) -> None:
    reserve(env, MLSUB_AS_USER="alice")
    reserve(env, MLSUB_AS_USER="bob")
    assert [r["user"] for r in ok_json(env, "history", MLSUB_AS_USER="alice")] == ["alice"]
    denied = run(env, "history", "--user", "bob", MLSUB_AS_USER="alice")
    assert denied.exit_code == 3 and "own decisions" in denied.stderr
    hidden = run(env, "show", "2", MLSUB_AS_USER="alice")
    assert hidden.exit_code == 3 and "not-found" in hidden.stderr
    assert run(env, "release", "2", MLSUB_AS_USER="alice").exit_code == 3
    admin = ok_json(env, "history", MLSUB_AS_USER="carol", MLSUB_ADMINS="carol")
    assert [r["user"] for r in admin] == ["alice", "bob"]
    assert [r["user"] for r in ok_json(env, "history")] == ["alice", "bob"]  # root
    assert [r["user"] for r in ok_json(env, "history", "--user", "bob")] == ["bob"]


def test_export_csv_and_json(env: dict[str, str]) -> None:
    plan = reserve(env)
    result = run(env, "export", "--format", "csv")
    assert result.exit_code == 0, result.stderr
    (row,) = list(csv.DictReader(io.StringIO(result.stdout)))
    assert row["decision_id"] == "1" and row["state"] == "planned"
    assert row["placement"] == ";".join(
        f"{p['node']}:{p['role']}:{p['count']}" for p in plan["placement"]
    )
    result = run(env, "export", "--format", "json")
    (full,) = json.loads(result.stdout)
    assert full["request"]["job_id"] == "resnet50-demo" and full["snapshot"]["machines"]
    assert full["decision"]["seed"] == plan["seed"]
    bad = run(env, "export", "--format", "xml")
    assert bad.exit_code == 3 and "--format" in bad.stderr


def test_history_options_are_checked(env: dict[str, str]) -> None:
    reserve(env)
    assert len(ok_json(env, "history", "--since", "1h")) == 1
    assert ok_json(env, "history", "--since", "2026-03-02T00:00:00Z") == []
    empty = run(env, "history", "--since", "2026-03-02T00:00:00Z")
    assert empty.exit_code == 0 and empty.stdout.startswith("no decisions match"), empty.stdout
    bad = run(env, "history", "--state", "sleeping")
    assert bad.exit_code == 3 and "planned" in bad.stderr
    assert run(env, "history", "--since", "yesterday").exit_code == 3
    assert run(env, "show", "42").exit_code == 3


def test_db_current_upgrade_and_out_of_date_message(env: dict[str, str], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = make_engine(url)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0001")
    engine.dispose()
    current = ok_json(env, "db", "current", "--db-url", url)
    assert (current["current"], current["head"], current["up_to_date"]) == ("0001", "0007", False)
    for args in (["history"], ["show", "1"], ["plan", SCRIPT, "--cluster", CLUSTER, "--reserve"]):
        result = run(env, *args, "--db-url", url)
        assert result.exit_code == 7, (args, result.stderr)
        assert "db-out-of-date" in result.stderr
        assert f"mlsub db upgrade --db-url {url}" in result.stderr
    result = run(env, "history", MLSUB_DB_URL=url)
    assert result.exit_code == 7 and "upgrade it with: mlsub db upgrade\n" in result.stderr
    upgraded = ok_json(env, "db", "upgrade", "--db-url", url)
    assert (upgraded["before"], upgraded["after"]) == ("0001", "0007")
    assert run(env, "db", "upgrade", "--db-url", url).stdout.endswith("already at 0007\n")
    assert ok_json(env, "history", "--db-url", url) == []


def test_as_user_is_refused_for_non_root(env: dict[str, str]) -> None:
    as_someone = {"MLSUB_AS_USER": "someone"}
    with pytest.raises(InputError, match=r"only root may set MLSUB_AS_USER \(you are 'alice'\)"):
        resolve_user(as_someone, euid=1000, name="alice")
    assert resolve_user(as_someone, euid=0, name="root") == "someone"
    assert resolve_user({}, euid=1000, name="alice") == "alice"
    if os.geteuid() != 0:  # and the command itself, when this test is not root
        assert run(env, "history", MLSUB_AS_USER="someone").exit_code == 3


def test_default_database_lives_under_xdg_state(env: dict[str, str], tmp_path: Path) -> None:
    env = {k: v for k, v in env.items() if k != "MLSUB_DB_URL"}
    state = {"XDG_STATE_HOME": str(tmp_path / "state"), "MLSUB_DB_URL": ""}
    ok_json(env, "history", **state)  # reading creates nothing
    path = tmp_path / "state" / "mlsched" / "decisions.db"
    assert not path.exists()
    reserve(env, **state)  # recording creates it, owner only
    assert path.stat().st_mode & 0o777 == 0o600 and path.parent.stat().st_mode & 0o777 == 0o700


# --- 8 real processes planning at once -----------------------------------------------------


def test_concurrent_mlsub_processes_never_double_book(env: dict[str, str], tmp_path: Path) -> None:
    procs = 8
    child_env = {**os.environ, **env}
    cmd = [sys.executable, "-c", "from slurm_mlsched.cli.app import main; main()", "plan",
           str(SCRIPT), "--cluster", str(CLUSTER), "--reserve", "--json", "--workers", "4",
           "--cpus-per-worker", "2"]  # fmt: skip
    children = [
        subprocess.Popen(cmd, env=child_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(procs)
    ]
    outs = [child.communicate(timeout=300) for child in children]
    for child, (_, err) in zip(children, outs, strict=True):
        assert child.returncode == 0, err.decode()
    ids = sorted(json.loads(out)["decision_id"] for out, _ in outs)
    assert ids == list(range(1, procs + 1))
    store = open_store(env["MLSUB_DB_URL"], grace_s=600)
    caps: dict[str, tuple[float, ...]] = {}
    used: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    starts = set()
    for summary in store.history():
        rec = store.get(summary.decision_id)
        caps = {m.name: m.capacity.as_tuple() for m in rec.snapshot.machines}
        starts.add(summary.start)
        for plan in rec.decision.slots:
            for node, use in plan.usage(rec.request).items():
                for t in range(plan.slot, plan.stop):
                    cell = used[(node, t)]
                    for i, x in enumerate(use.as_tuple()):
                        cell[i] += x
    for (node, t), cell in used.items():
        assert all(u <= c + 1e-9 for u, c in zip(cell, caps[node], strict=True)), (node, t, cell)
    assert len(starts) > 1, "all jobs start together: the 16 GPUs cannot hold 8 × 4 workers"


def _waited_lines(env: dict[str, str], decision: dict[str, Any]) -> list[str]:
    """The ``waited for NODE: ...`` lines of the decision's explanation (at least one)."""
    why = ok_json(env, "explain", str(decision["decision_id"]))["why"]
    waited = [line for line in why if line.startswith("waited for ")]
    assert waited, why
    return waited


def test_explain_says_why_a_job_waited(env: dict[str, str]) -> None:
    # the 8-worker vgg-16 job takes every node's CPUs for 3 slots; the same job planned
    # next must wait, and explain names the nodes, the missing CPUs and the job holding them
    job = ["--workers", "8", "--ps", "2", "--gpus-per-worker", "1", "--model", "vgg-16",
           "--epochs", "2", "--batches-per-epoch", "1000"]  # fmt: skip
    first = ok_json(env, "plan", "--cluster", CLUSTER, "--reserve", *job)
    second = ok_json(env, "plan", "--cluster", CLUSTER, "--reserve", *job)
    assert second["start_slot"] == first["end_slot"] + 1
    for line in _waited_lines(env, second):
        assert "needs CPUs 8 (free 0)" in line
        assert f"held by mlsub-{first['decision_id']} until slot {first['end_slot'] + 1}" in line
    # a third waits behind both: every job that held its nodes while it waited is named
    third = ok_json(env, "plan", "--cluster", CLUSTER, "--reserve", *job)
    assert third["start_slot"] == second["end_slot"] + 1
    for line in _waited_lines(env, third):
        assert f"in slots 0–{second['end_slot']};" in line, line
        assert (
            f"held by mlsub-{first['decision_id']} until slot {first['end_slot'] + 1}, "
            f"mlsub-{second['decision_id']} until slot {second['end_slot'] + 1}"
        ) in line, line


def test_history_reads_well_at_80_columns(env: dict[str, str]) -> None:
    ok_json(env, "plan", SCRIPT, "--cluster", CLUSTER, "--reserve", "--workers", "12")
    reserve(env)
    reserve(env, MLSUB_AS_USER="")
    result = run(env, "history", COLUMNS="80")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.rstrip("\n").splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    assert "…" not in result.stdout  # no cell cut to an ellipsis
    rows = [line for line in lines[2:] if re.match(r"\d+ ", line)]
    assert [r.split()[0] for r in rows] == ["1", "2", "3"], lines  # one row a decision
    for row in rows:  # the short columns never fold: id … end on the decision's line
        assert "resnet50-demo planned" in row, row
        assert re.search(r"\d\d-\d\d \d\d:\d\d \d\d-\d\d \d\d:\d\d", row), row  # MM-DD HH:MM
    groups = re.findall(r"node[\w\[\],-]*:\d+w(?:\+\d+ps)?", result.stdout)
    assert len(groups) >= 4, groups  # the compact placement: node:Nw+Mps per node group
    wide = run(env, "history", COLUMNS="140")
    assert "created (UTC)" in wide.stdout and "created (UTC)" not in result.stdout
    assert "policy" not in wide.stdout
    wider = run(env, "history", COLUMNS="170").stdout
    assert "policy" in wider and "yu-rr (non-elastic)" in wider and "colocated" in wider


def test_explain_at_80_columns_shows_each_trial_outcome_once(
    env: dict[str, str], tmp_path: Path
) -> None:
    plan = ok_json(env, "plan", SCRIPT, "--cluster", busy_cluster(tmp_path), "--reserve")
    short = run(env, "explain", str(plan["decision_id"]), COLUMNS="80")
    assert short.exit_code == 0, short.stderr
    assert all(len(line) <= 80 for line in short.stdout.splitlines())
    assert "…" not in short.stdout
    every = run(env, "explain", str(plan["decision_id"]), "--trials", COLUMNS="80")
    one_each = len(re.findall(r"^rounding trial \d+ ", every.stdout, re.M))
    assert one_each == plan["trials"]  # --trials: a row per trial
    grouped = re.findall(r"^trials? ([\d,-]+)", short.stdout, re.M)
    assert 1 <= len(grouped) < plan["trials"]  # the default: each outcome once
    counts = [int(n) for n in re.findall(r"\((\d+)\)", short.stdout)]
    singles = len(re.findall(r"^trial \d+ ", short.stdout, re.M))
    assert sum(counts) + singles == plan["trials"]  # every trial is in some row
    assert "--trials" in short.stdout and "kept" in short.stdout


def test_plan_and_show_say_which_trial_was_kept_and_why(
    env: dict[str, str], tmp_path: Path
) -> None:
    plan = ok_json(env, "plan", SCRIPT, "--cluster", busy_cluster(tmp_path), "--reserve")
    kept, why = plan["kept_trial"], plan["kept_because"]
    assert 0 <= kept < plan["trials"] and why, plan  # LP + rounding: a trial was kept
    shown = ok_json(env, "show", str(plan["decision_id"]))
    assert (shown["kept_trial"], shown["kept_because"]) == (kept, why)
    table = run(env, "show", str(plan["decision_id"]), COLUMNS="200")
    assert f"trial {kept} of {plan['trials']}: {why}" in table.stdout, table.stdout
    fast = reserve(env)  # the fast path draws no trials: nothing kept, no row
    assert (fast["kept_trial"], fast["kept_because"]) == (None, "")
    assert "kept" not in run(env, "show", str(fast["decision_id"])).stdout
    # the report page's detail panel (its row's "k") says the same
    store = open_store(env["MLSUB_DB_URL"], grace_s=0.0)
    try:
        rows = {r.summary.decision_id: decision_row(r) for r in store.report_rows(HistoryFilter())}
    finally:
        store.close()
    short = why.partition("; ties")[0]  # the page leaves the tie-breaks to explain
    assert rows[plan["decision_id"]]["k"] == f"trial {kept} of {plan['trials']}: {short}"
    assert rows[fast["decision_id"]]["k"] == ""


def test_explain_of_a_distributed_fast_path_decision_does_not_say_co_located(
    env: dict[str, str],
) -> None:
    plan = reserve(env, MLSUB_AS_USER="")
    wide = ok_json(
        env, "plan", SCRIPT, "--cluster", CLUSTER, "--reserve", "--workers", "12",
        "--form", "elastic",
    )  # fmt: skip
    for decision, mode in ((plan, "colocated"), (wide, "distributed")):
        assert decision["solver"] == "fast-path" and decision["mode"] == mode, decision
        why = ok_json(env, "explain", str(decision["decision_id"]))["why"]
        assert why[0].startswith("exact fast path") and ("co-located" in why[0]) == (
            mode == "colocated"
        ), why


def test_show_lists_the_schedule_when_the_allocation_changes(
    env: dict[str, str], tmp_path: Path
) -> None:
    busy = busy_cluster(tmp_path)
    elastic = ok_json(
        env, "plan", SCRIPT, "--cluster", busy, "--reserve", "--form", "elastic",
        "--workers", "12",
    )  # fmt: skip
    runs = elastic["slots"]
    assert len(runs) > 1, runs  # the case: the allocation changes over time
    shown = run(env, "show", str(elastic["decision_id"]), COLUMNS="100").stdout
    assert "(first slot)" in shown and "schedule" in shown, shown
    for r in runs:  # a row per run of identical slots, with its worker count
        first, last = r["first_slot"], r["last_slot"]
        label = str(first) if first == last else f"{first}–{last}"
        assert re.search(rf"{label} +│ .* │ {r['workers']} +│ {r['ps']} ", shown), (label, shown)
    fixed = reserve(env)
    assert "schedule" not in run(env, "show", str(fixed["decision_id"])).stdout


def test_reading_commands_create_no_store(env: dict[str, str], tmp_path: Path) -> None:
    """A mistyped --db-url path leaves nothing behind: history, show, explain and export
    read an empty store; a command that records (plan --reserve) creates it."""
    url = f"sqlite:///{tmp_path / 'typo' / 'sub' / 'd.db'}"
    assert ok_json(env, "history", "--db-url", url) == []
    assert run(env, "show", "1", "--db-url", url).exit_code == 3  # no decision 1
    assert run(env, "explain", "1", "--db-url", url).exit_code == 3
    assert run(env, "export", "--db-url", url).stdout.strip() == "[]"
    assert not (tmp_path / "typo").exists()
    reserve(env, MLSUB_DB_URL=url)
    assert (tmp_path / "typo" / "sub" / "d.db").exists()
    assert len(ok_json(env, "history", "--db-url", url)) == 1


def test_calibrate_is_for_admins_and_reports_what_it_fitted(env: dict[str, str]) -> None:
    """Issue 20: a user who is not an admin is refused (it changes every user's plans);
    an admin with no completed runs gets an empty report; --reset of a model records
    factor 1 (tests/unit/test_calibrate.py fits from real runs)."""
    e = env
    refused = run(e, "calibrate", MLSUB_AS_USER="alice")
    assert refused.exit_code == 3 and "admins only" in refused.stderr
    assert ok_json(e, "calibrate")["models"] == []
    reset = ok_json(e, "calibrate", "--reset", "--model", "resnet-50")
    assert [(m["model"], m["factor"], m["version"]) for m in reset["models"]] == [
        ("resnet-50", 1.0, 1)
    ]
    unknown = run(e, "calibrate", "--model", "resnet50")
    assert unknown.exit_code == 3 and "did you mean resnet-50" in unknown.stderr
