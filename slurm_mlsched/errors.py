"""One error type for every failure a user can act on.

Each error has a stable kebab-case ``code`` (for scripts and docs), a message saying what
is wrong and where, an optional hint saying how to fix it, and an exit code from the
documented table in ``docs/user-guide.md`` (mirrored in :data:`EXIT_CODES`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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
}


@dataclass
class MlschedError(Exception):
    """Base class: a failure with a code, a message, context and a hint."""

    message: str
    hint: str = ""
    context: dict[str, object] = field(default_factory=dict)
    code: str = "mlsched-error"
    exit_code: int = 1

    def __post_init__(self) -> None:
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

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


@dataclass
class InputError(MlschedError):
    """Invalid input: a file, a field or an option value."""

    code: str = "invalid-input"
    exit_code: int = 3


@dataclass
class NeverFitsError(MlschedError):
    """The job could never be placed: no node can hold one task, or the cluster cannot."""

    code: str = "never-fits"
    exit_code: int = 4


@dataclass
class SolverError(MlschedError):
    """The solver ended without a usable answer (time limit, numerical failure)."""

    code: str = "solver-failed"
    exit_code: int = 5


@dataclass
class InfeasibleError(SolverError):
    """The program is infeasible where it must not be (a bug or an impossible instance)."""

    code: str = "infeasible"


@dataclass
class StoreError(MlschedError):
    """The decision store failed: cannot open, read or write the database."""

    code: str = "store-error"
    exit_code: int = 7


@dataclass
class SchemaOutOfDateError(StoreError):
    """The database schema is older than this mlsub: run the upgrade command in the hint."""

    code: str = "db-out-of-date"


@dataclass
class NotFoundError(InputError):
    """A decision id that does not exist, or that the caller may not see."""

    code: str = "not-found"


@dataclass
class InvalidTransitionError(InputError):
    """A state change a decision cannot make (e.g. releasing one that was submitted)."""

    code: str = "invalid-transition"


@dataclass
class SlurmError(MlschedError):
    """A Slurm command failed: the message names the command, its exit status and stderr.

    The failure came from a subprocess (sinfo, squeue, sbatch …), not from mlsub itself;
    every Slurm command goes through :mod:`slurm_mlsched.slurm.runner`, which raises this.
    """

    code: str = "slurm-command-failed"
    exit_code: int = 6


@dataclass
class SlurmUnreachableError(SlurmError):
    """The Slurm controller does not answer (``scontrol ping`` says DOWN or times out)."""

    code: str = "slurm-unreachable"


@dataclass
class SlurmOutputError(SlurmError):
    """A Slurm command succeeded but printed something mlsub cannot read."""

    code: str = "slurm-output-unreadable"
