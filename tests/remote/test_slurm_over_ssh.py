"""Slurm commands through the test sshd, in front of the real local Slurm cluster
(tests/integration/conftest.py): the same answers as the local runner, the same node
state, and a job staged over SFTP and submitted with sbatch over SSH that runs."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from slurm_mlsched.remote.session import RemoteSession
from slurm_mlsched.remote.ssh import SshRunner
from slurm_mlsched.slurm.nodes import SlurmCliSource
from slurm_mlsched.slurm.parse import parse_sbatch_parsable
from slurm_mlsched.slurm.runner import LocalRunner, SlurmCommands
from tests.integration.conftest import LabCluster
from tests.remote.sshd import Sshd

pytestmark = pytest.mark.integration

#: Commands whose output does not depend on the moment (static configuration, versions).
SAME_OUTPUT = [
    ["scontrol", "ping"],
    ["sinfo", "--version"],
    ["sinfo", "-h", "-N", "-o", "%N|%c|%m|%G"],
    ["scontrol", "show", "config"],
]


@pytest.fixture
def slurm_ssh(cluster: LabCluster, sshd: Sshd) -> Iterator[SshRunner]:
    """A runner on the test sshd with the same SLURM_CONF as this process (if any)."""
    env = {"SLURM_CONF": os.environ["SLURM_CONF"]} if os.environ.get("SLURM_CONF") else None
    with sshd.connect(env=env) as runner:
        yield runner


@pytest.mark.parametrize("argv", SAME_OUTPUT, ids=lambda a: " ".join(a[:2]))
def test_remote_commands_answer_like_local_ones(slurm_ssh: SshRunner, argv: list[str]) -> None:
    remote, local = slurm_ssh.run(argv, timeout=30), LocalRunner().run(argv, timeout=30)
    assert remote.returncode == local.returncode == 0
    if argv[:3] == ["scontrol", "show", "config"]:  # carries the time it was asked
        strip = [ln for ln in local.stdout.splitlines() if not ln.startswith("Configuration data")]
        assert [ln for ln in remote.stdout.splitlines() if ln in strip] == strip
    else:
        assert (remote.stdout, remote.stderr) == (local.stdout, local.stderr)


def test_funnel_and_node_state_over_ssh_equal_local(slurm_ssh: SshRunner) -> None:
    remote, local = SlurmCommands(slurm_ssh), SlurmCommands(LocalRunner())
    remote.ping()
    assert remote.version() == local.version()
    now = datetime.now(UTC)
    over_ssh = SlurmCliSource(remote).read(now)
    here = SlurmCliSource(local).read(now)
    assert over_ssh.source == here.source
    shape = [(n.name, n.cpus, n.memory_mib, n.gpus, n.address) for n in over_ssh.nodes]
    assert shape == [(n.name, n.cpus, n.memory_mib, n.gpus, n.address) for n in here.nodes]


def test_job_staged_over_sftp_and_submitted_over_ssh_runs(
    cluster: LabCluster, slurm_ssh: SshRunner, tmp_path: Path
) -> None:
    session = RemoteSession(slurm_ssh, staging_root=str(tmp_path / "staging"))
    script = b'#!/bin/bash\nprintf \'ran on %s with %s\\n\' "$SLURMD_NODENAME" "$1"\n'
    staged = session.stage("remote-it-1", {"job.sbatch": script})
    out = f"{staged.directory}/out.txt"
    argv = ["sbatch", "--parsable", "-J", "mlsub-remote-it", "-w", "node3", "-n", "1",
            "--mem=1G", "-t", "2", "-o", out, "--chdir", staged.directory,
            staged.paths["job.sbatch"], "it's an argument"]  # fmt: skip
    job = parse_sbatch_parsable(SlurmCommands(slurm_ssh).run(argv)).job_id
    cluster.jobs.append(job)  # cancelled after the test if it is still there
    assert cluster.wait_finished(job) == ["COMPLETED"]
    assert Path(out).read_text() == "ran on node3 with it's an argument\n"
    listed = SlurmCommands(slurm_ssh).run(["squeue", "-h", "-t", "all", "-j", str(job), "-o", "%T"])
    assert listed.split() == cluster.states(job)
