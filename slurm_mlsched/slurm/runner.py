"""The one way mlsub runs a Slurm command, and the one funnel for its failures.

* :class:`CommandRunner` is the interface: an argument list (never a shell string), a
  timeout (always), optional standard input; it returns a :class:`CommandResult` for any
  command that ran, whatever its exit status. :class:`LocalRunner` implements it with
  :mod:`subprocess`, :class:`slurm_mlsched.remote.SshRunner` over SSH (the same
  argument lists, run on a login node); tests pass fakes.
* :class:`SlurmCommands` is the funnel every Slurm call goes through: before the first
  command it checks that the controller answers (``scontrol ping`` answers at once, while
  ``sinfo`` or ``sbatch`` hang for 9–18 s against a dead controller), and it turns every
  failure (non-zero exit, timeout, command not found) into one
  :class:`~slurm_mlsched.errors.SlurmError` naming the command, its exit status and stderr.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import SlurmError, SlurmUnreachableError
from .parse import SlurmVersion, controller_is_up, parse_ping, parse_version

#: Seconds a Slurm command may take unless the caller says otherwise.
DEFAULT_TIMEOUT_S = 30.0
#: Seconds of ``sbatch`` (it answers in about a second on a healthy controller).
SBATCH_TIMEOUT_S = 60.0
#: Seconds ``scontrol ping`` may take: it answers in milliseconds when the controller is up
#: or when its port is closed; it hangs when the controller accepts connections and never
#: answers (stopped, overloaded) or slurm.conf is unreadable. Every command that talks to the
#: controller pings first, so an unresponsive slurmctld is a clear error (exit 6) after
#: this bound (plus mlsub's start-up for a whole command; make bench-reliability).
PING_TIMEOUT_S = 2.0
#: Lines of stderr quoted in an error message (the last ones: Slurm ends with the cause).
STDERR_LINES = 12


@dataclass(frozen=True)
class CommandResult:
    """A command that ran: its arguments, exit status, output and wall time."""

    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class CommandRunner(Protocol):
    """Runs one command; raises :class:`SlurmError` only when it could not run at all."""

    def run(
        self, argv: Sequence[str], timeout: float, input: str | None = None
    ) -> CommandResult: ...


def show_command(argv: Sequence[str]) -> str:
    """The command as a user could paste it into a shell."""
    return shlex.join(argv)


class LocalRunner:
    """Runs commands on this machine with :func:`subprocess.run` (no shell).

    ``env`` is laid over the process environment (e.g. ``{"SLURM_CONF": path}``).
    """

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._env = dict(env) if env else None

    def run(self, argv: Sequence[str], timeout: float, input: str | None = None) -> CommandResult:
        args = checked_argv(argv, timeout)
        env = {**os.environ, **self._env} if self._env is not None else None
        started = time.monotonic()
        try:
            proc = subprocess.run(
                args,
                input=input,
                stdin=subprocess.DEVNULL if input is None else None,
                capture_output=True,
                text=True,
                encoding="utf-8",
                errors="replace",
                timeout=timeout,
                env=env,
                check=False,
            )
        except FileNotFoundError:
            raise SlurmError(
                f"cannot run `{args[0]}`: command not found",
                hint="install the Slurm client commands (Debian: apt-get install slurm-client) "
                "or put them on PATH",
                context={"command": show_command(args)},
            ) from None
        except subprocess.TimeoutExpired:
            raise SlurmError(
                f"`{show_command(args)}` did not finish within {timeout:g} s and was stopped "
                "(the command is a subprocess of mlsub)",
                hint="the Slurm controller may be overloaded or unreachable; check "
                "`scontrol ping` and SLURM_CONF",
                context={"command": show_command(args), "timeout_s": timeout},
                may_have_run=True,
            ) from None
        except OSError as exc:
            raise SlurmError(
                f"cannot run `{show_command(args)}`: {exc.strerror or exc}",
                hint="check that the command exists and is executable",
                context={"command": show_command(args)},
            ) from None
        return CommandResult(
            tuple(args), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started
        )


def checked_argv(argv: Sequence[str], timeout: float) -> list[str]:
    """``argv`` as a list, after checking the interface's rules (every runner calls this):
    a non-empty list of strings, never one shell string, and a timeout > 0."""
    if isinstance(argv, str) or not argv:
        raise TypeError(f"argv must be a non-empty list of strings, got {argv!r}")
    args = list(argv)
    if not all(isinstance(a, str) for a in args):
        raise TypeError(f"argv must contain only strings, got {args!r}")
    if not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, got {timeout!r}")
    return args


def command_failed(result: CommandResult) -> SlurmError:
    """The error for a command that exited non-zero: command, status, the end of stderr."""
    command = show_command(result.argv)
    stderr = _tail(result.stderr) or _tail(result.stdout) or "(no output)"
    return SlurmError(
        f"`{command}` failed with exit status {result.returncode}; it said:\n{stderr}\n"
        f"(this error came from the subprocess `{result.argv[0]}`, not from mlsub)",
        hint="read Slurm's message above; `scontrol ping` and `sinfo` show the cluster's state",
        context={"command": command, "exit_status": result.returncode, "stderr": stderr},
    )


def _tail(text: str) -> str:
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    return "\n".join("  " + line for line in lines[-STDERR_LINES:])


class SlurmCommands:
    """Every Slurm command mlsub runs goes through here.

    The controller is pinged once, before the first command that needs it; ``version()``
    (``sinfo --version``) does not need it. Failures raise :class:`SlurmError` (exit code 6):
    :class:`~slurm_mlsched.errors.SlurmUnreachableError` when the controller is down.
    """

    def __init__(
        self,
        runner: CommandRunner,
        *,
        timeout: float = DEFAULT_TIMEOUT_S,
        ping_timeout: float = PING_TIMEOUT_S,
    ) -> None:
        self.runner = runner
        self.timeout = timeout
        self.ping_timeout = ping_timeout
        self._reachable = False
        self._version: SlurmVersion | None = None

    def ensure_reachable(self) -> None:
        """Ping the controller unless it answered already in this command (before the
        first command that needs it, and before pyslurm's first call)."""
        if not self._reachable:
            self.ping()

    def ping(self) -> None:
        """Raise :class:`SlurmUnreachableError` unless a controller answers ``is UP``."""
        argv = ["scontrol", "ping"]
        try:
            result = self.runner.run(argv, self.ping_timeout)
        except SlurmError as err:
            if "command not found" in err.message:
                raise  # no Slurm client here: its own message says what to install
            raise _unreachable(err.message) from None
        statuses = parse_ping(result.stdout)
        if not controller_is_up(statuses):
            said = "; ".join(s.line for s in statuses) or _tail(result.stderr).strip()
            raise _unreachable(
                f"`scontrol ping` exited with status {result.returncode}: {said or '(no output)'}"
            )
        self._reachable = True

    def run(
        self, argv: Sequence[str], *, timeout: float | None = None, input: str | None = None
    ) -> str:
        """Run a command that talks to the controller; return its stdout."""
        self.ensure_reachable()
        return self.run_local(argv, timeout=timeout, input=input)

    def run_local(
        self, argv: Sequence[str], *, timeout: float | None = None, input: str | None = None
    ) -> str:
        """Run a command that does not need the controller (no ping); return its stdout."""
        result = self.runner.run(argv, timeout or self.timeout, input)
        if not result.ok:
            raise command_failed(result)
        return result.stdout

    def version(self) -> SlurmVersion:
        """The Slurm version of the client commands (``sinfo --version``), cached."""
        if self._version is None:
            self._version = parse_version(self.run_local(["sinfo", "--version"]))
        return self._version


def _unreachable(detail: str) -> SlurmUnreachableError:
    return SlurmUnreachableError(
        f"the Slurm controller is not reachable: {detail}",
        hint="start slurmctld (`systemctl start slurmctld`; mlsub's own lab cluster: "
        "`make cluster-up` in its checkout), or check SLURM_CONF and "
        "SlurmctldHost/SlurmctldPort in slurm.conf",
        context={"command": "scontrol ping"},
    )
