"""A throw-away OpenSSH server for the tests: Debian's openssh-server (installed with
apt-get if missing, without starting the system daemon), run on 127.0.0.1 at a free port
with host and user keys generated for the test session, stopped at the end.

The server runs as root (sshd needs it to log users in) and logs root in with the
generated user key only. Every process it started (the listener, the per-connection
``sshd`` processes and the commands they run) is found by walking ``/proc`` from the
listener's pid, so :meth:`Sshd.kill_all` ends exactly those and nothing else.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from slurm_mlsched.remote.ssh import SshRunner, connect
from tests.conftest import require_or_skip

SSHD = Path("/usr/sbin/sshd")
POLICY_RC_D = Path("/usr/sbin/policy-rc.d")
SYSTEM_PID_FILE = Path("/run/sshd.pid")
PRIVSEP_DIR = Path("/run/sshd")
HOST = "127.0.0.1"
ALIAS = "mlsub-test-login"  # the Host alias the generated ssh_config defines


@dataclass(frozen=True)
class KeyPair:
    private: Path
    public_line: str  # "ssh-ed25519 AAAA… comment"

    @property
    def public_blob(self) -> str:
        return " ".join(self.public_line.split()[:2])


def make_key(path: Path, comment: str, passphrase: str = "", kind: str = "ed25519") -> KeyPair:
    """A key pair made by ssh-keygen (mode 0600, as sshd and ssh insist)."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, "-N", passphrase, "-C", comment, "-f", str(path)],
        check=True, capture_output=True, timeout=30,
    )  # fmt: skip
    return KeyPair(path, Path(f"{path}.pub").read_text().strip())


@dataclass(frozen=True)
class Keys:
    """The keys of one test session: the server's two (Ed25519, ECDSA), a stranger's, the
    user's, and a wrong one."""

    host: KeyPair
    host_ecdsa: KeyPair
    other_host: KeyPair
    user: KeyPair
    wrong_user: KeyPair

    @classmethod
    def generate(cls, directory: Path) -> Keys:
        directory.mkdir(parents=True, exist_ok=True)
        return cls(
            host=make_key(directory / "ssh_host_ed25519_key", "mlsub-test-host"),
            host_ecdsa=make_key(directory / "ssh_host_ecdsa_key", "mlsub-test-host", kind="ecdsa"),
            other_host=make_key(directory / "other_host_key", "impostor-host"),
            user=make_key(directory / "id_user", "mlsub-test-user"),
            wrong_user=make_key(directory / "id_wrong", "not-authorized"),
        )


@dataclass
class Sshd:
    """One running sshd on 127.0.0.1 and the client-side files that reach it."""

    port: int
    process: subprocess.Popen[bytes]
    base: Path
    keys: Keys
    log: Path
    stopped: bool = field(default=False)

    @property
    def target(self) -> str:
        return f"root@{HOST}:{self.port}"

    @property
    def known_hosts_name(self) -> str:
        return f"[{HOST}]:{self.port}"

    @property
    def known_hosts(self) -> Path:
        """A known_hosts file that holds the server's real key."""
        return self.write_known_hosts("known_hosts", self.keys.host)

    @property
    def ssh_config(self) -> Path:
        """An ssh_config with a Host alias for this server (HostName, Port, User,
        IdentityFile, UserKnownHostsFile, IdentitiesOnly)."""
        path = self.base / "ssh_config"
        path.write_text(
            f"Host {ALIAS}\n"
            f"  HostName {HOST}\n"
            f"  Port {self.port}\n"
            "  User root\n"
            f"  IdentityFile {self.keys.user.private}\n"
            f"  UserKnownHostsFile {self.known_hosts}\n"
            "  IdentitiesOnly yes\n"
        )
        return path

    def write_known_hosts(self, name: str, key: KeyPair | None) -> Path:
        path = self.base / name
        path.write_text(f"{self.known_hosts_name} {key.public_blob}\n" if key else "")
        return path

    def connect(self, **kwargs: object) -> SshRunner:
        """An SshRunner logged in as root with the user key, isolated from the caller's
        ~/.ssh (no agent, no default keys, this server's known_hosts)."""
        options: dict[str, object] = {
            "known_hosts": [self.known_hosts],
            "ssh_config": self.base / "no-ssh-config",
            "identity_files": [self.keys.user.private],
            "allow_agent": False,
            "look_for_keys": False,
            "timeout": 10.0,
        }
        options.update(kwargs)
        return connect(self.target, **options)  # type: ignore[arg-type]

    def processes(self) -> list[int]:
        """The listener and every process below it (sessions and their commands)."""
        return [self.process.pid, *_descendants(self.process.pid)] if not self.stopped else []

    def kill_all(self) -> None:
        """SIGKILL the server and everything it started, as if the host had crashed."""
        for _ in range(20):  # children may fork while we kill: repeat until none is left
            pids = [p for p in self.processes() if _alive(p)]
            if not pids:
                break
            for pid in pids:
                _kill(pid, signal.SIGKILL)
            self.process.poll()
            time.sleep(0.05)
        self.process.wait(timeout=10)
        self.stopped = True

    def stop(self) -> None:
        if self.stopped:
            return
        sessions = _descendants(self.process.pid)
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        for pid in sessions:
            if _alive(pid):
                _kill(pid, signal.SIGKILL)
        self.stopped = True


def require_ssh_keygen() -> None:
    """Install openssh-client if ssh-keygen is missing (root); else skip (fail under CI)."""
    if shutil.which("ssh-keygen") is None:
        problem = _apt_install("openssh-client") if os.geteuid() == 0 else "not root"
        if shutil.which("ssh-keygen") is None:
            require_or_skip(f"ssh-keygen (openssh-client) is missing: {problem}")


def sshd_problem() -> str | None:
    """Why a test sshd cannot run here (installing openssh-server if needed), or None."""
    if os.geteuid() != 0:
        return "not root: the test sshd logs users in, which needs root"
    if shutil.which("ssh-keygen") is None:
        problem = _apt_install("openssh-client")
        if problem:
            return problem
    if not SSHD.exists():
        problem = _apt_install("openssh-server")
        if problem or not SSHD.exists():
            return problem or f"{SSHD} is missing after installing openssh-server"
    return None


def _apt_install(package: str) -> str | None:
    """apt-get install without starting services (a policy-rc.d that exits 101 during the
    install); a system sshd that the install started anyway is stopped. Returns why it
    failed, or None."""
    if shutil.which("apt-get") is None:
        return f"{package} is not installed and there is no apt-get to install it"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    added_policy = not POLICY_RC_D.exists()
    had_system_pid = SYSTEM_PID_FILE.exists()
    if added_policy:
        POLICY_RC_D.write_text("#!/bin/sh\n# added by the mlsub tests during apt-get\nexit 101\n")
        POLICY_RC_D.chmod(0o755)
    try:
        lock = ["-o", "DPkg::Lock::Timeout=600"]
        for cmd in (
            ["apt-get", *lock, "update", "-qq"],
            ["apt-get", *lock, "install", "-y", "-qq", "--no-install-recommends", package],
        ):
            done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
            if done.returncode != 0:
                return f"{' '.join(cmd)} failed: {done.stderr.strip()[-500:]}"
    finally:
        if added_policy:
            POLICY_RC_D.unlink(missing_ok=True)
        if not had_system_pid:
            _stop_system_sshd_started_by_install()
    return None


def _stop_system_sshd_started_by_install() -> None:
    try:
        pid = int(SYSTEM_PID_FILE.read_text().strip())
    except (OSError, ValueError):
        return
    if _exe(pid) == str(SSHD):
        _kill(pid, signal.SIGTERM)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def _config(base: Path, port: int, keys: Keys, extra: str = "") -> Path:
    authorized = base / "authorized_keys"
    authorized.write_text(keys.user.public_line + "\n")
    authorized.chmod(0o600)
    config = base / "sshd_config"
    config.write_text(
        f"ListenAddress {HOST}\n"
        f"Port {port}\n"
        f"HostKey {keys.host.private}\n"
        f"HostKey {keys.host_ecdsa.private}\n"
        f"PidFile {base / 'sshd.pid'}\n"
        f"AuthorizedKeysFile {authorized}\n"
        "PubkeyAuthentication yes\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\n"
        "UsePAM no\n"
        "StrictModes no\n"
        "UseDNS no\n"
        "MaxStartups 50\n"
        "MaxSessions 50\n"
        "LogLevel VERBOSE\n"
        "Subsystem sftp internal-sftp\n"
        f"{extra}"
    )
    # OpenSSH 9.8+ (Debian 13) blocks a source address after failed or aborted logins,
    # which the failure tests make on purpose from 127.0.0.1; older versions lack the option
    penalties_off = config.read_text() + "PerSourcePenalties no\n"
    if _sshd_accepts(penalties_off, base / "sshd_config.trial"):
        config.write_text(penalties_off)
    return config


def _sshd_accepts(text: str, path: Path) -> bool:
    path.write_text(text)
    checked = subprocess.run([str(SSHD), "-t", "-f", str(path)], capture_output=True, timeout=30)
    path.unlink()
    return checked.returncode == 0


def start_sshd(keys: Keys, base: Path, extra_config: str = "") -> Sshd:
    """Start ``sshd -D -e`` on a free port and wait until it accepts connections;
    ``extra_config`` lines are added to its sshd_config (e.g. ``SetEnv PATH=…``)."""
    PRIVSEP_DIR.mkdir(mode=0o755, exist_ok=True)
    last = ""
    for _attempt in range(3):  # another process may take the free port first
        port = _free_port()
        config = _config(base, port, keys, extra_config)
        checked = subprocess.run(
            [str(SSHD), "-t", "-f", str(config)], capture_output=True, text=True, timeout=30
        )
        if checked.returncode != 0:
            raise RuntimeError(f"sshd -t rejects the test config: {checked.stderr.strip()}")
        log = base / f"sshd-{port}.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [str(SSHD), "-D", "-e", "-f", str(config)],
                stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        server = Sshd(port, process, base, keys, log)
        if _wait_listening(server):
            return server
        server.stop()
        last = log.read_text(errors="replace")[-1000:]
    raise RuntimeError(f"sshd did not start; its log ends:\n{last}")


def _wait_listening(server: Sshd, timeout: float = 15) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return False
        with socket.socket() as s:
            s.settimeout(1)
            if s.connect_ex((HOST, server.port)) == 0:
                return True
        time.sleep(0.05)
    return False


@contextmanager
def running_sshd(keys: Keys, extra_config: str = "") -> Iterator[Sshd]:
    """A started server (skip, or fail under CI, when there can be none); stopped after."""
    problem = sshd_problem()
    if problem:
        require_or_skip(problem)
    base = Path(tempfile.mkdtemp(prefix="mlsub-sshd-"))
    try:
        server = start_sshd(keys, base, extra_config)
    except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
        shutil.rmtree(base, ignore_errors=True)
        require_or_skip(f"cannot start the test sshd: {exc}")
        raise  # not reached: require_or_skip raises
    try:
        yield server
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)


# --- processes ------------------------------------------------------------------------


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process now."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # the command name (2nd field) is in parentheses and may hold spaces
        fields = stat[stat.rindex(")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
    return parents


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, parent in _parents().items():
        children.setdefault(parent, []).append(pid)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return state[state.rindex(")") + 2] != "Z"


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def _kill(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.kill(pid, sig)
