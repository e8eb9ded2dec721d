"""``mlsub replay --on-slurm`` against the real lab cluster (scripts/slurm-lab/).

* policy × seed × slice cells run as the tasks of one Slurm job array (sacct lists every
  task COMPLETED, and each cell recorded its array job and task id), in an output
  directory whose name holds a space, quotes, ``#`` and ``%``;
* ``--slices 1 --seeds 0``, submitted with ``--no-wait`` and merged later with
  ``mlsub replay --merge DIR``, gives the local replay's summary (but the measured times);
* a cell that fails on the cluster fails the merge, naming the cell, its Slurm state and
  its log's end.

The input is the first 24 jobs of Philly (../shared/traces) on 4 nodes of 4 GPUs, without
the LP bound (computing it on these long jobs takes minutes; the bound's merge is checked
in tests/sim/test_replay_cells.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from slurm_mlsched.errors import ReplayCellsFailed
from slurm_mlsched.services.clock import WallClock
from slurm_mlsched.services.replay import ReplayOptions
from slurm_mlsched.services.replay.array import (
    SlurmReplayOptions,
    prepare_array,
    submit_array,
    wait_array,
)
from slurm_mlsched.services.replay.cells import cell_path, log_path
from slurm_mlsched.services.replay.merge import merge_dir
from slurm_mlsched.sim import SUMMARY_KEYS
from slurm_mlsched.slurm.arrays import ArrayStatusReader, parse_array_states
from tests.integration.conftest import LabCluster, poll
from tests.integration.mlsub_cli import mlsub_executable
from tests.traces.trace_files import PHILLY, need

pytestmark = pytest.mark.integration

SMALL = ("--limit", "24", "--nodes", "4x4", "--lp-max-jobs", "0")
HOSTILE = 'it\'s a "replay" #1 50%'
TIMED = {"wall_s", "decision_p50_ms", "decision_p99_ms"}


def mlsub(*args: str | Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLSUB_")}
    proc = subprocess.run(
        [mlsub_executable(), *map(str, args)],
        env={**env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=timeout,
        check=False,
    )  # fmt: skip
    assert proc.returncode == 0, f"mlsub {args} exited {proc.returncode}\n{proc.stderr}"
    return proc


def accounted(cluster: LabCluster, job_id: str, tasks: int) -> dict[int, str] | None:
    """The tasks' states in accounting once sacct lists all of them (it lags behind)."""
    text = cluster.slurm.run(["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State"])
    states = parse_array_states(text, job_id)
    return states if len(states) == tasks else None


def untimed(summary: dict[str, Any]) -> dict[str, Any]:
    policies = {
        p: {k: v for k, v in m.items() if k not in TIMED} for p, m in summary["policies"].items()
    }
    return {**summary, "policies": policies}


def test_cells_run_as_the_tasks_of_one_array_and_are_merged(
    cluster: LabCluster, tmp_path: Path
) -> None:
    out = tmp_path / HOSTILE
    began = time.monotonic()
    proc = mlsub(
        "replay", need(PHILLY), "-p", "fifo-ff", "-p", "yu-rr", "--seeds", "0,1",
        "--slices", "2", "--on-slurm", "--out", out, *SMALL, "--json",
    )  # fmt: skip
    took = time.monotonic() - began
    job_id = json.loads((out / "submission.json").read_text())["job_id"]
    cluster.jobs.append(int(job_id))
    summary = json.loads(proc.stdout)
    assert summary == json.loads((out / "summary.json").read_text())
    assert set(summary) == {"trace", "jobs", "skipped", "unplaceable", "policies"}
    assert list(summary["policies"]) == ["fifo-ff", "yu-rr"]
    assert all(set(m) == set(SUMMARY_KEYS) for m in summary["policies"].values())
    assert summary["jobs"] + summary["skipped"] + summary["unplaceable"] == 24
    states = poll("sacct to list the 8 tasks", lambda: accounted(cluster, job_id, 8), 90, 1.0)
    assert states == dict.fromkeys(range(8), "COMPLETED")
    for index in range(8):
        cell = json.loads(cell_path(out, index).read_text())
        assert cell["where"]["SLURM_ARRAY_JOB_ID"] == job_id
        assert cell["where"]["SLURM_ARRAY_TASK_ID"] == str(index)
        assert cell["where"]["SLURMD_NODENAME"] in {"node1", "node2", "node3", "node4"}
        assert log_path(out, index).read_text().startswith(f"cell {index} (")
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["on_slurm"]["job_id"] == job_id and len(metrics["on_slurm"]["cells"]) == 8
    assert set(metrics["on_slurm"]["per_seed"]["yu-rr"]) == {"0", "1"}
    assert (out / "report.html").read_text().count("data:image/png;base64,") == 3
    print(f"8 cells on the cluster, submit to merged report: {took:.1f} s")


def test_one_slice_one_seed_merged_later_equals_the_local_replay(
    cluster: LabCluster, tmp_path: Path
) -> None:
    out = tmp_path / "slurm"
    # a window of the trace (--since) travels with the cells: each replays the same jobs
    args = ("replay", need(PHILLY), "-p", "fifo-ff", "-p", "yu-rr", "--since", "2017-11-13", *SMALL)
    submitted = json.loads(
        mlsub(*args, "--seeds", "0", "--on-slurm", "--no-wait", "--out", out, "--json").stdout
    )
    cluster.jobs.append(int(submitted["job_id"]))
    assert submitted["merge_command"] == f"mlsub replay --merge {out}"
    assert submitted["cells"] == 2
    reader = ArrayStatusReader(cluster.slurm)
    states = wait_array(2, lambda: reader.states(submitted["job_id"], 2), time.sleep, every_s=1)
    assert states == {0: "COMPLETED", 1: "COMPLETED"}
    merged = json.loads(mlsub("replay", "--merge", out, "--json").stdout)
    local = json.loads(mlsub(*args, "--json").stdout)
    assert untimed(merged) == untimed(local)
    notes = json.loads((out / "metrics.json").read_text())["notes"]
    assert any(n.startswith("window --since 2017-11-13: ") for n in notes), notes


def test_a_cell_that_fails_on_the_cluster_fails_the_merge(
    cluster: LabCluster, tmp_path: Path
) -> None:
    jobs = [{"id": f"j{i}", "submit": 60 * i, "workers": 1, "model": "seq2seq",
             "duration_s": 600} for i in range(4)]  # fmt: skip
    trace = tmp_path / "jobs.json"
    trace.write_text(json.dumps({"jobs": jobs}))
    opts = ReplayOptions(trace=trace, policies=("fifo-ff",), nodes="2x4", out_dir=tmp_path / "o")
    missing = str(tmp_path / "no such python")
    prepared = prepare_array(opts, SlurmReplayOptions(slices=2), missing)
    job_id = submit_array(prepared, cluster.slurm, WallClock()).job_id
    cluster.jobs.append(int(job_id))
    reader = ArrayStatusReader(cluster.slurm)
    states = wait_array(2, lambda: reader.states(job_id, 2), time.sleep, every_s=1)
    assert set(states.values()) == {"FAILED"}
    with pytest.raises(ReplayCellsFailed) as caught:
        merge_dir(prepared.plan.out_dir, states=lambda: states)
    message = caught.value.message
    assert f"2 of 2 replay cell(s) cannot be merged (Slurm array job {job_id}" in message
    assert "cell 0 (fifo-ff, seed 0, slice 1/2): no result file; Slurm state FAILED" in message
    assert "No such file or directory" in message  # from the task's log
    assert not (tmp_path / "o" / "summary.json").exists()
