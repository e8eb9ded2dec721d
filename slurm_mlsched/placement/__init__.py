"""Placement: the one entry point ``place()`` and the policies behind it.

``place(request, snapshot, policy, params) -> Decision`` serves live submission and
replay alike. Policies are pure functions with one signature, registered by name.

Importing this package is light (the parameters and the model only); the policies, the
LP and the solver load when a policy is first looked up (:mod:`.registry`), so that a
command that never places (``mlsub history``, ``--help``) does not pay for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model import ClusterSnapshot, Decision, JobRequest
from .params import Binding, PlacementParams

if TYPE_CHECKING:
    from .program.feasibility import check_could_ever_fit
    from .registry import policy_names


def place(
    request: JobRequest,
    snapshot: ClusterSnapshot,
    policy: str = "yu-rr",
    params: PlacementParams | None = None,
) -> Decision:
    """Decide where and when ``request`` runs on ``snapshot`` under ``policy``.

    Raises :class:`~slurm_mlsched.errors.NeverFitsError` when no placement could ever
    exist and :class:`~slurm_mlsched.errors.InputError` for an unknown policy.
    """
    from .program.feasibility import check_could_ever_fit
    from .registry import get_policy

    fn = get_policy(policy)
    check_could_ever_fit(request, snapshot)
    return fn(request, snapshot, params or PlacementParams())


def __getattr__(name: str) -> Any:
    """``check_could_ever_fit`` and ``policy_names``, loaded on first use."""
    if name == "check_could_ever_fit":
        from .program.feasibility import check_could_ever_fit

        return check_could_ever_fit
    if name == "policy_names":
        from .registry import policy_names

        return policy_names
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Binding", "PlacementParams", "check_could_ever_fit", "place", "policy_names"]
