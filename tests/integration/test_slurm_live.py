"""Against the real local Slurm cluster: node state, reservations of running jobs, excluded
nodes, rendered heterogeneous jobs running exactly where the decision says, and a fast,
clear failure when Slurm is unreachable."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from slurm_mlsched.cli.app import app
from slurm_mlsched.errors import SlurmUnreachableError
from slurm_mlsched.model import Decision, Form, JobRequest, Mode, Resources, SlotPlan
from slurm_mlsched.sbatch import ScriptSpec, render_sbatch
from slurm_mlsched.services.cluster_state import build_cluster_state
from slurm_mlsched.slurm.nodes import NodeState, PyslurmSource, SlurmCliSource, select_source
from slurm_mlsched.slurm.runner import LocalRunner
from tests.conftest import make_job
from tests.integration.conftest import NODES, ROOT, LabCluster, poll
from tests.task_probe import PROBE, probe_results

pytestmark = pytest.mark.integration

CAPACITY = (8, 65536.0, 4)  # CPUs, MiB, GPUs per lab node (start-cluster.sh defaults)


def read(mode: str = "auto") -> NodeState:
    return SlurmCliSource(LocalRunner(), mode=mode).read(datetime.now(UTC))  # type: ignore[arg-type]


def test_node_state_source_reads_the_four_nodes(cluster: LabCluster) -> None:
    choice = select_source(LocalRunner())
    try:
        import pyslurm  # noqa: F401  (built for this Slurm by scripts/pyslurm.sh)

        assert isinstance(choice.source, PyslurmSource), choice.reason
    except ImportError:
        assert isinstance(choice.source, SlurmCliSource), choice.reason
    for mode in ("auto", "text"):
        state = read(mode)
        assert [n.name for n in state.usable()] == list(NODES), mode
        for node in state.nodes:
            assert (node.cpus, node.memory_mib, node.gpus) == CAPACITY, (mode, node)
            assert node.address == "127.0.0.1"


def test_running_job_reduces_free_capacity_until_its_end(
    cluster: LabCluster, tmp_path: Path
) -> None:
    job = cluster.sbatch(
        "-J", "mlsched-it-sleep", "-w", "node2", "-n", "2", "--mem=4G", "--gres=gpu:2",
        "-t", "10", "-o", "/dev/null", "--wrap", "sleep 300",
    )  # fmt: skip
    cluster.wait_running(job)
    for mode in ("auto", "text"):
        now = datetime.now(UTC)
        state = poll(f"job {job} in the {mode} source", lambda m=mode: _with_job(read(m), job))
        view = build_cluster_state(state, now=now, slot_seconds=60)
        ours = next(j for j in state.jobs if j.job_id == str(job))
        assert [(a.node, a.cpus, a.memory_mib, a.gpus) for a in ours.allocations] == [
            ("node2", 2, 4096.0, 2)
        ], mode
        # free now = capacity minus what every job on node2 holds, ours included (other
        # test runs on this machine may share the cluster)
        node2 = next(v for v in view.nodes if v.record.name == "node2")
        on_node2 = [a for j in state.jobs for a in j.allocations if a.node == "node2"]
        held = Resources(
            sum(a.gpus for a in on_node2),
            sum(a.cpus for a in on_node2),
            sum(a.memory_mib for a in on_node2),
        )
        assert node2.used_now == held and str(job) in node2.jobs, mode
        assert node2.free_now == Resources(4 - held.gpu, 8 - held.cpu, 65536 - held.mem), mode
        assert ours.end_time is not None
        assert now + timedelta(minutes=9) < ours.end_time <= now + timedelta(minutes=10, seconds=5)
        (res,) = [r for r in view.snapshot.reservations if r.job_id == str(job)]
        end_slot = math.ceil((ours.end_time - view.snapshot.epoch).total_seconds() / 60 - 1e-9)
        assert (res.machine, res.start_slot, res.end_slot) == ("node2", 0, end_slot), mode
        assert res.usage == Resources(2, 2, 4096)
    shown = CliRunner().invoke(
        app,
        ["cluster", "--json"],
        env={"MLSUB_FIXED_NOW": "", "MLSUB_DB_URL": f"sqlite:///{tmp_path / 'd.db'}"},
    )
    assert shown.exit_code == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert str(job) in next(n["jobs"] for n in data["nodes"] if n["name"] == "node2")


def _with_job(state: NodeState, job: int) -> NodeState | None:
    return state if str(job) in [j.job_id for j in state.jobs] else None


def _with_usable(state: NodeState, count: int) -> NodeState | None:
    return state if len(state.usable()) == count else None


def test_drained_node_is_excluded_and_reported(cluster: LabCluster) -> None:
    cluster.drain("node4", "mlsched test")
    state = poll("node4 drained", lambda: _with_usable(read(), 3))
    assert [(n.name, why) for n, why in state.excluded()] == [("node4", "drained (mlsched test)")]
    view = build_cluster_state(state, now=datetime.now(UTC))
    assert [m.name for m in view.snapshot.machines] == ["node1", "node2", "node3"]
    assert view.to_json()["excluded"] == [{"name": "node4", "reason": "drained (mlsched test)"}]


# --- rendered heterogeneous jobs ---------------------------------------------------------

COLOCATED_JOB = make_job(
    "it-colo", workers=3, worker=Resources(1, 2, 2048), ps=Resources(0, 1, 1024)
)
DISTRIBUTED_JOB = make_job(
    "it-dist", workers=3, worker=Resources(1, 1, 2048), ps=Resources(0, 1, 1024)
)


def _decision(job: JobRequest, workers: Any, ps: Any, mode: Mode) -> Decision:
    plan = SlotPlan(0, mode, workers=workers, ps=ps, length=1)
    return Decision(job.job_id, "hand", Form.NON_ELASTIC, 0, (plan,), 0, 0, 1.0)


@pytest.mark.parametrize(
    ("job", "decision", "name"),
    [
        (
            COLOCATED_JOB,
            _decision(COLOCATED_JOB, (("node1", 3),), (("node1", 1),), Mode.COLOCATED),
            'co-located "it" $(touch MARKER)',
        ),
        (
            DISTRIBUTED_JOB,
            _decision(
                DISTRIBUTED_JOB,
                (("node2", 2), ("node3", 1)),
                (("node2", 1), ("node3", 1)),
                Mode.DISTRIBUTED,
            ),
            "distributed it's `touch MARKER`",
        ),
    ],
    ids=["colocated", "distributed"],
)
def test_hetjob_tasks_run_exactly_where_the_decision_says(
    cluster: LabCluster, tmp_path: Path, job: JobRequest, decision: Decision, name: str
) -> None:
    out = tmp_path / "tasks"
    out.mkdir()
    args = ["--lr", "0.1", "it's $(touch MARKER)", "a\nb", "`touch MARKER`"]
    python = shutil.which("python3") or sys.executable
    script = render_sbatch(
        decision,
        job,
        {n: "127.0.0.1" for n in NODES},
        ScriptSpec(
            command=(python, "-c", PROBE, str(out), *args),
            job_name=name,
            decision_id="it-1",
            comment="mlsched:decision=1:0123456789ab",
            output=str(tmp_path / "slurm-%j.out"),
            time_limit_minutes=5,
        ),
    )
    path = tmp_path / "job.sh"
    path.write_text(script.text)
    slurm_id = cluster.sbatch(str(path))
    states = cluster.wait_finished(slurm_id)
    log = "\n".join(p.read_text() for p in tmp_path.glob("slurm-*.out"))
    assert states == ["COMPLETED"] * len(script.components), log
    tasks = probe_results(out)
    assert not list(tmp_path.rglob("MARKER")) and not (ROOT / "MARKER").exists()

    ran = Counter((t["node"], t["env"]["MLSCHED_ROLE"]) for t in tasks)
    decided = Counter({(r.node, str(r.role)): r.count for r in decision.placement})
    assert ran == decided, log
    for role, n in (("ps", decision.slots[0].total_ps), ("worker", job.max_workers)):
        ranks = sorted(
            int(t["env"]["MLSCHED_RANK"]) for t in tasks if t["env"]["MLSCHED_ROLE"] == role
        )
        assert ranks == list(range(n)), role
    for task in tasks:
        env = task["env"]
        placed = next(
            t for t in script.tasks if str(t.role) == env["MLSCHED_ROLE"]
            and t.rank == int(env["MLSCHED_RANK"])
        )  # fmt: skip
        assert task["node"] == placed.node
        assert task["argv"] == args
        assert json.loads(env["TF_CONFIG"])["task"]["index"] == placed.rank
        assert env["MLSCHED_DECISION_ID"] == "it-1"
    gpus = {
        (t["node"], t["env"]["MLSCHED_RANK"]): t["env"].get("CUDA_VISIBLE_DEVICES", "")
        for t in tasks
        if t["env"]["MLSCHED_ROLE"] == "worker"
    }
    assert all(len(v.split(",")) == 1 for v in gpus.values()), gpus  # one GPU per worker
    for node in {n for n, _ in gpus}:
        on_node = [v for (n, _), v in gpus.items() if n == node]
        assert len(set(on_node)) == len(on_node), gpus  # never shared on a node
    shown = cluster.slurm.run(["squeue", "-h", "-t", "all", "-j", str(slurm_id), "-o", "%j|%k"])
    assert {line for line in shown.splitlines() if line} == {
        f"{name}|mlsched:decision=1:0123456789ab"
    }


# --- Slurm unreachable ---------------------------------------------------------------------


def _bogus_conf(tmp_path: Path) -> Path:
    conf = tmp_path / "slurm.conf"
    conf.write_text(
        "ClusterName=bogus\nSlurmctldHost=localhost\nSlurmctldPort=6999\nAuthType=auth/munge\n"
        "NodeName=node1 CPUs=1\nPartitionName=debug Nodes=ALL Default=YES\n"
    )
    return conf


def test_unreachable_slurm_fails_fast_with_exit_code_6(lab_ready: None, tmp_path: Path) -> None:
    conf = _bogus_conf(tmp_path)
    started = time.monotonic()
    with pytest.raises(SlurmUnreachableError) as info:
        SlurmCliSource(LocalRunner(env={"SLURM_CONF": str(conf)})).read(datetime.now(UTC))
    assert time.monotonic() - started < 3
    assert info.value.exit_code == 6 and "is DOWN" in info.value.message

    started = time.monotonic()
    result = CliRunner().invoke(
        app,
        ["cluster"],
        env={"SLURM_CONF": str(conf), "MLSUB_DB_URL": f"sqlite:///{tmp_path / 'd.db'}"},
    )
    assert time.monotonic() - started < 3
    assert result.exit_code == 6 and result.stdout == ""
    assert "error[slurm-unreachable]" in result.stderr

    mlsub = ROOT / ".venv" / "bin" / "mlsub"
    if mlsub.exists():  # the installed command: Python's start-up included
        started = time.monotonic()
        done = subprocess.run(
            [str(mlsub), "cluster", "--json"],
            env={
                "PATH": "/usr/bin:/bin",
                "SLURM_CONF": str(conf),
                "MLSUB_DB_URL": f"sqlite:///{tmp_path / 'd.db'}",
            },
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 6 and done.stdout == "", done.stderr
        assert time.monotonic() - started < 10  # not the 9-18 s hang of sinfo


def test_a_stopped_slurmctld_is_a_clear_error_within_three_seconds(
    lab_ready: None, tmp_path: Path
) -> None:
    """slurmctld that accepts connections and never answers (SIGSTOP): exit 6 within 3 s
    (measured before: 9.1-9.4 s), and it answers again after SIGCONT."""
    import os
    import signal

    pids = [int(p) for p in subprocess.run(
        ["pgrep", "-x", "slurmctld"], capture_output=True, text=True, check=False
    ).stdout.split()]  # fmt: skip
    assert pids, "slurmctld is not running"
    env = {"MLSUB_DB_URL": f"sqlite:///{tmp_path / 'd.db'}", "MLSUB_FIXED_NOW": ""}
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        result = CliRunner().invoke(app, ["cluster", "--json"], env=env)
        took = time.monotonic() - started
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    assert result.exit_code == 6, result.stderr
    assert "error[slurm-unreachable]" in result.stderr
    assert took < 3, f"took {took:.1f} s"
    poll("slurmctld to answer again", lambda: CliRunner().invoke(
        app, ["cluster", "--json"], env=env).exit_code == 0, 30)  # fmt: skip
