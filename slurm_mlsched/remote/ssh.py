"""The SSH command runner: Slurm commands run on a login node, through the same
:class:`~slurm_mlsched.slurm.runner.CommandRunner` interface as the local path.

* :func:`connect` resolves ``[user@]host[:port]`` through ``~/.ssh/config``, checks the
  host key against known_hosts (unknown and changed keys are refused), logs in with keys
  and ssh-agent only, and returns an :class:`SshRunner` holding that one connection;
* :meth:`SshRunner.run` runs an argument list on the remote side: each element is quoted
  with :func:`shlex.quote` for the remote POSIX shell (:func:`remote_command`), an optional
  environment is an ``env VAR=value`` prefix, and every command has a timeout after which
  its channel is closed;
* :meth:`SshRunner.upload` and :meth:`SshRunner.mkdir_p` write files over SFTP on the same
  connection (written to a temporary name, then renamed into place).

Failures are typed (``errors.py``): :class:`RemoteConnectError`, :class:`RemoteAuthError`,
:class:`UnknownHostKeyError`, :class:`HostKeyChangedError` (and a revoked key's
:class:`HostKeyError`) before anything is sent;
:class:`RemoteConnectionLost` when the connection drops under a command (its
``may_have_run`` says whether the outcome is unknown); :class:`RemoteCommandTimeout`
(a :class:`SlurmError`, like the local timeout). Messages carry host names, key types and
fingerprints, never key material or passphrases.
"""

from __future__ import annotations

import contextlib
import errno
import getpass
import io
import logging
import posixpath
import re
import secrets
import select
import shlex
import socket
import stat
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import paramiko

from ..errors import (
    InputError,
    RemoteCommandTimeout,
    RemoteConnectError,
    RemoteConnectionLost,
    RemoteError,
)
from ..slurm.runner import CommandResult, checked_argv, show_command
from .auth import KeyFile, KeysAndAgent, auth_failed, key_files_for
from .hostkeys import (
    KnownKey,
    VerifyHostKey,
    describe_key,
    preferred_key_types,
    read_known_hosts,
)
from .target import SshTarget, default_identities, load_ssh_config, resolve_target

#: Seconds to open the TCP connection, read the banner and authenticate.
DEFAULT_CONNECT_TIMEOUT_S = 15.0
#: Seconds an SFTP operation (one upload, one mkdir) may take.
DEFAULT_SFTP_TIMEOUT_S = 60.0
#: Seconds between SSH keepalives, so a dead server is noticed during long commands.
KEEPALIVE_S = 15
#: Longest wait between checks of a running command (its output wakes us sooner).
POLL_S = 0.05
READ_CHUNK = 65536
#: paramiko's exit status until the server sends one (a command killed by a signal never does).
NO_STATUS = -1
#: Seconds to wait, after a channel closed unexpectedly, for the connection to show it died.
LOST_GRACE_S = 0.5

_T = TypeVar("_T")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# paramiko's transport thread logs failures (a reset connection, a bad banner) at ERROR; we
# raise them as typed errors instead, so keep them off stderr unless logging is configured.
logging.getLogger("paramiko").addHandler(logging.NullHandler())


def remote_command(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The command line the remote shell runs: every element quoted, ``env`` as a prefix.

    The remote login shell must be a POSIX shell (sh, bash, dash, zsh): it sees each
    argument as one word, verbatim (spaces, quotes, ``$(…)``, backticks, newlines).
    """
    prefix: list[str] = []
    for name, value in (env or {}).items():
        if not _ENV_NAME.match(name):
            raise ValueError(f"not an environment variable name: {name!r}")
        prefix.append(f"{name}={value}")
    return shlex.join(["env", *prefix, *argv] if prefix else list(argv))


class SshRunner:
    """Runs commands and writes files on one remote host over one SSH connection.

    Implements :class:`~slurm_mlsched.slurm.runner.CommandRunner`. ``env`` is set for every
    command (e.g. ``{"SLURM_CONF": "/etc/slurm/slurm.conf"}``). Use as a context manager or
    call :meth:`close`.
    """

    def __init__(
        self,
        client: paramiko.SSHClient,
        target: SshTarget,
        *,
        env: Mapping[str, str] | None = None,
        channel_timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
        sftp_timeout: float = DEFAULT_SFTP_TIMEOUT_S,
        agent: paramiko.Agent | None = None,
    ) -> None:
        self.target = target
        self.env = dict(env or {})
        remote_command(["true"], self.env)  # reject bad variable names now
        self._client = client
        self._channel_timeout = channel_timeout
        self._sftp_timeout = sftp_timeout
        self._agent = agent
        self._sftp: paramiko.SFTPClient | None = None
        self._home: str | None = None

    @property
    def host_key(self) -> str:
        """The verified host key of the server, ``type SHA256:…`` (e.g. for provenance)."""
        transport = self._client.get_transport()
        return describe_key(transport.get_remote_server_key()) if transport else ""

    # --- commands -----------------------------------------------------------------------

    def run(self, argv: Sequence[str], timeout: float, input: str | None = None) -> CommandResult:
        """Run ``argv`` remotely; any exit status is a result, a lost connection raises."""
        args = checked_argv(argv, timeout)
        started = time.monotonic()
        deadline = started + timeout
        channel = self._open_channel(args)
        # paramiko waits for the server's answer to exec without a timeout: a watchdog
        # closes the channel at the deadline, which ends every wait below
        expired = threading.Event()
        watchdog = threading.Timer(timeout, _expire, (channel, expired))
        watchdog.daemon = True
        watchdog.start()
        try:
            channel.settimeout(timeout)
            try:
                channel.exec_command(remote_command(args, self.env))
                if input is not None:
                    channel.sendall(input.encode("utf-8"))
                channel.shutdown_write()  # stdin ends here, like /dev/null locally
            except (paramiko.SSHException, EOFError, OSError) as exc:
                if expired.is_set() or isinstance(exc, TimeoutError):
                    raise self._timed_out(args, timeout) from None
                raise self._broken(args, exc, may_have_run=True) from None
            returncode, stdout, stderr = self._collect(channel, args, timeout, deadline, expired)
        finally:
            watchdog.cancel()
            channel.close()
        return CommandResult(
            tuple(args),
            returncode,
            stdout.decode("utf-8", errors="replace"),
            stderr.decode("utf-8", errors="replace"),
            time.monotonic() - started,
        )

    def _open_channel(self, args: list[str]) -> paramiko.Channel:
        transport = self._client.get_transport()
        if transport is None or not transport.is_active():
            raise self._lost(args, "the connection was already closed", may_have_run=False)
        try:
            return transport.open_session(timeout=self._channel_timeout)
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise self._broken(args, exc, may_have_run=False) from None

    def _collect(
        self,
        channel: paramiko.Channel,
        args: list[str],
        timeout: float,
        deadline: float,
        expired: threading.Event,
    ) -> tuple[int, bytes, bytes]:
        """Read both streams until EOF and the exit status (or the channel closes)."""
        out, err = bytearray(), bytearray()
        while True:
            _drain(channel, out, err)
            if expired.is_set():
                raise self._timed_out(args, timeout)
            if channel.closed or (channel.eof_received and channel.exit_status_ready()):
                break
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._timed_out(args, timeout)
            if channel.eof_received:  # the pipe stays readable after EOF: wait on the status
                channel.status_event.wait(min(POLL_S, remaining))
            else:
                select.select([channel], [], [], min(POLL_S, remaining))
        _drain(channel, out, err)
        # a closed channel is "ready" with paramiko's placeholder status -1: no status came
        status = channel.recv_exit_status() if channel.exit_status_ready() else NO_STATUS
        if not (channel.eof_received and status != NO_STATUS) and self._connection_dead():
            raise self._lost(args, "the server closed the connection", may_have_run=True)
        if status == NO_STATUS:  # the server sent exit-signal instead: killed by a signal
            err += b"\n(the remote command ended without an exit status; killed by a signal?)\n"
        return status, bytes(out), bytes(err)

    def _timed_out(self, args: list[str], timeout: float) -> RemoteCommandTimeout:
        command = show_command(args)
        return RemoteCommandTimeout(
            f"`{command}` did not finish within {timeout:g} s on {self.target.display} and "
            "was stopped: mlsub closed its SSH channel, so the remote process may still be "
            "running there (the command ran over SSH, not on this machine)",
            hint="the login node or its Slurm controller may be overloaded; try "
            f"`{self.target.ssh_command} scontrol ping`",
            context={"command": command, "timeout_s": timeout, "remote": self.target.display},
        )

    def _connection_dead(self, grace: float = LOST_GRACE_S) -> bool:
        """Whether the connection is gone. When it dies, paramiko closes its channels just
        before it marks the transport inactive, so a closed channel waits ``grace`` for it."""
        deadline = time.monotonic() + grace
        while True:
            transport = self._client.get_transport()
            if transport is None or not transport.is_active():
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)

    def _broken(self, args: list[str], exc: BaseException, *, may_have_run: bool) -> RemoteError:
        if self._connection_dead():
            return self._lost(args, _reason(exc), may_have_run=may_have_run)
        command = show_command(args)
        return RemoteError(
            f"the SSH server on {self.target.display} could not run `{command}`: {_reason(exc)}",
            hint="check that the account can run commands (not a restricted shell) and that "
            "the server allows sessions (MaxSessions)",
            context={"command": command, "remote": self.target.display},
        )

    def _lost(self, args: list[str], why: str, *, may_have_run: bool) -> RemoteConnectionLost:
        command = show_command(args)
        if may_have_run:
            outcome = (
                "the command had been started, so whether it ran (for sbatch: whether the job "
                "was queued) is unknown"
            )
        else:
            outcome = "the command had not been started"
        return RemoteConnectionLost(
            f"the SSH connection to {self.target.display} was lost during `{command}` "
            f"({why}); {outcome}",
            hint="check the network and the login node; a submission whose outcome is "
            "unknown is resolved later by `mlsub reconcile`",
            context={
                "command": command,
                "remote": self.target.display,
                "may_have_run": may_have_run,
            },
            may_have_run=may_have_run,
        )

    # --- files --------------------------------------------------------------------------

    def home(self) -> str:
        """The remote login directory (where relative paths start), absolute."""
        if self._home is None:
            self._home = self._sftp_call("find the home directory of", ".", _normalize_home)
        return self._home

    def absolute(self, remote_path: str) -> str:
        """``remote_path`` made absolute against the remote home directory."""
        return posixpath.normpath(posixpath.join(self.home(), remote_path))

    def mkdir_p(self, remote_path: str, mode: int = 0o700) -> str:
        """Create a remote directory and its parents (like ``mkdir -p``); return its
        absolute path. Directories created get ``mode``; existing ones are left alone."""
        path = self.absolute(remote_path)
        parts = [p for p in path.split("/") if p]
        for depth in range(1, len(parts) + 1):
            sub = "/" + "/".join(parts[:depth])
            self._sftp_call("create", sub, partial(_mkdir_if_missing, path=sub, mode=mode))
        return path

    def owner_and_mode(self, remote_path: str) -> tuple[int, int]:
        """The owner's uid and the permission bits of a remote path (not following a
        final symbolic link: a link reports itself)."""
        path = self.absolute(remote_path)
        attrs = self._sftp_call("inspect", path, lambda sftp: sftp.lstat(path))
        return int(attrs.st_uid or 0), int(attrs.st_mode or 0)

    def upload(self, source: Path | bytes, remote_path: str, mode: int = 0o644) -> str:
        """Write a local file (or bytes) to ``remote_path`` with ``mode``; return its
        absolute path. The file appears complete or not at all (temporary name, rename);
        the directory must exist (:meth:`mkdir_p`)."""
        data = source if isinstance(source, bytes) else _read_local(source)
        path = self.absolute(remote_path)
        put = partial(_put_atomically, data=data, path=path, mode=mode)
        return self._sftp_call("write", path, put)

    def _sftp_call(self, action: str, path: str, call: Callable[[paramiko.SFTPClient], _T]) -> _T:
        try:
            return call(self._sftp_client())
        except TimeoutError:
            raise RemoteError(
                f"could not {action} {path} on {self.target.display}: no answer from the "
                f"SFTP server within {self._sftp_timeout:g} s",
                hint="the login node may be overloaded, or its file system hung",
                context={"path": path, "remote": self.target.display},
            ) from None
        except (paramiko.SSHException, EOFError, OSError) as exc:
            if self._connection_dead():
                raise RemoteConnectionLost(
                    f"the SSH connection to {self.target.display} was lost while trying to "
                    f"{action} {path} ({_reason(exc)}); no command was run",
                    hint="check the network and the login node, then try again",
                    context={"path": path, "remote": self.target.display, "may_have_run": False},
                    may_have_run=False,
                ) from None
            raise RemoteError(
                f"could not {action} {path} on {self.target.display}: {_reason(exc)}",
                hint="check the remote path and its permissions",
                context={"path": path, "remote": self.target.display},
            ) from None

    def _sftp_client(self) -> paramiko.SFTPClient:
        if self._sftp is None:
            sftp = self._client.open_sftp()
            channel = sftp.get_channel()
            if channel is not None:
                channel.settimeout(self._sftp_timeout)
            self._sftp = sftp
        return self._sftp

    # --- lifetime -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the SFTP session, the connection and the agent (idempotent)."""
        if self._sftp is not None:
            self._sftp.close()
            self._sftp = None
        self._client.close()
        if self._agent is not None:
            self._agent.close()
            self._agent = None

    def __enter__(self) -> SshRunner:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def _expire(channel: paramiko.Channel, expired: threading.Event) -> None:
    expired.set()
    channel.close()


def _drain(channel: paramiko.Channel, out: bytearray, err: bytearray) -> None:
    while channel.recv_ready():
        out += channel.recv(READ_CHUNK)
    while channel.recv_stderr_ready():
        err += channel.recv_stderr(READ_CHUNK)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, EOFError):
        return "the server closed the connection"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def _read_local(path: Path) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise InputError(
            f"cannot read {path} to upload it: {exc.strerror or exc}",
            hint="check the path and its permissions",
            context={"file": str(path)},
        ) from None


def _normalize_home(sftp: paramiko.SFTPClient) -> str:
    return sftp.normalize(".")


def _mkdir_if_missing(sftp: paramiko.SFTPClient, *, path: str, mode: int) -> None:
    try:
        if not stat.S_ISDIR(sftp.stat(path).st_mode or 0):
            raise NotADirectoryError(errno.ENOTDIR, "exists and is not a directory")
        return
    except FileNotFoundError:
        pass
    try:
        sftp.mkdir(path, mode)
    except OSError:
        if not stat.S_ISDIR(sftp.stat(path).st_mode or 0):  # created meanwhile: fine
            raise


def _put_atomically(sftp: paramiko.SFTPClient, *, data: bytes, path: str, mode: int) -> str:
    partial_path = f"{path}.part-{secrets.token_hex(4)}"
    try:
        sftp.putfo(io.BytesIO(data), partial_path, file_size=len(data), confirm=True)
        sftp.chmod(partial_path, mode)
        sftp.posix_rename(partial_path, path)
    except BaseException:
        with contextlib.suppress(Exception):
            sftp.remove(partial_path)
        raise
    return path


# --- connecting ---------------------------------------------------------------------------


def resolve(target: str, *, ssh_config: Path | None = None) -> SshTarget:
    """``target`` with its ``~/.ssh/config`` entry (or ``ssh_config``'s) applied."""
    home = str(Path.home())
    config_path = ssh_config or Path(home) / ".ssh" / "config"
    return resolve_target(
        target,
        load_ssh_config(config_path),
        local_user=getpass.getuser(),
        home=home,
        config_path=str(config_path),
    )


def connect(
    target: str,
    *,
    known_hosts: Sequence[str | Path] | None = None,
    ssh_config: Path | None = None,
    identity_files: Sequence[str | Path] = (),
    allow_agent: bool = True,
    look_for_keys: bool = True,
    timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> SshRunner:
    """Connect to ``target`` (``[user@]host[:port]`` or a ``~/.ssh/config`` Host alias).

    ``known_hosts`` replaces the files to check the host key against (default: the
    entry's UserKnownHostsFile, else ``~/.ssh/known_hosts``, then
    ``/etc/ssh/ssh_known_hosts``); ``ssh_config`` replaces ``~/.ssh/config`` (a missing file
    is no config); ``identity_files`` are offered before the configured ones;
    ``allow_agent`` / ``look_for_keys`` switch off ssh-agent and the default
    ``~/.ssh/id_*`` keys. ``timeout`` bounds the TCP connect, the SSH handshake and the
    login. Raises the typed errors of the module docstring.
    """
    home = str(Path.home())
    resolved = resolve(target, ssh_config=ssh_config)
    if known_hosts is not None:
        resolved = replace(resolved, known_hosts_files=tuple(str(p) for p in known_hosts))
    keys = key_files_for(
        resolved,
        [str(p) for p in identity_files],
        default_identities(home),
        look_for_keys and not resolved.identities_only,
    )
    agent = _open_agent() if allow_agent and not resolved.identities_only else None
    return open_runner(resolved, keys, agent=agent, timeout=timeout, env=env)


def _open_agent() -> paramiko.Agent | None:
    """The user's ssh-agent (``SSH_AUTH_SOCK``); one that does not answer is left out."""
    try:
        return paramiko.Agent()
    except paramiko.SSHException:
        return None


def open_runner(
    target: SshTarget,
    key_files: Sequence[KeyFile],
    *,
    agent: paramiko.Agent | None,
    timeout: float = DEFAULT_CONNECT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
) -> SshRunner:
    """Connect to a resolved target with exactly these keys (and agent); see :func:`connect`."""
    known = read_known_hosts(target.known_hosts_files)
    trust_file = target.known_hosts_files[0] if target.known_hosts_files else "~/.ssh/known_hosts"
    client = paramiko.SSHClient()  # its own key store stays empty: every key is verified
    client.set_missing_host_key_policy(VerifyHostKey(target, known, trust_file))
    strategy = KeysAndAgent(target.user, key_files, agent)
    try:
        _login(client, target, strategy, timeout, known.for_host(target.known_hosts_name))
        transport = client.get_transport()
        if transport is not None:
            transport.set_keepalive(KEEPALIVE_S)
    except BaseException:
        client.close()
        if agent is not None:
            agent.close()
        raise
    return SshRunner(client, target, env=env, channel_timeout=timeout, agent=agent)


def _login(
    client: paramiko.SSHClient,
    target: SshTarget,
    strategy: KeysAndAgent,
    timeout: float,
    known_keys: Sequence[KnownKey],
) -> None:
    where = f"{target.hostname}:{target.port}"

    def transport_factory(
        sock: Any,
        /,
        *,
        gss_kex: bool = False,
        gss_deleg_creds: bool = True,
        disabled_algorithms: Mapping[str, Iterable[str]] | None = None,
    ) -> paramiko.Transport:
        """A Transport that asks for the host key types known for this host first (the
        GSS-API arguments of paramiko's factory interface are unused)."""
        transport = paramiko.Transport(sock, disabled_algorithms=disabled_algorithms)
        options = transport.get_security_options()
        options.key_types = preferred_key_types(known_keys, list(options.key_types))
        return transport

    try:
        client.connect(
            target.hostname,
            port=target.port,
            username=target.user,
            timeout=timeout,
            banner_timeout=timeout,
            auth_timeout=timeout,
            channel_timeout=timeout,
            allow_agent=False,
            look_for_keys=False,
            auth_strategy=strategy,
            transport_factory=transport_factory,
        )
    except paramiko.AuthenticationException as exc:
        raise auth_failed(target, exc, strategy.notes) from None
    except paramiko.ssh_exception.NoValidConnectionsError as exc:
        refused = all(getattr(e, "errno", None) == errno.ECONNREFUSED for e in exc.errors.values())
        if refused:
            raise _connect_error(
                target,
                f"connection refused by {where}",
                "is an SSH server listening there? check the host name and the port",
            ) from None
        raise _connect_error(
            target, f"{where} is unreachable", "check the network route to the host"
        ) from None
    except (paramiko.SSHException, EOFError) as exc:
        raise _connect_error(
            target,
            f"the SSH handshake with {where} failed: {_reason(exc)}",
            "is it an SSH server? `ssh -v` to the same host shows more",
        ) from None
    except OSError as exc:
        raise connect_failure(target, exc, timeout) from None


def connect_failure(target: SshTarget, exc: OSError, timeout: float) -> RemoteConnectError:
    """What a failed TCP connection to ``target`` means, for every way mlsub connects."""
    where = f"{target.hostname}:{target.port}"
    if isinstance(exc, socket.gaierror):
        return _connect_error(
            target,
            f"cannot resolve the host name {target.hostname!r}: {exc.strerror or exc}",
            "check the spelling, or the HostName of this Host in ~/.ssh/config",
        )
    if isinstance(exc, TimeoutError):
        return _connect_error(
            target,
            f"no answer from {where} within {timeout:g} s",
            "the host may be down, or a firewall may drop the connection",
        )
    if exc.errno == errno.ECONNREFUSED:
        return _connect_error(
            target,
            f"connection refused by {where}",
            "is an SSH server listening there? check the host name and the port",
        )
    return _connect_error(
        target, f"cannot connect to {where}: {_reason(exc)}", "check the network route"
    )


def _connect_error(target: SshTarget, what: str, hint: str) -> RemoteConnectError:
    return RemoteConnectError(
        f"cannot open an SSH connection to {target.display}: {what}",
        hint=hint,
        context={"remote": target.display},
    )
