"""Late binding on the real cluster (issue 19): four jobs fill the four lab nodes, a fifth
waits held (``queued``); when the first job ends, slurmctld's EpilogSlurmctld
(plugins/epilog_slurmctld.sh, configured by the lab kit) runs ``mlsub replan``, which
starts the fifth within seconds on the nodes its decision names (checked with sacct). Two
concurrent re-plans start it once; a re-plan killed after recording the start and before
acting in Slurm is finished by ``mlsub reconcile``.

The jobs: 8 workers of 1 GPU and 2 CPUs + 1 PS of 1 CPU each, so that one fills a node
(8 CPUs: 3 workers and the PS) and a fifth cannot start while four run. The issue's
example speaks of three jobs filling the cluster; here four do, one per lab node.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import require_or_skip
from tests.integration.conftest import LabCluster, poll
from tests.integration.mlsub_cli import Mlsub, mlsub_executable
from tests.integration.test_crash_reconcile import BEFORE, wrapper

pytestmark = pytest.mark.integration

LAB_BASE = Path(os.environ.get("SLURM_LAB_BASE", "/tmp/slurm-lab"))
HEADER = (
    "--workers 8 --ps 1 --gpus-per-worker 1 --cpus-per-worker 2 --mem-per-worker 4G "
    "--cpus-per-ps 1 --mem-per-ps 1G --step-time 0.05 --model-size 1 --epochs 1 "
    "--batches-per-epoch 1000 --time 5"
)
#: ``job.sh SECONDS [RELEASE]``: sleeps SECONDS, or with RELEASE until that file exists
#: (at most SECONDS), so that a test ends the first job when it chooses, not on a timer that
#: a slow machine outruns while the other jobs are still being submitted.
SCRIPT = f"""#!/bin/bash
# mlsub: {HEADER}
if [ -n "$2" ]; then
    for _ in $(seq "$1"); do [ -e "$2" ] && exit 0; sleep 1; done
    exit 0
fi
sleep "$1"
"""
#: A scontrol that blocks on ``release`` (everything else goes to the real one).
BLOCKING_SCONTROL = """#!/bin/sh
if [ "$1" = release ]; then echo started > {marker}; exec sleep 600; fi
exec {real} "$@"
"""


def idle(cluster: LabCluster) -> None:
    """Wait until no job runs or waits (the previous tests' jobs are cancelled)."""
    poll(
        "an idle cluster",
        lambda: not cluster.slurm.run(["squeue", "-h", "-t", "running,pending"]).strip(),
        120,
    )


def submit(mlsub: Mlsub, script: Path, name: str, seconds: int, *release: Path) -> dict[str, Any]:
    args = [str(seconds), *map(str, release)]
    out: dict[str, Any] = mlsub.json(str(script), "--name", name, "--", *args)
    return out


Row = tuple[datetime | None, datetime | None, str]


def fill_and_queue(
    cluster: LabCluster, mlsub: Mlsub, release: Path | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Four jobs that run 300 s fill the lab, a fifth waits held. With ``release``, the
    first job ends once that file exists (the test creates it when it is ready)."""
    idle(cluster)
    script = mlsub.workdir / "job.sh"
    script.write_text(SCRIPT)
    running = []
    for k in range(4):
        first = () if k or release is None else (release,)
        out = submit(mlsub, script, f"fill{k}", 300, *first)
        cluster.jobs.append(int(out["slurm_job_id"]))
        assert out["state"] == "submitted" and not out["waits"], out
        running.append(out)
    waiting = submit(mlsub, script, "waits", 5)
    cluster.jobs.append(int(waiting["slurm_job_id"]))
    assert waiting["state"] == "queued" and waiting["waits"], waiting
    held = cluster.slurm.run(["squeue", "-h", "-j", waiting["slurm_job_id"], "-o", "%T|%r"])
    assert {line.strip() for line in held.splitlines()} == {"PENDING|JobHeldUser"}
    return running, waiting


def sacct_rows(cluster: LabCluster, job_id: str) -> list[Row]:
    """(start, end, nodes) of every component of ``job_id`` from accounting."""
    out = cluster.slurm.run(
        ["sacct", "-j", job_id, "-X", "-n", "-P", "-o", "JobID,Start,End,NodeList"]
    )
    rows = []
    for line in out.splitlines():
        _, start, end, nodes = line.split("|")
        rows.append((_time(start), _time(end), nodes))
    return rows


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None  # Unknown / None


def decision_nodes(shown: dict[str, Any]) -> set[str]:
    return {p["node"] for p in shown["placement"]}


def ran_on(cluster: LabCluster, job_id: str) -> set[str]:
    rows = poll(
        f"job {job_id} started in accounting",
        lambda: (r := sacct_rows(cluster, job_id)) and all(s for s, _, _ in r) and r,
        60,
    )
    return {n for _, _, nodes in rows for n in nodes.split(",") if n}


@pytest.fixture
def epilog(cluster: LabCluster, tmp_path: Path) -> Iterator[Mlsub]:
    """An mlsub whose store slurmctld's epilog re-plans (the lab's epilog env file)."""
    config = cluster.slurm.run(["scontrol", "show", "config"])
    if "epilog-slurmctld" not in config:
        require_or_skip(
            "the lab cluster runs without mlsub's EpilogSlurmctld (started before it was "
            "added): restart it with make cluster-down cluster-up"
        )
    mlsub = Mlsub(tmp_path, slot_seconds=10, cluster_name="lab-queue")
    env_file = LAB_BASE / "mlsub-epilog.env"
    env_file.write_text(
        f"MLSUB={mlsub_executable()}\nMLSUB_DB_URL=sqlite:///{mlsub.db}\n"
        f"MLSUB_CLUSTER_NAME={mlsub.cluster_name}\nMLSUB_SLOT_SECONDS={mlsub.slot_seconds}\n"
        f"STATE_DIR={tmp_path / 'epilog-state'}\nLOG={tmp_path / 'epilog.log'}\n"
    )
    try:
        yield mlsub
    finally:
        env_file.unlink(missing_ok=True)


def test_the_epilog_starts_a_queued_job_on_its_nodes_when_a_job_ends(
    cluster: LabCluster, epilog: Mlsub
) -> None:
    mlsub = epilog
    release = mlsub.workdir / "release-first-job"
    running, waiting = fill_and_queue(cluster, mlsub, release)
    decision = str(waiting["decision_id"])
    queue = mlsub.json("queue")
    assert [w["decision_id"] for w in queue["waiting"]] == [waiting["decision_id"]]
    assert queue["waiting"][0]["position"] == 1 and queue["waiting"][0]["reason"]
    release.touch()  # the first job ends

    # no mlsub command from here on: the first job's end triggers the start
    shown = poll(
        "the epilog's re-plan to start the queued job",
        lambda: (s := mlsub.json("show", decision))["state"] != "queued" and s,
        90,
    )
    shown = poll(
        "the start to be recorded",
        lambda: (s := mlsub.json("show", decision))["state"] in ("submitted", "running") and s,
        30,
    )
    states = [t["state"] for t in shown["transitions"]]
    assert states[:4] == ["submitting", "queued", "starting", "submitted"], states
    job = shown["slurm_job_id"]
    cluster.jobs.append(int(job))
    assert ran_on(cluster, job) == decision_nodes(shown)  # on the nodes its decision names
    first_end = poll(
        "the first job's end in accounting",
        lambda: sacct_rows(cluster, running[0]["slurm_job_id"])[0][1],
        60,
    )
    start = min(s for s, _, _ in sacct_rows(cluster, job) if s)
    assert (start - first_end).total_seconds() <= 15, (first_end, start)
    log = (mlsub.workdir / "epilog.log").read_text()
    assert "mlsub replan exit 0" in log, log


def test_the_queue_gives_an_estimated_start_and_the_plan_vs_the_bound(
    cluster: LabCluster, tmp_path: Path
) -> None:
    """Behind four running jobs, the queued fifth has an estimated start no earlier than
    now, and the queue's plan is at least its lower bound (issue 28 item 6), in ``mlsub
    queue`` (JSON and the line under the table) and ``mlsub explain``."""
    mlsub = Mlsub(tmp_path, slot_seconds=10, cluster_name="lab-queue-estimate")
    _, waiting = fill_and_queue(cluster, mlsub)
    queue = mlsub.json("queue")
    now = datetime.fromisoformat(queue["now"])
    (row,) = [w for w in queue["waiting"] if w["decision_id"] == waiting["decision_id"]]
    estimate = row["estimate"]
    assert estimate["source"] in ("plan", "list") and estimate["reason"] == "", row
    start = datetime.fromisoformat(estimate["start"])
    assert start >= now and row["estimated_start"] == estimate["start"], (now, row)
    assert datetime.fromisoformat(estimate["end"]) > start
    bound = queue["plan_vs_bound"]
    assert bound["ratio"] is not None and bound["ratio"] >= 1.0, bound
    assert bound["estimated"] == bound["waiting"] >= 1 and 0.0 <= bound["busy"] <= 1.0
    text = mlsub.run("queue").stdout
    assert f"plan {bound['ratio']:.2f} × lower bound for" in text, text
    explained = mlsub.json("explain", str(waiting["decision_id"]))
    assert explained["queue"]["estimate"]["source"] == estimate["source"], explained["queue"]
    assert explained["queue"]["plan_vs_bound"]["ratio"] >= 1.0


def test_two_concurrent_replans_start_the_job_once(cluster: LabCluster, tmp_path: Path) -> None:
    mlsub = Mlsub(tmp_path, slot_seconds=10, cluster_name="lab-queue2")
    running, waiting = fill_and_queue(cluster, mlsub)
    cluster.slurm.run(["scancel", running[0]["slurm_job_id"]])  # no epilog file: no trigger
    poll(
        "the first job to end",
        lambda: not cluster.slurm.run(["squeue", "-h", "-j", running[0]["slurm_job_id"]]).strip(),
        60,
    )
    procs = [mlsub.spawn("replan", "--json") for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    import json

    started = [s for out, _ in outs for s in json.loads(out)["started"]]
    assert [s["decision_id"] for s in started] == [waiting["decision_id"]], outs
    shown = mlsub.json("show", str(waiting["decision_id"]))
    cluster.jobs.append(int(shown["slurm_job_id"]))
    states = [t["state"] for t in shown["transitions"]]
    assert states.count("starting") == 1 and states.count("submitted") == 1, states
    tag_jobs = cluster.slurm.run(["squeue", "-h", "-o", "%i|%T|%k", "-t", "running,pending"])
    mine = [ln for ln in tag_jobs.splitlines() if f"decision={waiting['decision_id']}:" in ln]
    assert len({ln.split("|")[0].split("+")[0] for ln in mine}) == 1, mine  # one job
    assert ran_on(cluster, shown["slurm_job_id"]) == decision_nodes(shown)


def test_a_replan_killed_before_acting_is_finished_by_reconcile(
    cluster: LabCluster, tmp_path: Path
) -> None:
    import shutil

    mlsub = Mlsub(tmp_path, slot_seconds=10, cluster_name="lab-queue3")
    running, waiting = fill_and_queue(cluster, mlsub)
    cluster.slurm.run(["scancel", running[0]["slurm_job_id"]])
    poll(
        "the first job to end",
        lambda: not cluster.slurm.run(["squeue", "-h", "-j", running[0]["slurm_job_id"]]).strip(),
        60,
    )
    marker = tmp_path / "marker"
    env = wrapper(tmp_path / "bin", BEFORE, marker)  # an sbatch that blocks
    real = shutil.which("scontrol")
    (tmp_path / "bin" / "scontrol").write_text(BLOCKING_SCONTROL.format(marker=marker, real=real))
    (tmp_path / "bin" / "scontrol").chmod(0o755)
    crashed = Mlsub(tmp_path, slot_seconds=10, cluster_name="lab-queue3", extra_env=env)
    proc = crashed.spawn("replan")
    try:
        poll("the re-plan to reach Slurm", lambda: marker.exists() or proc.poll() is not None, 60)
        assert proc.poll() is None, proc.communicate()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    decision = str(waiting["decision_id"])
    shown = mlsub.json("show", decision)
    assert shown["state"] == "starting"  # recorded before acting; its held job still held
    held = cluster.slurm.run(["squeue", "-h", "-j", waiting["slurm_job_id"], "-o", "%r"])
    assert set(held.split()) == {"JobHeldUser"}

    report = mlsub.json("reconcile")
    assert any("finished the start" in n for n in report["notes"]), report
    shown = mlsub.json("show", decision)
    assert shown["state"] in ("submitted", "running"), shown
    cluster.jobs.append(int(shown["slurm_job_id"]))
    assert ran_on(cluster, shown["slurm_job_id"]) == decision_nodes(shown)
