"""Golden JSON of the decision-store commands (issue 16, item 3): ``history``, ``show``,
``explain``, ``export``, ``release``, ``db current`` and ``db upgrade``, each from a real
SQLite store, at a fixed clock. A changed key, nesting or stable value fails here."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from tests.cli.store_cli import CLUSTER, SCRIPT, busy_cluster, ok_json
from tests.golden_json import assert_golden

#: Values that differ between machines or runs: package versions, solver timings, paths.
VOLATILE = ("packages", "host", "user", "url", "solver_version", "timings_ms")
#: A decision's statistics: which are recorded is pinned, their values (LP sizes, rounding
#: statistics) are not.
KEYS_ONLY = ("stats",)


def golden(name: str, data: object) -> None:
    assert_golden(f"decisions/{name}", data, volatile=VOLATILE, keys_only=KEYS_ONLY)


def _store(env: dict[str, str]) -> None:
    """Decisions 1 and 2 by the fast path; 3 by LP + rounding (its trials in explain)."""
    for workers in ("2", "4"):
        ok_json(env, "plan", SCRIPT, "--cluster", CLUSTER, "--reserve", "--workers", workers)
    busy = busy_cluster(Path(env["XDG_CONFIG_HOME"]).parent)
    ok_json(env, "plan", SCRIPT, "--cluster", busy, "--reserve")


def test_history_show_release_golden(env: dict[str, str]) -> None:
    _store(env)
    assert_golden(
        "decisions/history", ok_json(env, "history"), volatile=VOLATILE, keys_only=KEYS_ONLY
    )
    assert_golden(
        "decisions/show", ok_json(env, "show", "1"), volatile=VOLATILE, keys_only=KEYS_ONLY
    )
    assert_golden(
        "decisions/release", ok_json(env, "release", "2"), volatile=VOLATILE, keys_only=KEYS_ONLY
    )
    assert_golden(
        "decisions/history_after_release",
        ok_json(env, "history"),
        volatile=VOLATILE,
        keys_only=KEYS_ONLY,
    )


def test_explain_golden(env: dict[str, str]) -> None:
    _store(env)
    assert_golden(
        "decisions/explain", ok_json(env, "explain", "2"), volatile=VOLATILE, keys_only=KEYS_ONLY
    )
    assert_golden(
        "decisions/explain_lp", ok_json(env, "explain", "3"), volatile=VOLATILE, keys_only=KEYS_ONLY
    )
    assert_golden(
        "decisions/show_lp", ok_json(env, "show", "3"), volatile=VOLATILE, keys_only=KEYS_ONLY
    )


def test_export_golden(env: dict[str, str]) -> None:
    _store(env)
    result = CliRunner().invoke(app, ["export", "--format", "json"], env=env)
    assert result.exit_code == 0, result.output
    assert_golden(
        "decisions/export", json.loads(result.stdout), volatile=VOLATILE, keys_only=KEYS_ONLY
    )


def test_db_golden(env: dict[str, str]) -> None:
    assert_golden(
        "decisions/db_upgrade",
        ok_json(env, "db", "upgrade"),
        volatile=VOLATILE,
        keys_only=KEYS_ONLY,
    )
    assert_golden(
        "decisions/db_current",
        ok_json(env, "db", "current"),
        volatile=VOLATILE,
        keys_only=KEYS_ONLY,
    )
