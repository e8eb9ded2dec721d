"""Policies are looked up by name (no if-chains on names). Two kinds, each with one signature:

* **arrival** policies, ``(JobRequest, ClusterSnapshot, PlacementParams) -> Decision``:
  decide once, on the job's arrival, against the reservations in the snapshot (``yu-rr``,
  ``exact``, ``fifo-*``, ``oasis``); ``place()`` and the replay engine call them;
* **re-allocating** policies, ``(tuple[RunningJob, ...], ClusterSnapshot, int,
  PlacementParams) -> tuple[Allocation | None, ...]``: at every arrival and completion,
  the worker/PS counts and machines of every active job (``optimus``, ``drf``;
  :mod:`.reallocation`). Only the replay runs them (``sim.realloc``): a Slurm job keeps
  its allocation, so ``place()`` refuses them.

* **queue** policies, ``(tuple[PendingJob, ...], ClusterSnapshot, PlacementParams,
  Sequence[JobRequest]) -> QueueStep``: late binding (MODEL.md §4b,
  :mod:`.late_binding`): at every event, the waiting jobs re-planned against the running
  ones; only what starts now is committed.
  ``yu-rr`` has both an arrival form (``binding: early``, and ``place()``) and a queue
  form (``binding: late``, the replay default); ``qssf`` has only the queue form.

A policy may also register a **prepare** hook, ``(requests, cluster, params) -> params``,
which the replay calls once with all the jobs before the run: the place for constants a
policy takes from the whole trace (OASiS's price bounds U and L).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from ..errors import InputError
from ..model import ClusterSnapshot, Decision, JobRequest
from .late_binding import PendingJob, QueueStep
from .params import Binding, PlacementParams
from .reallocation import Allocation, RunningJob

PolicyFn = Callable[[JobRequest, ClusterSnapshot, PlacementParams], Decision]
ReallocateFn = Callable[
    [tuple[RunningJob, ...], ClusterSnapshot, int, PlacementParams],
    tuple[Allocation | None, ...],
]
QueueFn = Callable[
    [tuple[PendingJob, ...], ClusterSnapshot, PlacementParams, Sequence[JobRequest]], QueueStep
]
"""``queue(pending, snapshot, params, recent)``: ``recent`` holds the jobs that arrived in
the last ``params.lookahead_max_s`` seconds (waiting, running or done), in arrival order:
what a policy may forecast from (:mod:`.lookahead`)."""
WakeupFn = Callable[
    [tuple[RunningJob, ...], tuple[Allocation | None, ...], int, float, PlacementParams],
    int | None,
]
"""``wakeup(jobs, allocations, slot, slot_seconds, params)``: the next slot at which a
re-allocating policy wants to be called again although no job arrives or ends (Tiresias's
demotions), or None."""
PrepareFn = Callable[[Sequence[JobRequest], ClusterSnapshot, PlacementParams], PlacementParams]

_POLICIES: dict[str, PolicyFn] = {}
_LOADED = False


def _load() -> None:
    """Import every policy module once, so that each registers itself (on the first
    lookup: importing the registry, or the placement package, stays light)."""
    global _LOADED
    if not _LOADED:
        _LOADED = True
        from . import policies  # noqa: F401


_REALLOCATING: dict[str, ReallocateFn] = {}
_PREPARE: dict[str, PrepareFn] = {}
_QUEUE: dict[str, QueueFn] = {}
_WAKEUP: dict[str, WakeupFn] = {}


def _claim(name: str) -> None:
    if name in _POLICIES or name in _REALLOCATING:
        raise RuntimeError(f"policy {name!r} registered twice")


_P = TypeVar("_P", bound=PolicyFn)


def register(name: str, *, prepare: PrepareFn | None = None) -> Callable[[_P], _P]:
    """Register an arrival policy (and its optional trace-level ``prepare`` hook)."""

    def deco(fn: _P) -> _P:
        _claim(name)
        _POLICIES[name] = fn
        if prepare is not None:
            _PREPARE[name] = prepare
        return fn

    return deco


def register_reallocating(
    name: str, *, wakeup: WakeupFn | None = None
) -> Callable[[ReallocateFn], ReallocateFn]:
    """Register a re-allocating policy (replay only), with its optional wake-up hook."""

    def deco(fn: ReallocateFn) -> ReallocateFn:
        _claim(name)
        _REALLOCATING[name] = fn
        if wakeup is not None:
            _WAKEUP[name] = wakeup
        return fn

    return deco


def register_queue(name: str) -> Callable[[QueueFn], QueueFn]:
    """Register the queue (late-binding) form of a policy; ``name`` may also have an
    arrival form (used with ``binding: early`` and by ``place()``)."""

    def deco(fn: QueueFn) -> QueueFn:
        if name in _QUEUE or name in _REALLOCATING:
            raise RuntimeError(f"policy {name!r} registered twice")
        _QUEUE[name] = fn
        return fn

    return deco


def policy_names() -> tuple[str, ...]:
    _load()
    return tuple(sorted({*_POLICIES, *_REALLOCATING, *_QUEUE}))


def live_policy_names() -> tuple[str, ...]:
    """The policies ``plan`` and ``submit`` can use (arrival policies, which ``place()``
    calls); the others run in replay only."""
    _load()
    return tuple(sorted(_POLICIES))


def _unknown(name: str) -> InputError:
    return InputError(
        f"unknown policy {name!r}",
        hint=f"choose one of: {', '.join(policy_names())}",
        context={"policy": name},
    )


def policy_function(name: str) -> Callable[..., object]:
    """The registered function of either kind (for validation and ``mlsub policies``)."""
    _load()
    fn: Callable[..., object] | None = (
        _POLICIES.get(name) or _REALLOCATING.get(name) or _QUEUE.get(name)
    )
    if fn is None:
        raise _unknown(name)
    return fn


def get_policy(name: str) -> PolicyFn:
    """The arrival policy ``name``; a re-allocating one is an :class:`InputError` here."""
    _load()
    try:
        return _POLICIES[name]
    except KeyError:
        if name in _REALLOCATING:
            raise InputError(
                f"policy {name!r} re-allocates running jobs at every arrival and completion: "
                "it runs in replay only",
                hint=f"replay a trace with it (mlsub replay TRACE --policy {name}), or plan "
                f"with one of: {', '.join(sorted(_POLICIES))}",
                context={"policy": name},
            ) from None
        if name in _QUEUE:
            raise InputError(
                f"policy {name!r} decides over the whole pending queue at every event: it "
                "runs in replay only",
                hint=f"replay a trace with it (mlsub replay TRACE --policy {name}), or plan "
                f"with one of: {', '.join(sorted(_POLICIES))}",
                context={"policy": name},
            ) from None
        raise _unknown(name) from None


def get_queue(name: str, params: PlacementParams) -> QueueFn | None:
    """The queue form the replay runs ``name`` with: the only form of a queue-only policy,
    the late-binding form of one that has both when ``params.binding`` is late; else
    None."""
    _load()
    fn = _QUEUE.get(name)
    if fn is None:
        if name not in _POLICIES and name not in _REALLOCATING:
            raise _unknown(name)
        return None
    if name in _POLICIES and params.binding is not Binding.LATE:
        return None
    return fn


def get_wakeup(name: str) -> WakeupFn | None:
    """The wake-up hook of a re-allocating policy (None: called at arrivals and ends only)."""
    _load()
    return _WAKEUP.get(name)


def get_reallocating(name: str) -> ReallocateFn | None:
    """The re-allocating policy ``name``, None when ``name`` is an arrival policy."""
    _load()
    if name in _REALLOCATING:
        return _REALLOCATING[name]
    if name in _POLICIES or name in _QUEUE:
        return None
    raise _unknown(name)


def prepare_params(
    name: str, requests: Sequence[JobRequest], cluster: ClusterSnapshot, params: PlacementParams
) -> PlacementParams:
    """``params`` completed with the policy's trace-level constants (unchanged when the
    policy has no prepare hook)."""
    _load()
    hook = _PREPARE.get(name)
    return params if hook is None else hook(requests, cluster, params)
