"""Policies share one signature and are looked up by name (no if-chains on names)."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import InputError
from ..model import ClusterSnapshot, Decision, JobRequest
from .params import PlacementParams

PolicyFn = Callable[[JobRequest, ClusterSnapshot, PlacementParams], Decision]

_POLICIES: dict[str, PolicyFn] = {}


def register(name: str) -> Callable[[PolicyFn], PolicyFn]:
    def deco(fn: PolicyFn) -> PolicyFn:
        if name in _POLICIES:
            raise RuntimeError(f"policy {name!r} registered twice")
        _POLICIES[name] = fn
        return fn

    return deco


def policy_names() -> tuple[str, ...]:
    return tuple(sorted(_POLICIES))


def get_policy(name: str) -> PolicyFn:
    try:
        return _POLICIES[name]
    except KeyError:
        raise InputError(
            f"unknown policy {name!r}",
            hint=f"choose one of: {', '.join(policy_names())}",
            context={"policy": name},
        ) from None
