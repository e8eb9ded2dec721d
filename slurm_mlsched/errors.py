"""One error type for every failure a user can act on.

Each error has a stable kebab-case ``code`` (for scripts and docs), a message saying what
is wrong and where, an optional hint saying how to fix it, and an exit code from the
documented table in ``docs/user-guide.md`` (mirrored in :data:`EXIT_CODES`).
"""

from __future__ import annotations

from typing import ClassVar

#: exit code -> meaning; the CLI maps :class:`MlschedError` subclasses onto these.
EXIT_CODES: dict[int, str] = {
    0: "success",
    1: "internal error (a bug: please report it)",
    2: "usage error (bad command-line option)",
    3: "invalid input file or value (cluster file, job options, script header)",
    4: "the job can never fit (no node, or not the whole cluster, could ever hold it)",
    5: "solver failure (time limit without a solution, numerical trouble)",
    6: "Slurm unreachable or a Slurm command failed",
    7: "decision store error",
    8: "remote (SSH) connection failed: host key, authentication, network",
    9: "the job ran but did not complete (mlsub submit --wait: failed or cancelled; "
    "mlsub replay --on-slurm: a cell failed)",
}


class MlschedError(Exception):
    """Base class: a failure with a code, a message, context and a hint.

    ``code`` and ``exit_code`` belong to the class (each subclass names its own; a raise
    may name a finer ``code``); a plain
    class rather than a dataclass, as these load with every ``mlsub`` start (26 dataclasses
    cost ~17 ms there)."""

    code: str = "mlsched-error"
    exit_code: int = 1

    def __init__(
        self,
        message: str,
        hint: str = "",
        context: dict[str, object] | None = None,
        *,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.context: dict[str, object] = dict(context) if context else {}
        if code is not None:  # a finer code than the class's, for one kind of failure
            self.code = code

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(message={self.message!r}, hint={self.hint!r})"

    def as_dict(self) -> dict[str, object]:
        return {
            "error": self.code,
            "message": self.message,
            "hint": self.hint,
            "context": {k: _plain(v) for k, v in self.context.items()},
            "exit_code": self.exit_code,
        }


def _plain(value: object) -> object:
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


class InputError(MlschedError):
    """Invalid input: a file, a field or an option value."""

    code = "invalid-input"
    exit_code = 3


class NeverFitsError(MlschedError):
    """The job could never be placed: no node can hold one task, or the cluster cannot."""

    code = "never-fits"
    exit_code = 4


class SolverError(MlschedError):
    """The solver ended without a usable answer (time limit, numerical failure)."""

    code = "solver-failed"
    exit_code = 5


class InfeasibleError(SolverError):
    """The program is infeasible where it must not be (a bug or an impossible instance)."""

    code = "infeasible"


class BelowBoundError(MlschedError):
    """A replayed policy's total completion time is below the proven lower bound of its
    jobs (docs/formulation.md §15): the bound, the policy or the simulator is wrong, so
    no ratio to the bound of that replay can be trusted. A bug: please report it."""

    code = "below-lower-bound"
    exit_code = 1


class PolicyStallError(MlschedError):
    """A re-allocating policy (``optimus``, ``drf``, ``tiresias``, ``srtf``) left every job
    waiting with none still to arrive: its allocation and layout place none of them on this
    cluster, although each fits it, so the replay cannot go on. A limit of that policy's
    port, not of the jobs: please report it (docs/formulation.md §12)."""

    code = "policy-stalled"
    exit_code = 1


class StoreError(MlschedError):
    """The decision store failed: cannot open, read or write the database."""

    code = "store-error"
    exit_code = 7


class SchemaOutOfDateError(StoreError):
    """The database schema is older than this mlsub: run the upgrade command in the hint."""

    code = "db-out-of-date"


class NotFoundError(InputError):
    """A decision id that does not exist, or that the caller may not see."""

    code = "not-found"


class InvalidTransitionError(InputError):
    """A state change a decision cannot make (e.g. releasing one that was submitted)."""

    code = "invalid-transition"


class _MayHaveRun(MlschedError):
    """A failure around a command that may have done its work anyway (``may_have_run``:
    the class's ``MAY_HAVE_RUN`` unless a raise says otherwise), so its outcome is unknown:
    for ``sbatch`` the job may exist. :class:`SlurmError` (the command timed out, or the
    connection dropped) and :class:`RemoteError` (a remote command had been started when
    the connection failed; false for every failure before a command was sent)."""

    MAY_HAVE_RUN: ClassVar[bool] = False

    def __init__(
        self,
        message: str,
        hint: str = "",
        context: dict[str, object] | None = None,
        *,
        code: str | None = None,
        may_have_run: bool | None = None,
    ) -> None:
        super().__init__(message, hint, context, code=code)
        self.may_have_run = self.MAY_HAVE_RUN if may_have_run is None else may_have_run


class SlurmError(_MayHaveRun):
    """A Slurm command failed: the message names the command, its exit status and stderr.

    The failure came from a subprocess (sinfo, squeue, sbatch …), not from mlsub itself;
    every Slurm command goes through :mod:`slurm_mlsched.slurm.runner`, which raises this.
    """

    code = "slurm-command-failed"
    exit_code = 6


class SlurmUnreachableError(SlurmError):
    """The Slurm controller does not answer (``scontrol ping`` says DOWN or times out)."""

    code = "slurm-unreachable"


class SlurmOutputError(SlurmError):
    """A Slurm command succeeded but printed something mlsub cannot read."""

    code = "slurm-output-unreadable"


class RemoteError(_MayHaveRun):
    """Talking to the remote login node over SSH failed (``mlsub --remote``).

    The failure is in the SSH connection (network, host key, authentication, a dropped
    connection), not in Slurm: a Slurm command that ran remotely and failed is still a
    :class:`SlurmError`. Raised by :mod:`slurm_mlsched.remote`.
    """

    code = "remote-error"
    exit_code = 8


class RemoteConnectError(RemoteError):
    """No SSH connection could be made: DNS, connection refused, timeout, not an SSH server."""

    code = "ssh-connect-failed"


class RemoteAuthError(RemoteError):
    """The SSH server accepted none of the keys tried (keys and ssh-agent only, no passwords)."""

    code = "ssh-auth-failed"


class RemoteConfigError(RemoteError):
    """The remote target or its ``~/.ssh/config`` entry asks for something not supported."""

    code = "ssh-config-unsupported"


class RemoteStagingError(RemoteError):
    """The remote staging directory is not private to the user (owner, mode, or a link)."""

    code = "remote-staging-unsafe"


class HostKeyError(RemoteError):
    """The server's host key could not be verified against known_hosts: the connection is
    refused before anything is sent (no key, no command)."""

    code = "host-key-rejected"


class UnknownHostKeyError(HostKeyError):
    """The host is not in known_hosts; the message shows its key's fingerprint and how to
    trust it after checking that fingerprint out of band."""

    code = "host-key-unknown"


class HostKeyChangedError(HostKeyError):
    """known_hosts holds a different key for the host: a possible man-in-the-middle."""

    code = "host-key-changed"


class RemoteConnectionLost(RemoteError):
    """The SSH connection dropped while a command or an upload was under way.

    ``may_have_run`` says whether the remote command had been started: when it is true the
    outcome is unknown (an ``sbatch`` may or may not have queued the job), which is what
    ``mlsub reconcile`` resolves later.
    """

    code = "ssh-connection-lost"
    MAY_HAVE_RUN = True


class RemoteCommandTimeout(SlurmError):
    """A command run over SSH did not finish in time; the channel was closed.

    A :class:`SlurmError` like the local timeout, so :class:`SlurmCommands` treats both the
    same; its outcome is unknown (the remote process may have done its work, or may still
    be running): ``may_have_run`` is always true, as for :class:`RemoteConnectionLost`.
    """

    code = "remote-command-timeout"
    MAY_HAVE_RUN = True


class PluginCheckError(InputError):
    """A Slurm Lua plugin that would fail in slurmctld or sbatch: a syntax error, an error
    while loading, a missing function or a bad site table (``mlsub plugins check``)."""

    code = "plugin-check-failed"


class LuaMissingError(InputError):
    """The Lua interpreter the plugin check needs (the version Slurm links) is missing."""

    code = "lua-missing"


class JobDidNotComplete(MlschedError):
    """``mlsub submit --wait``: the job ended failed or cancelled (the decision holds why)."""

    code = "job-did-not-complete"
    exit_code = 9


class ReplayCellsFailed(JobDidNotComplete):
    """``mlsub replay --on-slurm``: a cell of the job array failed, is missing or is still
    running, so nothing was merged; the message names each cell and quotes its log's end."""

    code = "replay-cells-failed"
