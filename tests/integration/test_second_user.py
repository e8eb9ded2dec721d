"""A second Unix user on the same machine and cluster (issue 17): a Slurm job of theirs
that copies one of the first user's decision tags (tags are public in squeue) is not
adopted by the first user's reconcile.

The second user is a real account (created with ``useradd`` if missing); their job is
submitted as them with ``runuser … sbatch``, so Slurm itself names its owner. (Their
running mlsub itself is not tested here: the venv's interpreter may live where only root
can read it. The rules that keep them from becoming admin or reading another's store are
tested at unit level: tests/unit/test_config.py, tests/storage/test_migrations.py.)
"""

from __future__ import annotations

import os
import pwd
import subprocess
from pathlib import Path

import pytest

from slurm_mlsched.services.live_queue import tag_of
from slurm_mlsched.storage import open_store
from tests.conftest import require_or_skip
from tests.integration.conftest import LabCluster
from tests.integration.mlsub_cli import Mlsub
from tests.integration.test_crash_reconcile import killed_before_sbatch

pytestmark = pytest.mark.integration

SECOND = "mlsub-it2"


@pytest.fixture(scope="module")
def second_user() -> str:
    if os.geteuid() != 0:
        require_or_skip("not root: a second Unix user cannot be created")
    try:
        pwd.getpwnam(SECOND)
    except KeyError:
        subprocess.run(
            ["useradd", "--create-home", "--shell", "/bin/sh", SECOND],
            check=True,
            capture_output=True,
            timeout=60,
        )
    return SECOND


def test_a_job_that_copies_a_tag_is_not_adopted(
    cluster: LabCluster, tmp_path: Path, second_user: str
) -> None:
    crashed = killed_before_sbatch(tmp_path)
    store = open_store(f"sqlite:///{tmp_path / 'decisions.db'}", grace_s=0)
    try:
        (row,) = store.history()
    finally:
        store.close()
    assert row.state == "submitting" and row.job_owner == "root"
    tag = str(tag_of(crashed.cluster_name, row))

    forged = subprocess.run(
        ["runuser", "-u", second_user, "--", "sbatch", "--parsable", f"--comment={tag}",
         "-o", "/dev/null", "-t", "5", "--chdir=/tmp", "--wrap", "sleep 120"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    job = int(forged.stdout.strip().split(";")[0])
    cluster.jobs.append(job)
    comment = cluster.slurm.run(["squeue", "-h", "-j", str(job), "-o", "%k %u"]).split()
    assert comment == [tag, second_user]  # the tag is really on their job

    (update,) = Mlsub(tmp_path).json("reconcile")["decisions"]
    assert update["slurm_job_id"] is None, update  # not adopted
    assert update["after"] == "submit-failed"  # its own process is gone: it never ran


CLUSTER = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"
JOB = ("--workers", "2", "--ps", "1", "--gpus-per-worker", "1", "--model", "vgg-16",
       "--epochs", "1", "--batches-per-epoch", "100")  # fmt: skip


def _sacctmgr(*args: str, check: bool = True) -> None:
    subprocess.run(["sacctmgr", "-i", *args], check=check, capture_output=True, timeout=60)


def test_slurm_operators_are_admins_only_when_the_site_says_so(
    cluster: LabCluster, tmp_path: Path, second_user: str
) -> None:
    """``slurm_admin_level``: the real slurmdbd's AdminLevel of the second user decides
    whether they see the first user's decisions, never their own settings."""
    from slurm_mlsched.api.store_access import slurm_admin

    first = Mlsub(tmp_path)
    first.json("plan", "--cluster", str(CLUSTER), "--reserve", *JOB)
    as_second = Mlsub(tmp_path, extra_env={"MLSUB_AS_USER": second_user})
    assert as_second.json("history") == []  # an ordinary user sees only their own
    # an association for the user (already there from an earlier run: "nothing new added")
    _sacctmgr("add", "user", f"name={second_user}", "account=root", check=False)
    _sacctmgr("modify", "user", f"name={second_user}", "set", "adminlevel=Operator")
    try:
        assert slurm_admin(second_user, "operator")
        assert not slurm_admin(second_user, "administrator")
        assert as_second.json("history") == []  # the site did not ask for Slurm's levels
        site = Mlsub(
            tmp_path,
            extra_env={"MLSUB_AS_USER": second_user, "MLSUB_SLURM_ADMIN_LEVEL": "operator"},
        )
        (row,) = site.json("history")
        assert row["user"] == "root"
        strict = Mlsub(
            tmp_path,
            extra_env={"MLSUB_AS_USER": second_user, "MLSUB_SLURM_ADMIN_LEVEL": "administrator"},
        )
        assert strict.json("history") == []
    finally:
        _sacctmgr("modify", "user", f"name={second_user}", "set", "adminlevel=None")
    assert not slurm_admin(second_user, "operator")


def test_a_second_user_cannot_open_the_first_users_sqlite_store(
    tmp_path: Path, second_user: str
) -> None:
    """The default store is the user's own file (0600 in a 0700 directory): even in a
    directory everybody may enter, the second user can neither read nor write it."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    tmp_path.chmod(0o755)
    db = shared / "state" / "decisions.db"
    open_store(f"sqlite:///{db}", grace_s=0).close()
    assert db.stat().st_mode & 0o777 == 0o600 and db.parent.stat().st_mode & 0o777 == 0o700
    for mode in ("rb", "ab"):
        tried = subprocess.run(
            ["runuser", "-u", second_user, "--", "python3", "-c", f"open({str(db)!r}, {mode!r})"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert tried.returncode != 0 and "Permission denied" in tried.stderr, tried.stderr


def test_root_resubmits_a_queued_job_as_its_owner_with_the_kept_environment(
    cluster: LabCluster, tmp_path: Path, second_user: str
) -> None:
    """Issue 19: the epilog's re-plan runs as root and submits a queued job whose layout
    changed again: as its owner (setpriv), from the owner's directory, with the
    environment kept at submission (sbatch --export-file), not root's."""
    from slurm_mlsched.sbatch.launch import Launch
    from slurm_mlsched.sbatch.render import ScriptSpec
    from slurm_mlsched.services.replan import SlurmStarter

    who = pwd.getpwnam(second_user)
    home = Path(who.pw_dir)
    env_file = home / "kept.env"
    env_file.write_bytes(
        b"MLSUB_KEPT=from-submission\0PATH=/usr/bin:/bin\0HOME=" + bytes(home) + b"\0"
    )
    os.chown(env_file, who.pw_uid, who.pw_gid)
    env_file.chmod(0o600)
    out = home / "resubmitted.out"
    script = (
        "#!/bin/bash\n#SBATCH -t 1\n#SBATCH -o " + str(out) + "\n"
        'echo "user=$(id -un) pwd=$PWD kept=$MLSUB_KEPT root_home=${HOME}"\n'
    )
    launch = Launch(ScriptSpec(("true",), "resubmitted"), str(home), str(env_file))
    job = SlurmStarter(cluster.slurm).submit(script, launch, second_user)
    cluster.jobs.append(int(job))
    owner = cluster.slurm.run(["squeue", "-h", "-t", "all", "-j", job, "-o", "%u"]).strip()
    assert owner in (second_user, "")  # "" once it left squeue: checked below
    cluster.wait_finished(int(job))
    text = out.read_text().strip()
    assert text == f"user={second_user} pwd={home} kept=from-submission root_home={home}", text
