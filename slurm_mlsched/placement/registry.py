"""Policies looked up by name (no if-chains on names), read from the one table.

The table is :data:`.policy_table.POLICIES` (name, kind, where it runs, the function;
the signatures of the three kinds are documented there). It is loaded on the first
lookup, so that importing the registry, or the placement package, stays light: a command
that never places (``mlsub history``, ``--help``) does not load the LP and the solver.
Nothing registers itself: a policy module defines functions; the table names them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, cast

from ..errors import InputError
from ..model import ClusterSnapshot, JobRequest
from .params import ArrivalFn, Binding, PlacementParams

if TYPE_CHECKING:
    from .policy_table import PolicyRow, PrepareFn, QueueFn, ReallocateFn, WakeupFn


@dataclass
class _Index:
    """The table by kind and name (built once)."""

    arrival: dict[str, ArrivalFn] = field(default_factory=dict)
    reallocating: dict[str, ReallocateFn] = field(default_factory=dict)
    queue: dict[str, QueueFn] = field(default_factory=dict)
    prepare: dict[str, PrepareFn] = field(default_factory=dict)
    wakeup: dict[str, WakeupFn] = field(default_factory=dict)
    rows: tuple[PolicyRow, ...] = ()


_INDEX: _Index | None = None


def index_rows(rows: Sequence[PolicyRow]) -> _Index:
    """The rows by kind and name; a name twice in one kind, or a re-allocating name that
    also has another form, is a :class:`RuntimeError` (a defect of the table)."""
    from .policy_table import Kind

    out = _Index(rows=tuple(rows))
    for row in rows:
        forms: dict[str, object] = {
            Kind.ARRIVAL: out.arrival,
            Kind.REALLOCATING: out.reallocating,
            Kind.QUEUE: out.queue,
        }
        if row.name in cast("dict[str, object]", forms[row.kind]):
            raise RuntimeError(f"policy {row.name!r} has two {row.kind} rows")
        if row.kind is Kind.ARRIVAL:
            out.arrival[row.name] = cast("ArrivalFn", row.fn)
        elif row.kind is Kind.REALLOCATING:
            out.reallocating[row.name] = cast("ReallocateFn", row.fn)
        else:
            out.queue[row.name] = cast("QueueFn", row.fn)
        if row.prepare is not None:
            out.prepare[row.name] = row.prepare
        if row.wakeup is not None:
            out.wakeup[row.name] = row.wakeup
    clash = set(out.reallocating) & (set(out.arrival) | set(out.queue))
    if clash:
        raise RuntimeError(f"re-allocating policies with another form too: {sorted(clash)}")
    return out


def _index() -> _Index:
    global _INDEX
    if _INDEX is None:
        from .policy_table import POLICIES

        _INDEX = index_rows(POLICIES)
    return _INDEX


def policy_rows() -> tuple[PolicyRow, ...]:
    """The table, in its order (one row per form)."""
    return _index().rows


def policy_names() -> tuple[str, ...]:
    ix = _index()
    return tuple(sorted({*ix.arrival, *ix.reallocating, *ix.queue}))


def live_policy_names() -> tuple[str, ...]:
    """The policies ``plan`` and ``submit`` can use (arrival policies, which ``place()``
    calls); the others run in replay only."""
    return tuple(sorted(_index().arrival))


def _unknown(name: str) -> InputError:
    return InputError(
        f"unknown policy {name!r}",
        hint=f"choose one of: {', '.join(policy_names())}",
        context={"policy": name},
    )


def policy_function(name: str) -> Callable[..., object]:
    """The function of ``name`` (its arrival form first), for validation and
    ``mlsub policies``."""
    ix = _index()
    fn: Callable[..., object] | None = (
        ix.arrival.get(name) or ix.reallocating.get(name) or ix.queue.get(name)
    )
    if fn is None:
        raise _unknown(name)
    return fn


def get_policy(name: str) -> ArrivalFn:
    """The arrival policy ``name``; a re-allocating or queue-only one is an
    :class:`InputError` here."""
    ix = _index()
    if name in ix.arrival:
        return ix.arrival[name]
    if name in ix.reallocating or name in ix.queue:
        what = (
            "re-allocates running jobs at every arrival and completion"
            if name in ix.reallocating
            else "decides over the whole pending queue at every event"
        )
        raise InputError(
            f"policy {name!r} {what}: it runs in replay only",
            hint=f"replay a trace with it (mlsub replay TRACE --policy {name}), or plan "
            f"with one of: {', '.join(sorted(ix.arrival))}",
            context={"policy": name},
        )
    raise _unknown(name)


def get_queue(name: str, params: PlacementParams) -> QueueFn | None:
    """The queue form the replay runs ``name`` with: the only form of a queue-only policy,
    the late-binding form of one that has both when ``params.binding`` is late; else
    None."""
    ix = _index()
    fn = ix.queue.get(name)
    if fn is None:
        if name not in ix.arrival and name not in ix.reallocating:
            raise _unknown(name)
        return None
    if name in ix.arrival and params.binding is not Binding.LATE:
        return None
    return fn


def get_wakeup(name: str) -> WakeupFn | None:
    """The wake-up hook of a re-allocating policy (None: called at arrivals and ends only)."""
    return _index().wakeup.get(name)


def get_reallocating(name: str) -> ReallocateFn | None:
    """The re-allocating policy ``name``, None when ``name`` is an arrival policy."""
    ix = _index()
    if name in ix.reallocating:
        return ix.reallocating[name]
    if name in ix.arrival or name in ix.queue:
        return None
    raise _unknown(name)


def prepare_params(
    name: str, requests: Sequence[JobRequest], cluster: ClusterSnapshot, params: PlacementParams
) -> PlacementParams:
    """``params`` completed with the policy's trace-level constants (unchanged when the
    policy has no prepare hook)."""
    hook = _index().prepare.get(name)
    return params if hook is None else hook(requests, cluster, params)
