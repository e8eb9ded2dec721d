"""Golden JSON of the replay family (issue 16, item 3): what ``mlsub replay --json`` prints
(locally, ``--on-slurm``, ``--on-slurm --no-wait``, ``--merge DIR``), and the files a
replay writes (``summary.json``, ``metrics.json``, ``cells/K.json``), which are file
formats other programs read.

The replays run in this process on the six-job list of tests/conftest.py; the Slurm
commands of ``--on-slurm`` are a fake that runs the cells here (tests/sim/test_replay_cells.py
does the same for the services). Measured times, the version, the run id, where a cell
ran and the temporary directory are normalized.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from slurm_mlsched.services.clock import FixedClock
from slurm_mlsched.services.replay import ReplayOptions
from slurm_mlsched.services.replay.array import SlurmReplayOptions, prepare_array
from slurm_mlsched.services.replay.cells import cell_path, read_plan, run_cell
from slurm_mlsched.slurm.runner import CommandResult
from tests.conftest import replay_jobs_file as jobs_file
from tests.golden_json import assert_golden

runner = CliRunner()
ENV = {"MLSUB_FIXED_NOW": "2026-03-01T10:00:00Z", "MLSUB_DEBUG": ""}
CLOCK = FixedClock.from_iso("2026-03-01T10:00:00Z")

#: Values measured or drawn at run time: their keys stay, their values do not.
VOLATILE = (
    "wall_s",
    "decision_p50_ms",
    "decision_p99_ms",
    "decision_ms",
    "latencies_ms",
    "mlsub_version",
    "run_id",
    "where",
    "submitted_at",
)


def invoke(*args: str | Path) -> Any:
    result = runner.invoke(app, [str(a) for a in args], env=ENV)
    assert result.exit_code == 0, result.output
    return result


def scrubbed(data: object, tmp_path: Path) -> object:
    """``data`` with the temporary directory written ``<tmp>``."""
    return json.loads(json.dumps(data).replace(str(tmp_path), "<tmp>"))


def read(path: Path, tmp_path: Path) -> object:
    return scrubbed(json.loads(path.read_text()), tmp_path)


def test_local_replay_json_and_files(tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke(
        "replay", jobs_file(tmp_path), "-p", "fifo-ff", "-p", "yu-rr", "--nodes", "2x4",
        "--out", out, "--json", "--lp-max-jobs", "0",
    )  # fmt: skip
    assert_golden("replay/local", json.loads(result.stdout), volatile=VOLATILE)
    assert_golden(
        "replay/local_summary_file", read(out / "summary.json", tmp_path), volatile=VOLATILE
    )
    assert_golden(
        "replay/local_metrics_file", read(out / "metrics.json", tmp_path), volatile=VOLATILE
    )


def test_local_replay_json_without_out(tmp_path: Path) -> None:
    result = invoke(
        "replay", jobs_file(tmp_path), "-p", "fifo-bf", "--nodes", "2x4", "--json",
        "--form", "elastic", "--lp-max-jobs", "0",
    )  # fmt: skip
    assert_golden("replay/local_no_out", json.loads(result.stdout), volatile=VOLATILE)


class ArraySlurm:
    """A fake Slurm: ``sbatch`` runs every cell of the script's directory here (what the
    array's tasks do), ``squeue`` lists them all COMPLETED."""

    UP = "Slurmctld(primary) at vm is UP\n"

    def __init__(self, run_cells: bool = True) -> None:
        self.tasks = 0
        self.run_cells = run_cells

    def run(self, argv: Sequence[str], timeout: float, input: str | None = None) -> CommandResult:
        out = self.UP
        if argv[0] == "sbatch":
            out_dir = Path(argv[-1]).parent
            plan = read_plan(out_dir)
            if self.run_cells:
                for cell in plan.cells:
                    run_cell(out_dir, cell.index, CLOCK, {"host": "fake"})
            self.tasks, out = len(plan.cells), "4242\n"
        elif argv[0] == "squeue":
            out = "".join(f"4242_{i}|COMPLETED\n" for i in range(self.tasks))
        return CommandResult(tuple(argv), 0, out, "")


def fake_slurm(monkeypatch: pytest.MonkeyPatch, run_cells: bool = True) -> None:
    fake = ArraySlurm(run_cells)
    monkeypatch.setattr("slurm_mlsched.slurm.runner.LocalRunner", lambda *a, **k: fake)


def test_on_slurm_waits_merges_and_prints_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_slurm(monkeypatch)
    out = tmp_path / "o"
    result = invoke(
        "replay", jobs_file(tmp_path), "-p", "fifo-ff", "-p", "yu-rr", "--nodes", "2x4",
        "--out", out, "--json", "--lp-max-jobs", "0", "--on-slurm", "--seeds", "0,1",
        "--slices", "2",
    )  # fmt: skip
    assert_golden("replay/on_slurm", json.loads(result.stdout), volatile=VOLATILE)
    assert_golden(
        "replay/on_slurm_metrics_file", read(out / "metrics.json", tmp_path), volatile=VOLATILE
    )
    assert_golden(
        "replay/on_slurm_submission_file",
        read(out / "submission.json", tmp_path),
        volatile=VOLATILE,
    )
    assert_golden("replay/on_slurm_plan_file", read(out / "plan.json", tmp_path), volatile=VOLATILE)


def test_on_slurm_no_wait_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_slurm(monkeypatch, run_cells=False)
    result = invoke(
        "replay", jobs_file(tmp_path), "-p", "fifo-ff", "--nodes", "2x4", "--out",
        tmp_path / "o", "--json", "--on-slurm", "--no-wait", "--slices", "3",
    )  # fmt: skip
    assert_golden("replay/array_submitted", scrubbed(json.loads(result.stdout), tmp_path))


def test_cell_file_and_merge_json(tmp_path: Path) -> None:
    opts = ReplayOptions(
        trace=jobs_file(tmp_path), policies=("fifo-ff",), nodes="2x4", out_dir=tmp_path / "o",
        lp_max_jobs=50,
    )  # fmt: skip
    plan = prepare_array(opts, SlurmReplayOptions(slices=2), sys.executable, run_id="golden").plan
    out = plan.out_dir
    for index in (0, 1):
        invoke("replay-cell", out, str(index))
    assert_golden("replay/cell_file", read(cell_path(out, 0), tmp_path), volatile=VOLATILE)
    merged = invoke("replay", "--merge", out, "--json")
    assert_golden("replay/merged", json.loads(merged.stdout), volatile=VOLATILE)
    assert_golden(
        "replay/merged_metrics_file", read(out / "metrics.json", tmp_path), volatile=VOLATILE
    )


def test_cell_run_json(tmp_path: Path) -> None:
    """``run_cell``'s result (``mlsub replay-cell`` prints it as one line; no --json)."""
    opts = ReplayOptions(
        trace=jobs_file(tmp_path), policies=("fifo-ff", "yu-rr"), nodes="2x4",
        out_dir=tmp_path / "o", lp_max_jobs=0,
    )  # fmt: skip
    plan = prepare_array(opts, SlurmReplayOptions(slices=2), sys.executable, run_id="golden").plan
    ran = run_cell(plan.out_dir, 3, CLOCK, {"host": "here"})
    assert_golden("replay/cell_run", scrubbed(ran.to_json(), tmp_path), volatile=VOLATILE)


def test_trace_replay_json_and_metrics_file(tmp_path: Path) -> None:
    """A trace (Philly CSV, one record that never ran): the metrics file's input_rows,
    skipped_by_reason and notes."""
    rows = ["timestamp,duration,num_gpus,gpu_time,cluster"]
    for i in range(8):
        gpus = (1, 2, 4, 8)[i % 4]
        duration = 0.0 if i == 5 else 300.0 + 977.0 * i
        rows.append(f"2017-10-09 07:{i * 3:02d}:{i:02d},{duration},{gpus},{duration * gpus},c0")
    trace = tmp_path / "philly.csv"
    trace.write_text("\n".join(rows) + "\n\n")
    out = tmp_path / "out"
    result = invoke(
        "replay", trace, "-p", "fifo-ff", "--nodes", "2x8", "--out", out, "--json",
        "--lp-max-jobs", "0", "--limit", "7",
    )  # fmt: skip
    assert_golden("replay/trace", json.loads(result.stdout), volatile=VOLATILE)
    metrics = read(out / "metrics.json", tmp_path)
    assert_golden("replay/trace_metrics_file", metrics, volatile=VOLATILE)
