"""Crash safety against the real cluster: ``mlsub`` killed with SIGKILL between the commit
of its decision and sbatch, and killed during sbatch (after Slurm took the job, before
mlsub heard its id), leaves records that ``mlsub reconcile`` repairs.

How the crash is placed: an ``sbatch`` wrapper first on ``PATH`` (mlsub runs ``env TZ=UTC
sbatch …``, so it finds the wrapper) writes a marker file and then blocks; the test waits
for the marker and kills mlsub's whole process group (mlsub and the wrapper) with SIGKILL.
The "before" wrapper never calls Slurm; the "during" wrapper calls the real sbatch first.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import stat
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import LabCluster, poll
from tests.integration.mlsub_cli import SMALL_TASKS, Mlsub, probe_script

pytestmark = pytest.mark.integration

BEFORE = """#!/bin/sh
echo started > {marker}
exec sleep 600
"""
DURING = """#!/bin/sh
{sbatch} "$@" > {marker}.tmp && mv {marker}.tmp {marker}
exec sleep 600
"""
#: An sbatch that takes as long as the test wants: it waits for ``{marker}.go``, then runs.
SLOW = """#!/bin/sh
echo started > {marker}
while [ ! -e {marker}.go ]; do sleep 0.1; done
exec {sbatch} "$@"
"""


def wrapper(directory: Path, template: str, marker: Path) -> dict[str, str]:
    """An ``sbatch`` wrapper in ``directory``; returns the PATH that finds it first."""
    real = shutil.which("sbatch")
    assert real, "sbatch is not installed"
    directory.mkdir()
    path = directory / "sbatch"
    path.write_text(template.format(marker=shlex.quote(str(marker)), sbatch=shlex.quote(real)))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{directory}{os.pathsep}{os.environ.get('PATH', '')}"}


def crash_while_submitting(mlsub: Mlsub, script: Path, marker: Path, tasks: Path) -> None:
    proc = mlsub.spawn(str(script), "--interpreter", sys.executable, "--", str(tasks))
    try:
        poll("the sbatch wrapper to start", lambda: marker.exists() or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.communicate()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    assert proc.returncode == -signal.SIGKILL


def killed_before_sbatch(tmp_path: Path) -> Mlsub:
    """A one-worker submission killed after its decision was committed, before sbatch ran
    (its decision stays 'submitting'); returns the mlsub that was killed."""
    marker = tmp_path / "marker"
    crashed = Mlsub(tmp_path, extra_env=wrapper(tmp_path / "bin", BEFORE, marker))
    script = probe_script(
        tmp_path / "probe.py", f"{SMALL_TASKS} --workers 1 --batches-per-epoch 10"
    )
    crash_while_submitting(crashed, script, marker, tmp_path)
    return crashed


def test_killed_between_commit_and_sbatch_becomes_submit_failed(
    cluster: LabCluster, tmp_path: Path
) -> None:
    killed_before_sbatch(tmp_path)

    mlsub = Mlsub(tmp_path)  # the next command, with the real sbatch
    (row,) = mlsub.json("history")
    assert row["state"] == "submitting" and row["slurm_job_id"] is None
    assert mlsub.json("show", str(row["decision_id"]))["script"]  # committed with its script
    # the submitting process is gone from this host: over at once, whatever its age
    report = mlsub.json("reconcile")
    (fixed,) = report["decisions"]
    assert (fixed["before"], fixed["after"]) == ("submitting", "submit-failed")
    assert fixed["slurm_job_id"] is None
    assert "is gone" in fixed["steps"][0]["detail"]
    assert mlsub.json("history")[0]["state"] == "submit-failed"  # its reservation is free


def test_killed_during_sbatch_is_found_by_its_tag(cluster: LabCluster, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    crashed = Mlsub(tmp_path, extra_env=wrapper(tmp_path / "bin", DURING, marker))
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    script = probe_script(
        tmp_path / "probe.py", f"{SMALL_TASKS} --workers 2 --batches-per-epoch 10"
    )
    crash_while_submitting(crashed, script, marker, tasks)
    slurm_id = marker.read_text().strip().split(";")[0]
    cluster.jobs.append(int(slurm_id))

    mlsub = Mlsub(tmp_path)
    (row,) = mlsub.json("history")
    assert row["state"] == "submitting" and row["slurm_job_id"] is None  # mlsub never heard
    (found,) = mlsub.json("reconcile")["decisions"]  # found at once: no staleness needed
    assert found["slurm_job_id"] == slurm_id and found["found_in"] == "squeue"
    assert found["after"] in ("submitted", "running", "completed"), found
    cluster.wait_finished(int(slurm_id))
    mlsub.json("reconcile")
    shown = mlsub.json("show", str(row["decision_id"]))
    assert shown["state"] == "completed" and shown["slurm_job_id"] == slurm_id
    states = [t["state"] for t in shown["transitions"]]
    assert states == ["submitting", "submitted", "running", "completed"]
    assert len(list(tasks.glob("*.json"))) == 3  # the job really ran: 1 PS + 2 workers


def test_a_slow_sbatch_is_never_failed_by_a_neighbours_reconcile(
    cluster: LabCluster, tmp_path: Path
) -> None:
    """Issue 15: ``reconcile --stale-after 5`` while a submit's sbatch took 14 s marked it
    submit-failed. Now the submitting process is alive, so it stays ``submitting`` (even
    with ``--stale-after 0``), and the submit then exits 0 with its job recorded."""
    marker = tmp_path / "marker"
    slow = Mlsub(tmp_path, extra_env=wrapper(tmp_path / "bin", SLOW, marker))
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    script = probe_script(
        tmp_path / "probe.py", f"{SMALL_TASKS} --workers 1 --batches-per-epoch 10"
    )
    proc = slow.spawn(str(script), "--interpreter", sys.executable, "--json", "--", str(tasks))
    try:
        poll("the sbatch wrapper to start", lambda: marker.exists() or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.communicate()
        mlsub = Mlsub(tmp_path)
        for _ in range(3):
            (row,) = mlsub.json("reconcile", "--stale-after", "0")["decisions"]
            assert row["after"] == "submitting", row
            assert "still submitting" in row["note"] and "is running" in row["note"]
        Path(f"{marker}.go").write_text("go\n")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    assert proc.returncode == 0, err
    submitted = json.loads(out)
    cluster.jobs.append(int(submitted["slurm_job_id"]))
    assert submitted["state"] in ("submitted", "running", "completed")
    cluster.wait_finished(int(submitted["slurm_job_id"]))
    mlsub.json("reconcile")
    shown = mlsub.json("show", str(submitted["decision_id"]))
    assert shown["state"] == "completed"
    assert [t["state"] for t in shown["transitions"]][:2] == ["submitting", "submitted"]
