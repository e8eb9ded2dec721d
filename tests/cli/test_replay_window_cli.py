"""``mlsub replay --since/--until``: only the jobs submitted in the window are replayed,
the notes and ``input_rows`` say what was left out, ``--limit`` counts within the window,
and a bad or empty window is an input error (exit 3) that says how to fix it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from slurm_mlsched.services.replay import ReplayOptions
from slurm_mlsched.services.replay.cells import options_as_dict, options_from_dict
from tests.conftest import replay_jobs_file as jobs_file

runner = CliRunner()
ENV = {"MLSUB_FIXED_NOW": "2026-03-01T10:00:00Z", "MLSUB_DEBUG": ""}


def invoke(*args: str | Path) -> Any:
    return runner.invoke(app, ["replay", *(str(a) for a in args)], env=ENV)


def philly_file(tmp_path: Path) -> Path:
    """Six Philly rows (no zone: US Pacific): two on 2017-10-02, three on 10-03, one on 10-04
    local time. 2017-10-03 00:30 Pacific is 07:30 UTC: a UTC window would cut differently."""
    rows = [
        "2017-10-02 08:00:00,600,1,600,c1",
        "2017-10-02 23:30:00,600,1,600,c1",
        "2017-10-03 00:30:00,600,2,1200,c1",
        "2017-10-03 12:00:00,600,1,600,c1",
        "2017-10-03 23:59:59,600,4,2400,c1",
        "2017-10-04 00:00:00,600,1,600,c1",
    ]
    path = tmp_path / "philly.csv"
    path.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n" + "\n".join(rows) + "\n")
    return path


def replay(tmp_path: Path, trace: Path, *extra: str) -> tuple[Any, dict[str, Any]]:
    out = tmp_path / "out"
    result = invoke(trace, "-p", "fifo-bf", "--nodes", "2x4", "--out", out, "--json", *extra)
    metrics = json.loads((out / "metrics.json").read_text()) if result.exit_code == 0 else {}
    return result, metrics


def test_a_day_of_philly_is_a_pacific_day(tmp_path: Path) -> None:
    result, metrics = replay(
        tmp_path, philly_file(tmp_path), "--since", "2017-10-03", "--until", "2017-10-04"
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["jobs"] == 3
    rows = metrics["input_rows"]
    assert rows["records"] == 6 and rows["outside_window"] == 3 and rows["beyond_limit"] == 0
    notes = "\n".join(metrics["notes"])
    assert "window --since 2017-10-03 --until 2017-10-04: 3 of 6 job(s) submitted in it" in notes
    assert "(2 before, 1 after: left out)" in notes
    assert "dates without a zone read in America/Los_Angeles" in notes
    assert "3 record(s) outside --since/--until left out" in notes


def test_a_zone_in_the_date_wins_and_limit_counts_within_the_window(tmp_path: Path) -> None:
    # 2017-10-03T07:00Z = 00:00 Pacific: the same day as above, the first two of it
    result, metrics = replay(
        tmp_path, philly_file(tmp_path), "--since", "2017-10-03T07:00:00Z", "--limit", "2"
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["jobs"] == 2
    rows = metrics["input_rows"]
    assert rows["outside_window"] == 2 and rows["beyond_limit"] == 2


def test_a_duration_from_the_first_submit(tmp_path: Path) -> None:
    # the first submit is 2017-10-02 08:00: +16h is 10-03 00:00, +40h is 10-04 00:00
    result, _ = replay(tmp_path, philly_file(tmp_path), "--since", "+16h", "--until", "+40h")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["jobs"] == 3


def test_a_job_list_window_is_read_in_utc(tmp_path: Path) -> None:
    # submits at 300 s steps from the list's own epoch (none given: offsets); +600s..+1500s
    result, metrics = replay(tmp_path, jobs_file(tmp_path), "--since", "+600s", "--until", "+1500")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["jobs"] == 3  # submitted at 600, 900, 1200
    assert any("3 of 6 job(s) submitted in it (2 before, 1 after" in n for n in metrics["notes"])


def test_an_empty_window_says_where_the_jobs_are(tmp_path: Path) -> None:
    result = invoke(philly_file(tmp_path), "-p", "fifo-bf", "--nodes", "2x4",
                    "--since", "2018-01-01")  # fmt: skip
    assert result.exit_code == 3 and result.stdout == ""
    assert "no job of philly.csv was submitted in the window --since 2018-01-01" in result.stderr
    assert "2017-10-02T08:00:00-07:00 to 2017-10-04T00:00:00-07:00" in result.stderr


def test_bad_windows_are_input_errors(tmp_path: Path) -> None:
    trace = philly_file(tmp_path)
    cases = {
        ("--since", "last week"): "option --since must be a date-time or +DURATION",
        ("--until", "+3w"): "option --until must be a date-time or +DURATION",
        ("--since", "+2d", "--until", "+1d"): "option --until (+1d) must be later than --since",
    }
    for args, message in cases.items():
        result = invoke(trace, "-p", "fifo-bf", "--nodes", "2x4", *args)
        assert result.exit_code == 3, (args, result.stderr)
        assert message in result.stderr and "hint:" in result.stderr


def test_a_date_on_a_trace_of_offsets_is_refused(tmp_path: Path) -> None:
    pollux = tmp_path / "workload.csv"
    pollux.write_text("name,time,application,num_replicas\nj1,0,cifar10,1\nj2,60,cifar10,2\n")
    result = invoke(pollux, "-p", "fifo-bf", "--nodes", "2x4", "--since", "2017-10-03")
    assert result.exit_code == 3
    assert "its own start (it has no dates)" in result.stderr and "+7d" in result.stderr


def test_the_window_travels_with_the_cells_of_a_replay_on_slurm(tmp_path: Path) -> None:
    opts = ReplayOptions(trace=tmp_path / "t.csv", policies=("yu-rr",), since="+1d", until="+2d")
    data = json.loads(json.dumps(options_as_dict(opts)))
    assert data["since"] == "+1d" and options_from_dict(data) == opts
    plain = options_as_dict(ReplayOptions(trace=tmp_path / "t.csv", policies=("yu-rr",)))
    assert "since" not in plain and "until" not in plain  # plans of older versions decode
