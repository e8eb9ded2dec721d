"""Each error class names its own stable code and exit code (scripts read them from
``error[code]`` and ``--json``). Pinned here: a class that silently inherits its parent's
code (as ``RemoteStagingError`` once did, printing ``remote-error``) fails."""

from __future__ import annotations

import inspect
import pickle

import slurm_mlsched.errors as errors
from slurm_mlsched.placement.baselines.oasis import RejectedError

CODES = {
    "MlschedError": ("mlsched-error", 1),
    "InputError": ("invalid-input", 3),
    "NeverFitsError": ("never-fits", 4),
    "SolverError": ("solver-failed", 5),
    "InfeasibleError": ("infeasible", 5),
    "StoreError": ("store-error", 7),
    "SchemaOutOfDateError": ("db-out-of-date", 7),
    "NotFoundError": ("not-found", 3),
    "InvalidTransitionError": ("invalid-transition", 3),
    "BelowBoundError": ("below-lower-bound", 1),
    "PolicyStallError": ("policy-stalled", 1),
    "SlurmError": ("slurm-command-failed", 6),
    "SlurmUnreachableError": ("slurm-unreachable", 6),
    "SlurmOutputError": ("slurm-output-unreadable", 6),
    "RemoteError": ("remote-error", 8),
    "RemoteConnectError": ("ssh-connect-failed", 8),
    "RemoteAuthError": ("ssh-auth-failed", 8),
    "RemoteConfigError": ("ssh-config-unsupported", 8),
    "RemoteStagingError": ("remote-staging-unsafe", 8),
    "HostKeyError": ("host-key-rejected", 8),
    "UnknownHostKeyError": ("host-key-unknown", 8),
    "HostKeyChangedError": ("host-key-changed", 8),
    "RemoteConnectionLost": ("ssh-connection-lost", 8),
    "RemoteCommandTimeout": ("remote-command-timeout", 6),
    "PluginCheckError": ("plugin-check-failed", 3),
    "LuaMissingError": ("lua-missing", 3),
    "JobDidNotComplete": ("job-did-not-complete", 9),
    "ReplayCellsFailed": ("replay-cells-failed", 9),
}


def _classes() -> dict[str, type[errors.MlschedError]]:
    return {
        name: cls
        for name, cls in vars(errors).items()
        if inspect.isclass(cls)
        and issubclass(cls, errors.MlschedError)
        and not name.startswith("_")  # a shared base, never raised
    }


def test_every_error_class_has_its_own_code_and_exit_code() -> None:
    found = {name: (cls("m").code, cls("m").exit_code) for name, cls in _classes().items()}
    assert found == CODES
    assert len({code for code, _ in found.values()}) == len(found)
    assert (RejectedError("m").code, RejectedError("m").exit_code) == ("rejected", 4)
    assert all(exit_code in errors.EXIT_CODES for _, exit_code in CODES.values())


def test_an_error_keeps_what_it_was_given() -> None:
    err = errors.InputError("bad value", hint="fix it", context={"option": "--x"})
    assert (str(err), err.hint, err.context) == ("bad value", "fix it", {"option": "--x"})
    finer = errors.RemoteError("no such key", code="host-key-mismatch")
    assert finer.code == "host-key-mismatch" and errors.RemoteError("x").code == "remote-error"
    assert errors.SlurmError("x").may_have_run is False
    assert errors.SlurmError("x", may_have_run=True).may_have_run is True
    assert errors.RemoteConnectionLost("x").may_have_run is True
    assert errors.RemoteCommandTimeout("x").may_have_run is True
    back = pickle.loads(pickle.dumps(errors.SlurmUnreachableError("down", hint="h")))
    assert (type(back), back.message) == (errors.SlurmUnreachableError, "down")
