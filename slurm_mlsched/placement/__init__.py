"""Placement: the one entry point ``place()`` and the policies behind it.

``place(request, snapshot, policy, params) -> Decision`` serves live submission and
replay alike. Policies are pure functions with one signature, registered by name.
"""

from __future__ import annotations

from ..model import ClusterSnapshot, Decision, JobRequest
from . import policies as _policies  # noqa: F401  (registers the policies)
from .feasibility import check_could_ever_fit
from .params import Binding, PlacementParams
from .registry import get_policy, policy_names


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
    fn = get_policy(policy)
    check_could_ever_fit(request, snapshot)
    return fn(request, snapshot, params or PlacementParams())


__all__ = ["Binding", "PlacementParams", "check_could_ever_fit", "place", "policy_names"]
