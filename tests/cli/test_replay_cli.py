"""``mlsub replay`` through Typer's CliRunner: --json prints summary.json and only that,
the files land in --out, errors give the documented exit code and one message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from slurm_mlsched.errors import EXIT_CODES
from slurm_mlsched.placement import PlacementParams
from tests.conftest import replay_jobs_file as jobs_file

runner = CliRunner()
ENV = {"MLSUB_FIXED_NOW": "2026-03-01T10:00:00Z", "MLSUB_DEBUG": ""}


def invoke(*args: str | Path) -> Any:
    return runner.invoke(app, ["replay", *(str(a) for a in args)], env=ENV)


def test_replay_json_is_the_summary_and_files_are_written(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke(
        jobs_file(tmp_path), "-p", "fifo-ff", "-p", "fifo-bf", "--nodes", "2x4",
        "--out", out, "--json", "--lp-max-jobs", "0",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    printed = json.loads(result.stdout)
    assert printed == json.loads((out / "summary.json").read_text())
    assert printed["jobs"] == 6 and set(printed["policies"]) == {"fifo-ff", "fifo-bf"}
    assert (out / "report.html").exists() and (out / "jct_cdf.png").exists()


def test_replay_table_and_progress(tmp_path: Path) -> None:
    result = invoke(jobs_file(tmp_path), "-p", "yu-rr", "--nodes", "2x4", "--form", "elastic")
    assert result.exit_code == 0, result.stderr
    assert "avg JCT" in result.stdout and "yu-rr" in result.stdout
    assert "6 job(s) replayed, 0 skipped, 0 unplaceable" in result.stdout
    assert "6/6" in result.stderr  # the progress bar, on stderr


def test_replay_unknown_policy_is_an_input_error(tmp_path: Path) -> None:
    result = invoke(jobs_file(tmp_path), "-p", "nope", "--json")
    assert result.exit_code == 3 and EXIT_CODES[3].startswith("invalid input")
    assert result.stdout == ""
    assert "error[invalid-input]: unknown policy 'nope'" in result.stderr
    assert "fifo-bf" in result.stderr  # the hint lists the valid policies


def test_replay_bad_form_and_missing_file(tmp_path: Path) -> None:
    bad_form = invoke(jobs_file(tmp_path), "-p", "yu-rr", "--form", "sometimes")
    assert bad_form.exit_code == 3 and "--form" in bad_form.stderr
    missing = invoke(tmp_path / "none.json", "-p", "yu-rr")
    assert missing.exit_code == 3 and "cannot read job list" in missing.stderr


HEADER = "user_ID,group_ID,submit_time,start_time,end_time,wallclock_limit,job_status,"
MUSTANG_ROWS = "\n".join(
    [
        HEADER + "node_count,tasks_requested",
        "1,1,2012-02-07 00:00:00+00:00,2012-02-07 00:00:10+00:00,2012-02-07 01:00:10+00:00,"
        "0 days 02:00:00.000000000,COMPLETED,2,48",
        "2,2,2012-02-07 00:10:00+00:00,2012-02-07 00:10:05+00:00,2012-02-07 00:40:05+00:00,"
        "0 days 01:00:00.000000000,COMPLETED,1,24",
        "3,3,2012-02-07 00:20:00+00:00,,2012-02-07 00:21:00+00:00,"
        "0 days 01:00:00.000000000,CANCELLED,4,96",
        "",
    ]
)
CPU_CLUSTER = """slot_seconds: 600
groups:
  - {prefix: cpu, count: 4, gpus: 0, cpus: 24, mem_gb: 64}
"""


def test_cpu_jobs_replay_on_a_cpu_cluster(tmp_path: Path) -> None:
    trace = tmp_path / "mustang.csv"
    trace.write_text(MUSTANG_ROWS)
    cluster = tmp_path / "cpu.yaml"
    cluster.write_text(CPU_CLUSTER)
    skipped = invoke(trace, "-p", "yu-rr", "--cluster", cluster, "--json")
    assert skipped.exit_code == 0, skipped.stderr
    assert json.loads(skipped.stdout)["jobs"] == 0  # no GPUs, and CPU jobs are off
    ran = invoke(trace, "-p", "yu-rr", "-p", "qssf", "--cluster", cluster,
                 "--cpu-jobs", "per-node", "--json")  # fmt: skip
    assert ran.exit_code == 0, ran.stderr
    summary = json.loads(ran.stdout)
    assert (summary["jobs"], summary["skipped"]) == (2, 1)  # the cancelled one never ran
    assert summary["policies"]["yu-rr"]["avg_jct_s"] > 0


def test_bad_cpu_jobs_and_queue_program_are_input_errors(tmp_path: Path) -> None:
    for args in (("--cpu-jobs", "sometimes"), ("--cores-per-worker", "0"),
                 ("--queue-program", "global")):  # fmt: skip
        result = invoke(jobs_file(tmp_path), "-p", "yu-rr", *args)
        assert result.exit_code == 3, (args, result.stderr)
        assert f"option {args[0]}" in result.stderr and "Traceback" not in result.stderr


def test_load_rescales_the_arrivals_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke(
        jobs_file(tmp_path), "-p", "fifo-bf", "--nodes", "2x4", "--load", "2",
        "--out", out, "--json", "--lp-max-jobs", "0",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    notes = json.loads((out / "metrics.json").read_text())["notes"]
    assert any(n.startswith("arrivals rescaled to offered load 2 (from ") for n in notes), notes
    plain = invoke(jobs_file(tmp_path), "-p", "fifo-bf", "--nodes", "2x4", "--json")
    # the same six jobs, closer together: they wait longer than at the trace's own rate
    loaded, native = json.loads(result.stdout), json.loads(plain.stdout)
    assert loaded["jobs"] == native["jobs"] == 6
    assert loaded["policies"]["fifo-bf"]["avg_wait_s"] > native["policies"]["fifo-bf"]["avg_wait_s"]


def test_bad_load_is_an_input_error(tmp_path: Path) -> None:
    result = invoke(jobs_file(tmp_path), "-p", "fifo-bf", "--load", "0", "--json")
    assert result.exit_code == 3, result.stderr
    assert "error[invalid-input]: option --load must be an offered load between" in result.stderr
    same_time = tmp_path / "once.json"
    same_time.write_text(
        json.dumps({"jobs": [{"id": f"j{i}", "submit": 0, "workers": 1, "model": "seq2seq",
                              "duration_s": 600} for i in range(3)]})
    )  # fmt: skip
    result = invoke(same_time, "-p", "fifo-bf", "--load", "1", "--json")
    assert result.exit_code == 3, result.stderr
    assert "option --load cannot be applied: every job is submitted at the same time" in (
        result.stderr
    )


def recorded_params(tmp_path: Path, *flags: str) -> dict[str, Any]:
    """The placement parameters a `yu-rr` replay with ``flags`` records in metrics.json."""
    out = tmp_path / "out"
    result = invoke(
        jobs_file(tmp_path), "-p", "yu-rr", "--nodes", "2x4", *flags,
        "--out", out, "--json", "--lp-max-jobs", "0",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    params: dict[str, Any] = json.loads((out / "metrics.json").read_text())["params"]
    return params


def test_preempt_resize_is_recorded_and_needs_preemption(tmp_path: Path) -> None:
    params = recorded_params(tmp_path, "--preempt-resize")
    assert params["preempt"] is True and params["preempt_resize"] is True
    refused = invoke(jobs_file(tmp_path), "-p", "yu-rr", "--no-preempt", "--preempt-resize")
    assert refused.exit_code == 3, refused.stderr
    assert "option --preempt-resize" in refused.stderr and "--no-preempt" in refused.stderr
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize(
    ("option", "value", "bad", "choices"),
    [
        ("--preempt-cost", "slot", "cheap", "exact, slot"),
        ("--preempt-gain", "exchange", "guess", "exchange, rollout"),
    ],
)
def test_a_pause_rule_option_is_recorded_and_checked(
    tmp_path: Path, option: str, value: str, bad: str, choices: str
) -> None:
    field = option.removeprefix("--").replace("-", "_")
    assert recorded_params(tmp_path, option, value)[field] == value
    refused = invoke(jobs_file(tmp_path), "-p", "yu-rr", option, bad)
    assert refused.exit_code == 3, refused.stderr
    assert f"option {option} must be one of {choices}, got '{bad}'" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_preempt_max_is_recorded_and_checked(tmp_path: Path) -> None:
    assert recorded_params(tmp_path, "--preempt-max", "3")["preempt_max"] == 3
    (tmp_path / "default").mkdir()
    default = recorded_params(tmp_path / "default")
    assert default["preempt_max"] == 1000  # the library's
    assert default["preempt_resize"] is True and default["narrow_regret"] == 2.0  # replay's
    (tmp_path / "off").mkdir()
    off = recorded_params(tmp_path / "off", "--no-preempt")
    assert off["preempt"] is False and off["preempt_resize"] is False  # resize needs it
    (tmp_path / "pauses").mkdir()
    assert recorded_params(tmp_path / "pauses", "--no-preempt-resize")["preempt_resize"] is False
    refused = invoke(jobs_file(tmp_path), "-p", "yu-rr", "--no-preempt", "--preempt-resize")
    assert refused.exit_code == 3 and "option --preempt-resize" in refused.stderr
    for args, says in (
        (("--preempt-max", "-1"), "option --preempt-max must be between 0 and 1000000, got -1"),
        (("--no-preempt", "--preempt-max", "3"), "option --preempt-max limits how often"),
    ):
        refused = invoke(jobs_file(tmp_path), "-p", "yu-rr", *args)
        assert refused.exit_code == 3, refused.stderr
        assert says in refused.stderr and "Traceback" not in refused.stderr


def test_preempt_defrag_is_on_with_preemption_recorded_and_needs_it(tmp_path: Path) -> None:
    (tmp_path / "default").mkdir()
    assert recorded_params(tmp_path / "default")["preempt_defrag"] is True  # replay's
    assert PlacementParams().preempt_defrag is False  # the library's (and live)
    (tmp_path / "off").mkdir()
    assert recorded_params(tmp_path / "off", "--no-preempt-defrag")["preempt_defrag"] is False
    (tmp_path / "none").mkdir()
    assert recorded_params(tmp_path / "none", "--no-preempt")["preempt_defrag"] is False
    refused = invoke(jobs_file(tmp_path), "-p", "yu-rr", "--no-preempt", "--preempt-defrag")
    assert refused.exit_code == 3, refused.stderr
    assert "option --preempt-defrag" in refused.stderr and "--no-preempt" in refused.stderr
    assert "Traceback" not in refused.stderr


def test_preempt_migrate_is_recorded(tmp_path: Path) -> None:
    (tmp_path / "on").mkdir()
    assert recorded_params(tmp_path / "on", "--preempt-migrate")["preempt_migrate"] is True
    (tmp_path / "off").mkdir()
    assert recorded_params(tmp_path / "off", "--no-preempt-migrate")["preempt_migrate"] is False
    (tmp_path / "default").mkdir()
    default = recorded_params(tmp_path / "default")["preempt_migrate"]
    assert default is PlacementParams().preempt_migrate


def test_preempt_shrink_is_recorded_and_needs_preemption_and_the_rollout(
    tmp_path: Path,
) -> None:
    (tmp_path / "default").mkdir()  # measured, not the default
    assert recorded_params(tmp_path / "default")["preempt_shrink"] is False
    (tmp_path / "on").mkdir()
    assert recorded_params(tmp_path / "on", "--preempt-shrink")["preempt_shrink"] is True
    (tmp_path / "exchange").mkdir()
    exchange = recorded_params(tmp_path / "exchange", "--preempt-gain", "exchange")
    assert exchange["preempt_shrink"] is False
    for extra, named in (("--no-preempt", "--no-preempt"), ("--preempt-gain=exchange", "exchange")):
        result = invoke(jobs_file(tmp_path), "-p", "yu-rr", "--nodes", "2x4", "--preempt-shrink",
                        extra, "--json")  # fmt: skip
        assert result.exit_code == 3, result.stderr
        assert "--preempt-shrink" in result.stderr and named in result.stderr


def test_preempt_regather_is_recorded_and_needs_preemption_and_resize(tmp_path: Path) -> None:
    (tmp_path / "default").mkdir()  # the replay's default since 2026-12-06
    assert recorded_params(tmp_path / "default")["preempt_regather"] is True
    assert PlacementParams().preempt_regather is False  # the library's (and live)
    for name, flags in (
        ("off", ("--no-preempt-regather",)),
        ("nopreempt", ("--no-preempt",)),
        ("noresize", ("--no-preempt-resize",)),
    ):
        (tmp_path / name).mkdir()
        assert recorded_params(tmp_path / name, *flags)["preempt_regather"] is False, name
    for extra, named in (("--no-preempt", "--no-preempt"), ("--no-preempt-resize", "resize")):
        result = invoke(jobs_file(tmp_path), "-p", "yu-rr", "--nodes", "2x4",
                        "--preempt-regather", extra, "--json")  # fmt: skip
        assert result.exit_code == 3, result.stderr
        assert "--preempt-regather" in result.stderr and named in result.stderr
        assert "Traceback" not in result.stderr


def test_the_width_look_ahead_and_its_forecast_are_recorded(tmp_path: Path) -> None:
    for name in ("plain", "queue", "old"):
        (tmp_path / name).mkdir()
    plain = recorded_params(tmp_path / "plain")
    assert plain["lookahead_widths"] is False and plain["widths_forecast"] is False
    queue = recorded_params(tmp_path / "queue", "--lookahead-widths")
    assert queue["lookahead_widths"] is True and queue["widths_forecast"] is False
    old = recorded_params(tmp_path / "old", "--lookahead-widths", "--widths-forecast")
    assert old["lookahead_widths"] is True and old["widths_forecast"] is True
    alone = invoke(jobs_file(tmp_path / "old"), "-p", "yu-rr", "--widths-forecast")
    assert alone.exit_code == 3, alone.stderr
    assert "option --widths-forecast" in alone.stderr and "--lookahead-widths" in alone.stderr
    assert "Traceback" not in alone.stderr
