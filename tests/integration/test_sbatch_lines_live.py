"""The issue's example script, with its own #SBATCH lines, through ``mlsub`` on the real lab
cluster: its account, QOS, mail type and comment are in effect on every hetjob component
(``scontrol show job``) and in accounting (``sacct``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.conftest import LAB, LabCluster, poll
from tests.integration.mlsub_cli import SMALL_TASKS, Mlsub
from tests.task_probe import PROBE

pytestmark = pytest.mark.integration

SCRIPT = """#!/usr/bin/env python3
#SBATCH --account=ml-research
#SBATCH --qos=high
#SBATCH --mail-type=END
#SBATCH --comment='run 7'
#SBATCH --time=0:10:00 --signal=USR1@30
# mlsub: --workers 2 --ps 1 --epochs 1 --batches-per-epoch 10000
# mlsub: {small} --gpus-per-worker 4
import sys
exec({probe!r})
"""


def _fields(text: str) -> list[dict[str, str]]:
    """``scontrol -o show job`` lines -> one dict per component."""
    out = []
    for line in text.splitlines():
        pairs = [w.split("=", 1) for w in line.split() if "=" in w]
        out.append({k: v for k, v in pairs})
    return out


def test_the_scripts_account_qos_mail_type_and_comment_are_in_effect(
    cluster: LabCluster, tmp_path: Path
) -> None:
    subprocess.run(["bash", str(LAB / "lab-accounts.sh")], check=True, timeout=300)
    script = tmp_path / "t.py"
    script.write_text(SCRIPT.format(small=SMALL_TASKS, probe=PROBE))
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    mlsub = Mlsub(tmp_path)
    out = mlsub.json(str(script), "--interpreter", sys.executable, "--", str(tasks))
    job = out["slurm_job_id"]
    assert job, out
    cluster.jobs.append(int(job))
    assert "#SBATCH --account=ml-research" in out["script"]
    assert len({p["node"] for p in out["placement"]}) == 2  # two hetjob components

    def components() -> list[dict[str, str]] | None:
        shown = subprocess.run(
            ["scontrol", "-o", "show", "job", job], capture_output=True, text=True, timeout=30
        )
        rows = _fields(shown.stdout)
        return rows if len(rows) == 2 else None

    rows = poll("both components in scontrol", components)
    for row in rows:  # Slurm keeps these per component; sbatch propagated them
        assert (row["Account"], row["QOS"]) == ("ml-research", "high"), row
        assert row["TimeLimit"] == "00:10:00", row
    # the mail request belongs to the job's first component (the hetjob leader)
    leader = next(r for r in rows if r["JobId"] == r.get("HetJobId", r["JobId"]))
    assert leader.get("MailType") == "END", rows
    # every state: the job may have ended already (slurmctld keeps it MinJobAge = 300 s)
    comments = subprocess.run(
        ["squeue", "-h", "-t", "all", "-j", job, "-o", "%k"],
        capture_output=True, text=True, timeout=30,
    ).stdout.splitlines()  # fmt: skip
    assert comments and all(c == f"run 7;{out['tag']}" for c in comments), comments
    cluster.wait_finished(int(job))

    def accounted() -> list[list[str]] | None:
        sacct = subprocess.run(
            ["sacct", "-X", "-n", "-P", "-j", job, "-o", "Account,QOS,Comment"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        rows = [r.split("|") for r in sacct.stdout.splitlines() if r]
        # slurmdbd may list a component before the record that carries its comment
        return rows if len(rows) == 2 and all(r[2] for r in rows) else None

    for account, qos, comment in poll("the job in sacct with its comment", accounted, timeout=60):
        assert (account, qos) == ("ml-research", "high")
        assert comment == f"run 7;{out['tag']}"
