"""``mlsub metrics`` on a real SQLite store with decisions in several states: the text
exposition on stdout and in ``--out FILE`` (atomic, readable by node_exporter), ``--json``
(golden), the ``--serve`` endpoint fetched over HTTP in a real process, and the refusals.
(The queue-now series against the real lab cluster: tests/integration/test_metrics_live.py.)"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import time
import urllib.request
from datetime import timedelta
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from slurm_mlsched.services.metrics_export import METRIC_NAMES
from slurm_mlsched.storage import open_store
from tests.cli.store_cli import run
from tests.golden_json import assert_golden
from tests.unit.test_metrics_values import several_states
from tests.unit.test_submit_service import NOW

LATER = (NOW + timedelta(hours=1)).isoformat().replace("+00:00", "Z")
LIVE_ONLY = {
    "mlsub_queue_plan_bound_ratio",
    "mlsub_queue_planned_completion_seconds",
    "mlsub_queue_bound_completion_seconds",
    "mlsub_queue_busy_ratio",
    "mlsub_replan_step_duration_seconds",
}


@pytest.fixture
def filled(env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    store = open_store(env["MLSUB_DB_URL"], grace_s=0.0)
    try:
        several_states(store, tmp_path)
    finally:
        store.close()
    return {**env, "MLSUB_FIXED_NOW": LATER, "MLSUB_CLUSTER_NAME": "lab"}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }


def test_stdout_is_the_exposition_format(filled: dict[str, str]) -> None:
    result = run(filled, "metrics", "--no-live")
    assert result.exit_code == 0, result.stderr
    fams = {f.name for f in text_string_to_metric_families(result.stdout)}
    assert fams == set(METRIC_NAMES) - LIVE_ONLY
    got = samples(result.stdout)
    assert got[("mlsub_queue_length", (("cluster", "lab"),))] == 1
    assert got[("mlsub_decisions", (("cluster", "lab"), ("state", "completed")))] == 1
    assert got[("mlsub_runs_measured_total", (("cluster", "lab"),))] == 2
    assert got[("mlsub_live_cluster_up", (("cluster", "lab"),))] == 0


def test_another_cluster_name_counts_nothing(filled: dict[str, str]) -> None:
    result = run(filled, "metrics", "--no-live", "--cluster-name", "other")
    assert result.exit_code == 0, result.stderr
    got = samples(result.stdout)
    assert got[("mlsub_queue_length", (("cluster", "other"),))] == 0


def test_out_writes_the_file_atomically_for_node_exporter(
    filled: dict[str, str], tmp_path: Path
) -> None:
    textfile = tmp_path / "textfile"
    textfile.mkdir()
    target = textfile / "mlsub.prom"
    target.write_text("old\n")
    result = run(filled, "metrics", "--no-live", "--out", target)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    printed = run(filled, "metrics", "--no-live").stdout
    assert target.read_text() == printed
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # node_exporter's user reads it
    assert [p.name for p in textfile.iterdir()] == ["mlsub.prom"]  # no temporary left


def test_out_into_a_missing_directory_is_refused(filled: dict[str, str], tmp_path: Path) -> None:
    result = run(filled, "metrics", "--no-live", "--out", tmp_path / "nowhere" / "m.prom")
    assert result.exit_code == 3
    assert "does not exist" in result.stderr and "--out" in result.stderr
    assert not (tmp_path / "nowhere").exists()


def test_serve_with_out_is_refused(filled: dict[str, str], tmp_path: Path) -> None:
    result = run(filled, "metrics", "--serve", "0", "--out", tmp_path / "m.prom")
    assert result.exit_code == 3 and "--serve" in result.stderr


def test_json_golden(filled: dict[str, str]) -> None:
    result = run(filled, "metrics", "--no-live", "--json")
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["queue_length"] == 1 and data["queue_now"] is None
    # the predicted runtime (and so the error) depends on the profile: values masked
    assert_golden(
        "metrics/metrics",
        data,
        volatile=(
            "relative_error_sum",
            "mean_abs_error_seconds",
            "mean_relative_bias",
            "gpu_planned_seconds",
        ),
        keys_only=("buckets",),
    )


def test_serve_answers_a_scrape_and_stops_on_sigterm(
    filled: dict[str, str], tmp_path: Path
) -> None:
    env = {**os.environ, **filled, "COLUMNS": "200"}
    argv = [sys.executable, "-m", "slurm_mlsched", "metrics", "--no-live"]
    proc = subprocess.Popen(
        [*argv, "--serve", "0", "--serve-seconds", "60"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()  # bounded: the process stops by itself after 60 s
        match = re.search(r"serving http://127\.0\.0\.1:(\d+)/metrics", line)
        assert match, line
        url = f"http://127.0.0.1:{match.group(1)}/metrics"
        with urllib.request.urlopen(url, timeout=10) as answer:
            assert answer.status == 200
            assert answer.headers["Content-Type"].startswith("text/plain")
            text = answer.read().decode()
        got = samples(text)
        assert got[("mlsub_queue_length", (("cluster", "lab"),))] == 1
        started = time.monotonic()
        proc.terminate()
        assert proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 10
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def test_serve_on_a_taken_port_says_so(filled: dict[str, str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run(filled, "metrics", "--no-live", "--serve", str(port))
    assert result.exit_code == 3
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_queue_now_json_golden() -> None:
    from slurm_mlsched.services.metrics import QueueBound

    bound = QueueBound(3, 2, 5400.0, 3600.0, "alone from now", 1.5, 0.75, step_s=0.012)
    assert_golden("metrics/queue_now", bound.to_json())
