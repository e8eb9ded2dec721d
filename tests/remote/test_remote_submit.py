"""``mlsub --remote`` end to end: the real ``mlsub`` command, a real OpenSSH server on
127.0.0.1 (tests/remote/sshd.py) in front of the real local Slurm cluster, and a decision
store of the test's own on "this side".

The "laptop" is a HOME of the test's own whose ``~/.ssh/config`` names the server as
:data:`ALIAS` (its key, ``IdentitiesOnly``) and whose ``~/.ssh/known_hosts`` lists the
host key (or not, or a wrong one). The login node and the compute nodes are this machine,
so the staging directory (``MLSUB_REMOTE_DIR``, under the test's tmp_path) is read
directly to check what was uploaded.

A server killed mid-submit: the server's sessions get ``PATH`` with an ``sbatch`` wrapper
first (sshd's ``SetEnv``), which writes a marker and blocks, as
tests/integration/test_crash_reconcile.py does locally; the test kills the server and
everything under it, then reconciles through a new server.
"""

from __future__ import annotations

import json
import shlex
import shutil
import stat
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LabCluster, poll
from tests.integration.mlsub_cli import SMALL_TASKS, Mlsub, probe_script
from tests.integration.test_submit_live import ran_as_decided
from tests.remote.sshd import ALIAS, HOST, KeyPair, Keys, Sshd, running_sshd

pytestmark = pytest.mark.integration

#: Keys of the plan JSON that differ between two runs whatever the cluster does.
VOLATILE = ("decision_ms", "timings_ms", "planned_at", "script")

BEFORE = """#!/bin/sh
echo started > {marker}
exec sleep 600
"""
DURING = """#!/bin/sh
{sbatch} "$@" > {marker}.tmp && mv {marker}.tmp {marker}
exec sleep 600
"""


def laptop_home(home: Path, server: Sshd, known: KeyPair | None) -> Path:
    """A HOME whose ~/.ssh/config reaches ``server`` as ALIAS and whose known_hosts lists
    ``known`` for it (``None``: the host is unknown)."""
    ssh = home / ".ssh"
    ssh.mkdir(mode=0o700, parents=True, exist_ok=True)
    line = f"{server.known_hosts_name} {known.public_blob}\n" if known else ""
    (ssh / "known_hosts").write_text(line)
    (ssh / "config").write_text(
        f"Host {ALIAS}\n"
        f"  HostName {HOST}\n"
        f"  Port {server.port}\n"
        "  User root\n"
        f"  IdentityFile {server.keys.user.private}\n"
        "  IdentitiesOnly yes\n"
    )
    return home


def remote_mlsub(tmp_path: Path, server: Sshd, known: KeyPair | None = None) -> Mlsub:
    """``mlsub`` on the laptop: its own store, HOME and staging directory."""
    home = laptop_home(tmp_path / "home", server, known or server.keys.host)
    return Mlsub(
        tmp_path,
        extra_env={
            "HOME": str(home),
            "SSH_AUTH_SOCK": "",
            "MLSUB_REMOTE_DIR": str(tmp_path / "staging"),
        },
    )


def staging_dir(tmp_path: Path, out: dict[str, Any]) -> Path:
    """The decision's staging directory: ``<cluster>-<id>-<token>``."""
    token = out["tag"].rsplit(":", 1)[1]
    return tmp_path / "staging" / f"lab-it-{out['decision_id']}-{token}"


def comparable(plan: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in plan.items() if k not in VOLATILE}


def script_probe(tmp_path: Path, shape: str) -> Path:
    return probe_script(tmp_path / "probe.py", f"{SMALL_TASKS} {shape}")


# --- the same answers as the local path ----------------------------------------------------


def test_remote_plan_is_the_local_plan(cluster: LabCluster, sshd: Sshd, tmp_path: Path) -> None:
    script = script_probe(tmp_path, "--workers 2 --batches-per-epoch 10")
    remote = remote_mlsub(tmp_path, sshd)
    # over SSH the Slurm commands answer; here too (pyslurm reads the same: parity tests)
    local = Mlsub(tmp_path, extra_env={"MLSUB_SLURM_SOURCE": "cli"})
    now = datetime.now(UTC).replace(microsecond=0).isoformat()
    for fixed in (remote, local):
        fixed.extra_env["MLSUB_FIXED_NOW"] = now  # the same clock for both
    for _attempt in range(5):  # the cluster is shared: compare in a window where it held still
        before = local.json("plan", str(script))
        over_ssh = remote.json("plan", "--remote", ALIAS, str(script))
        after = local.json("plan", str(script))
        if comparable(before) == comparable(after):
            break
    assert comparable(over_ssh) == comparable(before)
    program = f"{tmp_path}/staging/lab-it-dry-run/probe.py"
    assert program in over_ssh["script"] and str(script) not in over_ssh["script"]
    assert over_ssh["script"].replace(program, str(script)) == before["script"]
    assert remote.json("history") == []
    assert not (tmp_path / "staging").exists()  # a dry run uploads nothing


def test_remote_cluster_view_is_the_local_one(
    cluster: LabCluster, sshd: Sshd, tmp_path: Path
) -> None:
    remote = remote_mlsub(tmp_path, sshd)
    config = tmp_path / "config.toml"
    config.write_text(f'remote = "{ALIAS}"\n')  # from the config file, this time
    remote.extra_env["MLSUB_CONFIG"] = str(config)
    here_via_commands = Mlsub(tmp_path, extra_env={"MLSUB_SLURM_SOURCE": "cli"})
    over_ssh, here = remote.json("cluster"), here_via_commands.json("cluster")
    assert over_ssh["source"] == here["source"]
    assert over_ssh["source_reason"] == "over SSH: the Slurm commands on the login node"
    assert [(n["name"], n["total"]) for n in over_ssh["nodes"]] == [
        (n["name"], n["total"]) for n in here["nodes"]
    ]


@pytest.mark.parametrize(
    ("shape", "mode"),
    [
        ("--workers 2 --batches-per-epoch 100", "colocated"),
        ("--workers 2 --gpus-per-worker 4 --batches-per-epoch 10000", "distributed"),
    ],
)
def test_remote_submission_runs_where_its_decision_says(
    cluster: LabCluster, sshd: Sshd, tmp_path: Path, shape: str, mode: str
) -> None:
    script = script_probe(tmp_path, shape)
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    mlsub = remote_mlsub(tmp_path, sshd)
    # mlsub --remote ALIAS SCRIPT …: the shorthand with the option in front
    out = mlsub.json("--remote", ALIAS, str(script), "--interpreter", sys.executable, "--",
                     str(tasks))  # fmt: skip
    cluster.jobs.append(int(out["slurm_job_id"]))
    assert out["mode"] == mode and out["state"] == "submitted", out["placement"]
    staged = staging_dir(tmp_path, out)
    program = staged / "probe.py"
    assert shlex.join([sys.executable, str(program), str(tasks)]) in out["script"]
    assert str(script) not in out["script"]  # the laptop's path is not the cluster's

    states = cluster.wait_finished(int(out["slurm_job_id"]))
    assert set(states) == {"COMPLETED"}, sorted(staged.iterdir())
    ran_as_decided(out, tasks)
    # what was uploaded: the training script and exactly the stored script; the job ran
    # in the staging directory (its output file is there)
    assert program.read_bytes() == script.read_bytes()
    assert (staged / "decision.sbatch").read_text() == out["script"]
    assert (staged / f"mlsub-{out['decision_id']}-{out['slurm_job_id']}.out").exists()
    assert stat.S_IMODE(staged.stat().st_mode) == 0o700

    shown = mlsub.json("show", str(out["decision_id"]))  # the store is local: no --remote
    assert shown["script"] == out["script"] and shown["slurm_job_id"] == out["slurm_job_id"]
    mlsub.extra_env["MLSUB_REMOTE"] = ALIAS  # reconcile over SSH, from the environment
    (row,) = mlsub.json("reconcile")["decisions"]
    assert (row["before"], row["after"]) == ("submitted", "completed")
    history = mlsub.json("history")
    assert [(h["decision_id"], h["state"], h["slurm_job_id"]) for h in history] == [
        (out["decision_id"], "completed", out["slurm_job_id"])
    ]
    assert history[0]["placement"] == out["placement"]
    steps = [t["state"] for t in mlsub.json("show", str(out["decision_id"]))["transitions"]]
    assert steps == ["submitting", "submitted", "running", "completed"]


# --- connection failures record nothing ---------------------------------------------------


@pytest.mark.parametrize(
    ("known", "code"),
    [(None, "host-key-unknown"), ("other_host", "host-key-changed")],
)
def test_an_untrusted_host_key_is_refused_before_anything_is_recorded(
    cluster: LabCluster, sshd: Sshd, ssh_keys: Keys, tmp_path: Path, known: str | None, code: str
) -> None:
    script = script_probe(tmp_path, "--workers 1 --batches-per-epoch 10")
    mlsub = remote_mlsub(tmp_path, sshd)
    laptop_home(tmp_path / "home", sshd, getattr(ssh_keys, known) if known else None)
    for argv in (["submit", str(script)], ["plan", str(script)], ["reconcile"], ["cluster"]):
        proc = mlsub.run(*argv, "--remote", ALIAS, check=False)
        assert proc.returncode == 8, (argv, proc.stderr)
        assert f"error[{code}]" in proc.stderr and proc.stdout == ""
    assert mlsub.json("history") == []
    assert not (tmp_path / "staging").exists()


def test_a_closed_port_is_exit_8_and_records_nothing(sshd: Sshd, tmp_path: Path) -> None:
    script = script_probe(tmp_path, "--workers 1 --batches-per-epoch 10")
    mlsub = remote_mlsub(tmp_path, sshd)
    proc = mlsub.run(str(script), "--remote", f"root@{HOST}:1", check=False)
    assert proc.returncode == 8 and "error[ssh-connect-failed]" in proc.stderr
    assert "connection refused" in proc.stderr
    assert mlsub.json("history") == []


# --- a server killed mid-submit -----------------------------------------------------------


def sbatch_wrapper(directory: Path, template: str, marker: Path) -> str:
    """An ``sbatch`` wrapper in ``directory``; returns sshd's ``SetEnv`` line that puts it
    first on the PATH of every session."""
    real = shutil.which("sbatch")
    assert real, "sbatch is not installed"
    directory.mkdir()
    wrapper = directory / "sbatch"
    wrapper.write_text(template.format(marker=shlex.quote(str(marker)), sbatch=shlex.quote(real)))
    wrapper.chmod(0o755)
    return f"SetEnv PATH={directory}:/usr/local/bin:/usr/bin:/bin\n"


def killed_while_submitting(
    tmp_path: Path, ssh_keys: Keys, template: str, tasks: Path, shape: str
) -> tuple[Mlsub, str]:
    """``mlsub --remote`` whose server dies while sbatch runs there; returns the mlsub and
    what it printed on stderr."""
    marker = tmp_path / "marker"
    script = script_probe(tmp_path, shape)
    with running_sshd(ssh_keys, sbatch_wrapper(tmp_path / "bin", template, marker)) as doomed:
        mlsub = remote_mlsub(tmp_path, doomed)
        proc = mlsub.spawn("--remote", ALIAS, str(script), "--interpreter", sys.executable,
                           "--", str(tasks))  # fmt: skip
        try:
            poll("the sbatch wrapper", lambda: marker.exists() or proc.poll() is not None, 90)
            assert proc.poll() is None, proc.communicate()
            doomed.kill_all()
            _, stderr = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    assert proc.returncode == 8, stderr
    return mlsub, stderr


def test_server_killed_during_sbatch_leaves_submitting_that_reconcile_finds(
    cluster: LabCluster, ssh_keys: Keys, tmp_path: Path
) -> None:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    shape = "--workers 2 --batches-per-epoch 10"
    mlsub, stderr = killed_while_submitting(tmp_path, ssh_keys, DURING, tasks, shape)
    slurm_id = (tmp_path / "marker").read_text().strip().split(";")[0]
    cluster.jobs.append(int(slurm_id))
    assert "error[ssh-connection-lost]" in stderr and "is unknown" in stderr
    (row,) = mlsub.json("history")
    assert row["state"] == "submitting" and row["slurm_job_id"] is None
    assert f"decision {row['decision_id']} stays 'submitting'" in stderr
    assert f"mlsub reconcile --remote {ALIAS}" in stderr

    with running_sshd(ssh_keys) as restarted:  # a new server (a new port): a new connection
        laptop_home(tmp_path / "home", restarted, ssh_keys.host)
        (found,) = mlsub.json("reconcile", "--remote", ALIAS)["decisions"]
        assert found["slurm_job_id"] == slurm_id and found["found_in"] == "squeue"
        assert found["after"] in ("submitted", "running", "completed"), found
        cluster.wait_finished(int(slurm_id))
        mlsub.json("reconcile", "--remote", ALIAS)
    shown = mlsub.json("show", str(row["decision_id"]))
    assert shown["state"] == "completed" and shown["slurm_job_id"] == slurm_id
    assert [t["state"] for t in shown["transitions"]] == [
        "submitting", "submitted", "running", "completed",
    ]  # fmt: skip
    assert len(list(tasks.glob("*.json"))) == 3  # the job really ran: 1 PS + 2 workers


def test_server_killed_before_sbatch_reached_slurm_becomes_submit_failed(
    cluster: LabCluster, ssh_keys: Keys, tmp_path: Path
) -> None:
    shape = "--workers 1 --batches-per-epoch 10"
    mlsub, stderr = killed_while_submitting(tmp_path, ssh_keys, BEFORE, tmp_path, shape)
    (row,) = mlsub.json("history")
    assert row["state"] == "submitting" and "stays 'submitting'" in stderr
    with running_sshd(ssh_keys) as restarted:
        laptop_home(tmp_path / "home", restarted, ssh_keys.host)
        young = mlsub.json("reconcile", "--remote", ALIAS)
        assert young["decisions"][0]["after"] == "submitting"  # sbatch may still be running
        report = mlsub.json("reconcile", "--remote", ALIAS, "--stale-after", "0")
    (fixed,) = report["decisions"]
    assert (fixed["before"], fixed["after"]) == ("submitting", "submit-failed")
    assert json.dumps(report)
