"""SshRunner against a real OpenSSH server on 127.0.0.1 (tests/remote/sshd.py): commands,
quoting, stdin, environment, timeouts, one connection for many commands, SFTP."""

from __future__ import annotations

import os
import pwd
import stat
import time
from pathlib import Path

import pytest

from slurm_mlsched.errors import InputError, RemoteCommandTimeout, RemoteError, SlurmError
from slurm_mlsched.remote.session import RemoteSession
from slurm_mlsched.remote.ssh import SshRunner, connect
from slurm_mlsched.slurm.runner import CommandRunner, LocalRunner, SlurmCommands
from tests.remote.sshd import ALIAS, Sshd
from tests.remote.test_ssh_pieces import WEIRD

pytestmark = pytest.mark.integration


def test_status_and_both_streams_like_the_local_runner(ssh: SshRunner) -> None:
    argv = ["sh", "-c", "echo out; echo err >&2; exit 3"]
    remote, local = ssh.run(argv, timeout=10), LocalRunner().run(argv, timeout=10)
    assert (remote.returncode, remote.stdout, remote.stderr) == (3, "out\n", "err\n")
    assert (remote.returncode, remote.stdout, remote.stderr, remote.argv) == (
        local.returncode,
        local.stdout,
        local.stderr,
        local.argv,
    )


def test_arguments_round_trip_verbatim_through_the_remote_shell(ssh: SshRunner) -> None:
    out = ssh.run(["printf", "%s\\n", *WEIRD], timeout=10)
    assert out.ok and out.stdout == "".join(f"{w}\n" for w in WEIRD)
    assert not Path("/tmp/mlsub-quoting-pwned").exists()


def test_stdin_is_passed_and_otherwise_empty(ssh: SshRunner) -> None:
    assert ssh.run(["cat"], timeout=10, input="from stdin\nü\n").stdout == "from stdin\nü\n"
    assert ssh.run(["cat"], timeout=10).stdout == ""  # EOF at once, no hang


def test_environment_reaches_the_command(sshd: Sshd) -> None:
    with sshd.connect(env={"SLURM_CONF": "/x y/slurm.conf"}) as runner:
        out = runner.run(["sh", "-c", 'printf %s "$SLURM_CONF"'], timeout=10)
    assert out.stdout == "/x y/slurm.conf"


def test_large_output_arrives_whole(ssh: SshRunner) -> None:
    out = ssh.run(["sh", "-c", "head -c 3000000 /dev/zero | tr '\\0' x; echo e >&2"], timeout=60)
    assert len(out.stdout) == 3_000_000 and set(out.stdout) == {"x"} and out.stderr == "e\n"


def test_one_connection_serves_every_command(ssh: SshRunner) -> None:
    seen = {ssh.run(["sh", "-c", "echo $SSH_CONNECTION"], timeout=10).stdout for _ in range(5)}
    assert len(seen) == 1  # same client port: the connection is reused
    ssh.upload(b"x", "/tmp/mlsub-one-connection")
    again = ssh.run(["sh", "-c", "echo $SSH_CONNECTION"], timeout=10).stdout
    assert {again} == seen
    os.unlink("/tmp/mlsub-one-connection")


def test_timeout_stops_waiting_and_says_it_was_remote(ssh: SshRunner) -> None:
    started = time.monotonic()
    with pytest.raises(RemoteCommandTimeout, match=r"did not finish within 0\.5 s on ") as info:
        ssh.run(["sleep", "30"], timeout=0.5)
    assert time.monotonic() - started < 5
    err = info.value
    assert isinstance(err, SlurmError) and err.exit_code == 6 and err.may_have_run
    assert "over SSH, not on this machine" in err.message
    assert err.context["command"] == "sleep 30"
    assert ssh.run(["echo", "still usable"], timeout=10).stdout == "still usable\n"


def test_funnel_treats_a_remote_ping_timeout_as_unreachable(ssh: SshRunner) -> None:
    class SlowPing:
        """Runs `sleep` for `scontrol ping`, so the ping times out on the remote side."""

        def run(self, argv: list[str], timeout: float, input: str | None = None) -> object:
            return ssh.run(["sleep", "10"], timeout)

    slurm = SlurmCommands(SlowPing(), ping_timeout=0.3)  # type: ignore[arg-type]
    with pytest.raises(SlurmError, match="not reachable"):
        slurm.ping()


def test_runner_satisfies_the_command_runner_interface(ssh: SshRunner) -> None:
    runner: CommandRunner = ssh
    assert SlurmCommands(runner).run_local(["echo", "via the funnel"]) == "via the funnel\n"
    with pytest.raises(SlurmError, match="failed with exit status 1"):
        SlurmCommands(runner).run_local(["false"])


@pytest.mark.parametrize("argv", ["sinfo -N", [], ["sinfo", 3]])
def test_takes_only_argument_lists(ssh: SshRunner, argv: object) -> None:
    with pytest.raises(TypeError):
        ssh.run(argv, timeout=5)  # type: ignore[arg-type]


def test_ssh_config_alias_gives_host_port_user_key_and_known_hosts(sshd: Sshd) -> None:
    runner = connect(ALIAS, ssh_config=sshd.ssh_config, allow_agent=False, timeout=10)
    with runner:
        assert (runner.target.hostname, runner.target.port) == ("127.0.0.1", sshd.port)
        assert runner.run(["id", "-un"], timeout=10).stdout == "root\n"


# --- SFTP -------------------------------------------------------------------------------


def test_upload_bytes_and_files_with_their_mode(ssh: SshRunner, tmp_path: Path) -> None:
    local = tmp_path / "train.py"
    local.write_bytes(b"print('hi')\n\x00\xff binary too\n")
    dest = tmp_path / "remote"
    dest.mkdir()
    script = ssh.upload(local, str(dest / "train.py"), mode=0o600)
    job = ssh.upload(b"#!/bin/bash\necho job\n", str(dest / "job.sh"), mode=0o755)
    assert (script, job) == (str(dest / "train.py"), str(dest / "job.sh"))
    assert Path(script).read_bytes() == local.read_bytes()
    assert stat.S_IMODE(os.stat(script).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(job).st_mode) == 0o755
    ssh.upload(b"v2\n", job, mode=0o644)  # replaces the file
    assert Path(job).read_bytes() == b"v2\n" and stat.S_IMODE(os.stat(job).st_mode) == 0o644
    assert sorted(p.name for p in dest.iterdir()) == ["job.sh", "train.py"]  # no leftovers


def test_mkdir_p_and_relative_paths_start_at_the_remote_home(
    ssh: SshRunner, tmp_path: Path
) -> None:
    home = pwd.getpwuid(os.geteuid()).pw_dir  # the server is this machine, the user root
    assert ssh.home() == home
    deep = ssh.mkdir_p(str(tmp_path / "a" / "b" / "c"), mode=0o700)
    assert Path(deep).is_dir() and stat.S_IMODE(os.stat(deep).st_mode) == 0o700
    assert ssh.mkdir_p(deep) == deep  # existing: fine
    assert ssh.absolute("x/y") == f"{home}/x/y"


def test_upload_into_a_missing_directory_is_a_clear_error(ssh: SshRunner, tmp_path: Path) -> None:
    with pytest.raises(RemoteError, match=r"could not write .*/nope/f on root@") as info:
        ssh.upload(b"x", str(tmp_path / "nope" / "f"))
    assert info.value.exit_code == 8
    file_in_the_way = tmp_path / "file"
    file_in_the_way.write_text("")
    with pytest.raises(RemoteError, match="could not create"):
        ssh.mkdir_p(str(file_in_the_way / "sub"))


def test_session_stages_a_decision_directory(sshd: Sshd, tmp_path: Path) -> None:
    train = tmp_path / "train.py"
    train.write_text("print('train')\n")
    session = RemoteSession(sshd.connect(), staging_root=str(tmp_path / "staging"))
    with session:
        staged = session.stage(42, {"train.py": train, "job.sbatch": b"#!/bin/bash\n"})
        assert staged.directory == str(tmp_path / "staging" / "42")
        assert staged.paths == {
            "train.py": f"{staged.directory}/train.py",
            "job.sbatch": f"{staged.directory}/job.sbatch",
        }
        assert Path(staged.paths["train.py"]).read_text() == "print('train')\n"
        assert stat.S_IMODE(os.stat(staged.directory).st_mode) == 0o700
        listed = session.runner.run(["ls", staged.directory], timeout=10).stdout.split()
        assert listed == ["job.sbatch", "train.py"]
        with pytest.raises(InputError, match="cannot name a remote file"):
            session.stage("../escape", {"f": b""})


def test_command_killed_by_a_signal_is_a_result_not_a_lost_connection(ssh: SshRunner) -> None:
    out = ssh.run(["sh", "-c", "echo before; kill -KILL $$"], timeout=10)
    assert out.returncode == -1 and out.stdout == "before\n"
    assert "without an exit status" in out.stderr
    assert ssh.run(["echo", "still here"], timeout=10).stdout == "still here\n"


@pytest.mark.parametrize("problem", ["group-writable", "a symlink"])
def test_a_staging_directory_others_could_write_is_refused(
    sshd: Sshd, tmp_path: Path, problem: str
) -> None:
    """Issue 17: a remote staging directory was accepted without checking its owner and
    mode. Now, as OpenSSH does for ~/.ssh, one writable by others (or a link to elsewhere)
    is refused before anything is uploaded."""
    from slurm_mlsched.errors import RemoteStagingError

    root = tmp_path / "staging"
    if problem == "group-writable":
        root.mkdir()
        root.chmod(0o775)
    else:
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir(mode=0o700)
        root.symlink_to(elsewhere)
    session = RemoteSession(sshd.connect(), staging_root=str(root))
    with session, pytest.raises(RemoteStagingError) as info:
        session.stage(7, {"job.sbatch": b"#!/bin/bash\n"})
    assert info.value.exit_code == 8 and "nothing was uploaded" in info.value.message
    assert not list(tmp_path.rglob("job.sbatch"))
