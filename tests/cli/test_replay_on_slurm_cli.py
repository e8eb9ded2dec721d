"""``mlsub replay --on-slurm`` / ``--merge DIR`` and the hidden ``mlsub replay-cell``
through Typer's CliRunner (no Slurm: the cells run in this process; the real cluster is
tests/integration/test_replay_on_slurm.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from slurm_mlsched.services.replay import ReplayOptions
from slurm_mlsched.services.replay.array import SlurmReplayOptions, prepare_array
from slurm_mlsched.services.replay.cells import cell_path
from tests.conftest import replay_jobs_file as jobs_file

runner = CliRunner()
ENV = {"MLSUB_FIXED_NOW": "2026-03-01T10:00:00Z", "MLSUB_DEBUG": ""}


def invoke(*args: str | Path) -> Any:
    return runner.invoke(app, [str(a) for a in args], env=ENV)


def planned(tmp_path: Path, slices: int = 2) -> Path:
    opts = ReplayOptions(
        trace=jobs_file(tmp_path), policies=("fifo-ff",), nodes="2x4", out_dir=tmp_path / "o",
        lp_max_jobs=0,
    )  # fmt: skip
    return prepare_array(opts, SlurmReplayOptions(slices=slices), sys.executable).plan.out_dir


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--slices", "2"], "option --slices needs --on-slurm"),
        (["--seeds", "0,1"], "option --seeds needs --on-slurm"),
        (["--partition", "ml"], "option --partition needs --on-slurm"),
        (["--time", "10"], "option --time needs --on-slurm"),
        (["--no-wait"], "option --no-wait needs --on-slurm"),
        (["--on-slurm"], "option --on-slurm needs --out DIR"),
        (["--on-slurm", "--out", "o", "--seeds", "x"], "--seeds must be a comma-separated"),
        (["--on-slurm", "--out", "o", "--seeds", "0,1", "--seed", "2"], "--seed and --seeds"),
    ],
)
def test_option_mistakes_are_input_errors(tmp_path: Path, extra: list[str], message: str) -> None:
    result = invoke("replay", jobs_file(tmp_path), "-p", "fifo-ff", *extra)
    assert result.exit_code == 3, result.output
    assert message in result.stderr and result.stdout == ""


def test_trace_and_policy_are_still_required_without_merge(tmp_path: Path) -> None:
    assert invoke("replay", "-p", "fifo-ff").exit_code == 2
    assert invoke("replay", jobs_file(tmp_path)).exit_code == 2
    result = invoke("replay", "--merge", tmp_path, jobs_file(tmp_path))
    assert result.exit_code == 3 and "--merge DIR takes no trace" in result.stderr


def test_replay_cell_runs_one_cell_and_merge_reports(tmp_path: Path) -> None:
    out = planned(tmp_path)
    for index in (0, 1):
        result = invoke("replay-cell", out, str(index))
        assert result.exit_code == 0, result.output
        assert f"cell {index} (fifo-ff, seed 0, slice {index + 1}/2): jobs [" in result.stdout
        assert json.loads(cell_path(out, index).read_text())["index"] == index
    merged = invoke("replay", "--merge", out, "--json")
    assert merged.exit_code == 0, merged.output
    assert json.loads(merged.stdout) == json.loads((out / "summary.json").read_text())
    table = invoke("replay", "--merge", out)
    assert "replayed on Slurm: array job ?, 2 cells" in table.stdout


def test_merge_of_a_failed_run_exits_9_naming_the_cell(tmp_path: Path) -> None:
    out = planned(tmp_path)
    assert invoke("replay-cell", out, "0").exit_code == 0
    (out / "cells" / "1.log").write_text("error[internal]: the node caught fire\n")
    result = invoke("replay", "--merge", out, "--json")
    assert result.exit_code == 9 and result.stdout == ""
    assert "error[replay-cells-failed]: 1 of 2 replay cell(s) cannot be merged" in result.stderr
    assert "the node caught fire" in result.stderr and "sbatch --array=1" in result.stderr


def test_replay_cell_errors(tmp_path: Path) -> None:
    out = planned(tmp_path)
    assert invoke("replay-cell", out, "9").exit_code == 3
    missing = invoke("replay-cell", tmp_path / "nowhere", "0")
    assert missing.exit_code == 3 and "holds no plan.json" in missing.stderr
    assert "replay-cell" not in invoke("--help").stdout  # hidden


def test_python_dash_m_runs_mlsub() -> None:
    done = subprocess.run(
        [sys.executable, "-P", "-m", "slurm_mlsched", "--version"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("mlsub ")
