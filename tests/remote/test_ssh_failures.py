"""Every way the SSH connection fails, against a real OpenSSH server: unknown and changed
host keys are refused (and the commands the errors suggest really fix them), wrong keys,
closed ports, names that do not resolve, non-SSH servers, and a server killed mid-command."""

from __future__ import annotations

import os
import shlex
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer

from slurm_mlsched.cli.errors import handle_errors
from slurm_mlsched.errors import (
    HostKeyChangedError,
    HostKeyError,
    RemoteAuthError,
    RemoteConnectError,
    RemoteConnectionLost,
    UnknownHostKeyError,
)
from slurm_mlsched.remote.ssh import connect
from tests.integration.mlsub_cli import mlsub_executable
from tests.remote.sshd import HOST, Sshd

pytestmark = pytest.mark.integration


def host_fingerprint(sshd: Sshd) -> str:
    return host_fingerprint_of(f"{sshd.keys.host.private}.pub")


def host_fingerprint_of(public_key_file: str) -> str:
    out = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", public_key_file],
        capture_output=True, text=True, check=True, timeout=10,
    )  # fmt: skip
    return out.stdout.split()[1]


def suggested_commands(hint: str) -> list[str]:
    """The indented command lines of a hint (what a user would paste)."""
    return [line.strip() for line in hint.splitlines() if line.startswith("  ")]


def run_shell(command: str) -> subprocess.CompletedProcess[str]:
    """As a user pastes it, with this venv's ``mlsub`` first on PATH."""
    path = f"{Path(mlsub_executable()).parent}:{os.environ.get('PATH', '')}"
    return subprocess.run(
        ["sh", "-c", command], check=False, capture_output=True, text=True, timeout=60,
        env={**os.environ, "PATH": path},
    )  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


# --- host keys --------------------------------------------------------------------------


def test_unknown_host_is_refused_with_its_fingerprint(sshd: Sshd) -> None:
    empty = sshd.write_known_hosts("known_hosts_empty", None)
    with pytest.raises(UnknownHostKeyError) as info:
        sshd.connect(known_hosts=[empty])
    err = info.value
    assert err.exit_code == 8 and err.code == "host-key-unknown"
    assert f"[{HOST}]:{sshd.port} is not known" in err.message
    assert f"ssh-ed25519 {host_fingerprint(sshd)}" in err.message
    assert "refuses unknown hosts" in err.message
    assert suggested_commands(err.hint) == [
        f"mlsub remote trust {HOST}:{sshd.port} --fingerprint {host_fingerprint(sshd)} "
        f"--known-hosts {shlex.quote(str(empty))}"
    ]
    assert empty.read_text() == ""  # nothing was written for the user


def test_the_suggested_command_trusts_the_host(sshd: Sshd) -> None:
    known = sshd.write_known_hosts("known_hosts_to_fill", None)
    with pytest.raises(UnknownHostKeyError) as info:
        sshd.connect(known_hosts=[known])
    for command in suggested_commands(info.value.hint):
        done = run_shell(command)
        assert done.returncode == 0, done.stderr
        assert f"trusted [{HOST}]:{sshd.port} ssh-ed25519 {host_fingerprint(sshd)}" in done.stdout
    with sshd.connect(known_hosts=[known]) as runner:
        assert runner.run(["echo", "trusted"], timeout=10).stdout == "trusted\n"
    assert known.stat().st_mode & 0o777 == 0o644  # an existing file keeps its mode
    again = run_shell(suggested_commands(info.value.hint)[0] + " --json")
    assert again.returncode == 0 and '"added": false' in again.stdout
    assert len(known.read_text().splitlines()) == 1  # trusted once, not twice


def test_trust_refuses_a_fingerprint_the_server_does_not_prove(sshd: Sshd, tmp_path: Path) -> None:
    """A fingerprint that is not the server's (a typo, or another machine answering):
    nothing is written, and the error lists what the server offered."""
    known = tmp_path / "kh"
    other = host_fingerprint_of(f"{sshd.keys.other_host.private}.pub")
    done = run_shell(
        shlex.join(["mlsub", "remote", "trust", f"{HOST}:{sshd.port}", "--fingerprint", other,
                    "--known-hosts", str(known)])
    )  # fmt: skip
    assert done.returncode == 8, done.stderr
    assert "host-key-mismatch" in done.stderr and host_fingerprint(sshd) in done.stderr
    assert not known.exists()


def test_trust_does_not_replace_a_different_key_of_the_same_type(sshd: Sshd) -> None:
    stale = sshd.write_known_hosts("known_hosts_stale_trust", sshd.keys.other_host)
    before = stale.read_text()
    done = run_shell(
        shlex.join(["mlsub", "remote", "trust", f"{HOST}:{sshd.port}", "--fingerprint",
                    host_fingerprint(sshd), "--known-hosts", str(stale)])
    )  # fmt: skip
    assert done.returncode == 8 and "already holds a different ssh-ed25519 key" in done.stderr
    assert "ssh-keygen -R" in done.stderr and stale.read_text() == before


def test_trust_does_not_write_through_a_symlink(sshd: Sshd, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    link = tmp_path / "known_hosts"
    link.symlink_to(victim)
    done = run_shell(
        shlex.join(["mlsub", "remote", "trust", f"{HOST}:{sshd.port}", "--fingerprint",
                    host_fingerprint(sshd), "--known-hosts", str(link)])
    )  # fmt: skip
    assert done.returncode == 3 and "symlink" in done.stderr, done.stderr
    assert victim.read_text() == "precious\n"


def test_trust_creates_a_private_known_hosts(sshd: Sshd, tmp_path: Path) -> None:
    fresh = tmp_path / "new-dir" / "known_hosts"
    done = run_shell(
        shlex.join(["mlsub", "remote", "trust", f"{HOST}:{sshd.port}", "--fingerprint",
                    host_fingerprint(sshd), "--known-hosts", str(fresh)])
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert fresh.stat().st_mode & 0o777 == 0o600 and fresh.parent.stat().st_mode & 0o777 == 0o700
    with sshd.connect(known_hosts=[fresh]) as runner:
        assert runner.run(["echo", "ok"], timeout=10).stdout == "ok\n"


def test_no_known_hosts_file_at_all_is_unknown_too(sshd: Sshd, tmp_path: Path) -> None:
    with pytest.raises(UnknownHostKeyError):
        sshd.connect(known_hosts=[tmp_path / "missing"])


def test_changed_host_key_is_refused_loudly(sshd: Sshd) -> None:
    stale = sshd.write_known_hosts("known_hosts_stale", sshd.keys.other_host)
    with pytest.raises(HostKeyChangedError) as info:
        sshd.connect(known_hosts=[stale])
    err = info.value
    assert err.exit_code == 8 and err.code == "host-key-changed"
    assert "HAS CHANGED" in err.message and "man-in-the-middle" in err.message
    assert host_fingerprint(sshd) in err.message  # what the server offered
    assert err.context["known_hosts"] == str(stale)
    assert err.context["offered_fingerprint"] == host_fingerprint(sshd)
    assert err.context["expected_fingerprint"] != host_fingerprint(sshd)
    # the suggested commands (after checking with the admins) really repair known_hosts
    for command in suggested_commands(err.hint):
        run_shell(command)
    with sshd.connect(known_hosts=[stale]) as runner:
        assert runner.run(["true"], timeout=10).ok


def test_hashed_known_hosts_entries_are_honoured(sshd: Sshd) -> None:
    hashed = sshd.write_known_hosts("known_hosts_hashed", sshd.keys.host)
    run_shell(f"ssh-keygen -H -f {hashed}")
    assert f"{HOST}" not in hashed.read_text()
    with sshd.connect(known_hosts=[hashed]) as runner:
        assert runner.run(["true"], timeout=10).ok
    stale = sshd.write_known_hosts("known_hosts_hashed_stale", sshd.keys.other_host)
    run_shell(f"ssh-keygen -H -f {stale}")
    with pytest.raises(HostKeyChangedError):
        sshd.connect(known_hosts=[stale])


def test_a_key_listed_in_any_file_is_accepted_as_ssh_does(sshd: Sshd) -> None:
    """Like OpenSSH: the host is fine if any line matches; CHANGED only when none does."""
    good = sshd.write_known_hosts("kh_good", sshd.keys.host)
    stale = sshd.write_known_hosts("kh_stale", sshd.keys.other_host)
    for files in ([good, stale], [stale, good]):
        with sshd.connect(known_hosts=files) as runner:
            assert runner.run(["true"], timeout=10).ok


def test_a_host_known_by_another_key_type_is_asked_for_that_type(sshd: Sshd) -> None:
    """The server has Ed25519 and ECDSA keys; known_hosts lists only the ECDSA one."""
    ecdsa_only = sshd.write_known_hosts("kh_ecdsa", sshd.keys.host_ecdsa)
    with sshd.connect(known_hosts=[ecdsa_only]) as runner:
        assert runner.run(["true"], timeout=10).ok
        assert runner.host_key.startswith("ecdsa-sha2-nistp256 SHA256:")


def test_real_world_known_hosts_lines_do_not_break_the_check(sshd: Sshd) -> None:
    path = sshd.base / "kh_busy"
    path.write_text(
        "# managed by puppet\n"
        f"@cert-authority *.example {sshd.keys.other_host.public_blob}\n"
        "a line that is not a key\n"
        f"*.other.example {sshd.keys.other_host.public_blob}\n"
        f"{sshd.known_hosts_name} {sshd.keys.host.public_blob}\n"
    )
    with sshd.connect(known_hosts=[path]) as runner:
        assert runner.run(["true"], timeout=10).ok


def test_a_revoked_host_key_is_refused(sshd: Sshd) -> None:
    path = sshd.base / "kh_revoked"
    path.write_text(
        f"{sshd.known_hosts_name} {sshd.keys.host.public_blob}\n"
        f"{sshd.known_hosts_name} {sshd.keys.host_ecdsa.public_blob}\n"
        f"@revoked * {sshd.keys.host.public_blob}\n"
        f"@revoked * {sshd.keys.host_ecdsa.public_blob}\n"
    )
    with pytest.raises(HostKeyError, match="marked @revoked") as info:
        sshd.connect(known_hosts=[path])
    assert info.value.code == "host-key-revoked"


# --- authentication ---------------------------------------------------------------------


def test_wrong_key_is_an_auth_error_that_shows_no_key_material(sshd: Sshd) -> None:
    wrong = sshd.keys.wrong_user.private
    with pytest.raises(RemoteAuthError) as info:
        sshd.connect(identity_files=[wrong])
    err = info.value
    assert err.exit_code == 8 and err.code == "ssh-auth-failed"
    assert f"authentication as root on root@{HOST}:{sshd.port} failed" in err.message
    assert str(wrong) in err.message and "SHA256:" in err.message
    assert "never with a password" in err.hint
    shown = str(err.as_dict())
    secret_lines = [ln for ln in wrong.read_text().splitlines() if "PRIVATE KEY" not in ln]
    assert secret_lines and not any(line in shown for line in secret_lines)


def test_an_encrypted_key_is_skipped_not_prompted_for(sshd: Sshd, tmp_path: Path) -> None:
    locked = tmp_path / "id_locked"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "s3cret-passphrase", "-f", str(locked)],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    with pytest.raises(RemoteAuthError) as info:
        sshd.connect(identity_files=[locked])
    assert f"ssh-add {locked}" in info.value.message
    assert "s3cret" not in str(info.value.as_dict())


def test_a_second_good_key_after_a_wrong_one_logs_in(sshd: Sshd) -> None:
    keys = [sshd.keys.wrong_user.private, sshd.keys.user.private]
    with sshd.connect(identity_files=keys) as runner:
        assert runner.run(["id", "-un"], timeout=10).stdout == "root\n"


# --- the network ------------------------------------------------------------------------


def test_connection_refused_on_a_closed_port(sshd: Sshd) -> None:
    port = free_port()
    started = time.monotonic()
    with pytest.raises(RemoteConnectError, match=f"connection refused by {HOST}:{port}") as info:
        connect(f"root@{HOST}:{port}", known_hosts=[sshd.known_hosts], allow_agent=False,
                look_for_keys=False, ssh_config=sshd.base / "none", timeout=5)  # fmt: skip
    assert time.monotonic() - started < 5
    assert info.value.exit_code == 8 and info.value.code == "ssh-connect-failed"


def test_a_name_that_does_not_resolve(sshd: Sshd) -> None:
    with pytest.raises(RemoteConnectError, match="cannot resolve the host name"):
        connect("nobody@no-such-host.invalid", ssh_config=sshd.base / "none",
                allow_agent=False, look_for_keys=False, timeout=5)  # fmt: skip


@pytest.fixture
def not_ssh() -> Iterator[int]:
    """A TCP server that answers every connection with an HTTP error and hangs up."""
    server = socket.create_server((HOST, 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(server.getsockname()[1])
    stop.set()
    thread.join(5)
    server.close()


def test_a_server_that_is_not_ssh(not_ssh: int, sshd: Sshd) -> None:
    with pytest.raises(RemoteConnectError, match=r"SSH handshake .* failed"):
        connect(f"root@{HOST}:{not_ssh}", ssh_config=sshd.base / "none",
                allow_agent=False, look_for_keys=False, timeout=3)  # fmt: skip


def test_remote_errors_exit_8_through_the_cli_handler(
    sshd: Sshd, capsys: pytest.CaptureFixture[str]
) -> None:
    port = free_port()
    with pytest.raises(typer.Exit) as info, handle_errors():
        connect(f"root@{HOST}:{port}", ssh_config=sshd.base / "none",
                allow_agent=False, look_for_keys=False, timeout=5)  # fmt: skip
    assert info.value.exit_code == 8
    assert "error[ssh-connect-failed]: cannot open an SSH connection" in capsys.readouterr().err


# --- a server that dies -----------------------------------------------------------------


def test_server_killed_mid_command_is_a_lost_connection_with_unknown_outcome(
    doomed_sshd: Sshd, tmp_path: Path
) -> None:
    marker = tmp_path / "started"
    runner = doomed_sshd.connect()

    def kill_once_started() -> None:
        deadline = time.monotonic() + 20
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        doomed_sshd.kill_all()

    killer = threading.Thread(target=kill_once_started)
    killer.start()
    started = time.monotonic()
    with runner, pytest.raises(RemoteConnectionLost) as info:
        runner.run(["sh", "-c", f"echo queued > {marker}; sleep 60"], timeout=30)
    killer.join(30)
    assert time.monotonic() - started < 15  # noticed at once, not at the 30 s timeout
    err = info.value
    assert err.may_have_run and err.context["may_have_run"] is True
    assert err.exit_code == 8 and err.code == "ssh-connection-lost"
    assert "is unknown" in err.message and "mlsub reconcile" in err.hint
    assert marker.read_text() == "queued\n"  # the side effect did happen: outcome unknown
    assert not [p for p in doomed_sshd.processes() if Path(f"/proc/{p}").exists()]


def test_after_the_server_died_nothing_more_runs_and_says_so(doomed_sshd: Sshd) -> None:
    runner = doomed_sshd.connect()
    assert runner.run(["true"], timeout=10).ok
    doomed_sshd.kill_all()
    with runner:
        with pytest.raises(RemoteConnectionLost) as info:
            runner.run(["sbatch", "job.sh"], timeout=10)
        assert not info.value.may_have_run and "had not been started" in info.value.message
        with pytest.raises(RemoteConnectionLost) as upload:
            runner.upload(b"x", "/tmp/mlsub-never-written")
        assert not upload.value.may_have_run
    assert not Path("/tmp/mlsub-never-written").exists()
