"""The submit window of a replay (``mlsub replay --since/--until``): which jobs of a trace
are replayed, by when they were submitted. Pure: no I/O.

A bound is written either as

* an ISO 8601 date or date-time (``2017-10-03``, ``2017-10-03T08:00``, with or without a
  zone; without one it is read in the zone the trace's own times were read in, so a
  Philly day is a US Pacific day, as the trace's timestamps are) — only for traces whose
  times are dates (:attr:`TimeBase.EPOCH`); or
* ``+DURATION`` from the first submit of the whole input: ``+7d``, ``+12h``, ``+30m``,
  ``+90s``, ``+3600`` (seconds), decimals allowed (``+1.5d``) — for any trace, also those
  whose times are offsets from their own start (Pollux, Sia).

The window is half-open, ``since ≤ submit < until`` (either side may be open), so
consecutive windows (``--since +0d --until +7d``, ``--since +7d --until +14d``) split a trace
without a job in both. It is applied before ``--limit`` (the first N jobs *of the window*)
and before ``--load`` (which rescales the window's arrivals).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from ..errors import InputError
from .record import TimeBase
from .values import parse_timestamp, zone

_DURATION = re.compile(r"^\+\s*(\d+(?:\.\d+)?)\s*([smhd]?)$")
_UNIT_S = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_HINT = (
    "write an ISO 8601 date or date-time (e.g. 2017-10-03 or 2017-10-03T08:00:00Z) or "
    "+DURATION from the trace's first submit (e.g. +7d, +12h, +30m, +90s)"
)


@dataclass(frozen=True)
class SubmitWindow:
    """``since ≤ submit < until`` in the trace's own seconds (epoch or offset); ``None`` =
    open on that side. ``text`` is the window as the user wrote it, for notes."""

    since: float | None
    until: float | None
    text: str

    def holds(self, submit: float) -> bool:
        """Whether a job submitted at ``submit`` is in the window."""
        if self.since is not None and submit < self.since:
            return False
        return self.until is None or submit < self.until


@dataclass(frozen=True)
class WindowCut:
    """What a window kept of a list of submit times: the indices kept (in input order)
    and how many were before and after it."""

    kept: tuple[int, ...]
    before: int
    after: int

    @property
    def outside(self) -> int:
        return self.before + self.after


def parse_bound(
    text: str,
    option: str,
    *,
    time_base: TimeBase,
    tz: str,
    first_submit: float,
) -> float:
    """One bound of the window in the trace's seconds (module docstring for the forms).

    ``first_submit``: the earliest submit of the whole input (the origin of ``+DURATION``);
    ``tz``: the zone a date-time without one is read in. Raises :class:`InputError`
    naming ``option`` on anything else."""
    stripped = text.strip()
    match = _DURATION.match(stripped)
    if match:
        return first_submit + float(match.group(1)) * _UNIT_S[match.group(2)]
    if stripped.startswith(("+", "-")) or not stripped[:1].isdigit():
        raise InputError(
            f"option {option} must be a date-time or +DURATION, got {text!r}",
            hint=_HINT,
            context={"option": option, "value": text},
        )
    if time_base is not TimeBase.EPOCH:
        raise InputError(
            f"option {option} {text!r} is a date, but this trace's times are offsets from "
            "its own start (it has no dates)",
            hint=f"give {option} as +DURATION from the trace's first submit, e.g. {option} +7d",
            context={"option": option, "value": text},
        )
    try:
        zone(tz)
        return parse_timestamp(stripped, tz)
    except ValueError:
        raise InputError(
            f"option {option} must be a date-time or +DURATION, got {text!r}",
            hint=_HINT,
            context={"option": option, "value": text},
        ) from None


def submit_window(
    since: str | None,
    until: str | None,
    *,
    time_base: TimeBase,
    tz: str,
    submits: Sequence[float],
) -> SubmitWindow | None:
    """The window ``--since``/``--until`` give over an input whose jobs were submitted at
    ``submits`` (None when neither is given). Raises :class:`InputError` when ``until`` is
    not after ``since``."""
    if since is None and until is None:
        return None
    first = min(submits, default=0.0)
    lo = (
        None
        if since is None
        else parse_bound(since, "--since", time_base=time_base, tz=tz, first_submit=first)
    )
    hi = (
        None
        if until is None
        else parse_bound(until, "--until", time_base=time_base, tz=tz, first_submit=first)
    )
    if lo is not None and hi is not None and hi <= lo:
        raise InputError(
            f"option --until ({until}) must be later than --since ({since})",
            hint="the window is since <= submit < until; swap or widen them",
            context={"option": "--until", "value": until, "since": since},
        )
    parts = [f"--since {since}" if since is not None else "", f"--until {until}" if until else ""]
    return SubmitWindow(lo, hi, " ".join(p for p in parts if p))


def cut(window: SubmitWindow, submits: Sequence[float]) -> WindowCut:
    """The jobs ``window`` keeps of those submitted at ``submits``."""
    kept: list[int] = []
    before = after = 0
    for i, submit in enumerate(submits):
        if window.holds(submit):
            kept.append(i)
        elif window.since is not None and submit < window.since:
            before += 1
        else:
            after += 1
    return WindowCut(tuple(kept), before, after)


def describe_time(seconds: float, time_base: TimeBase, tz: str) -> str:
    """A trace time for a message: an ISO date-time in ``tz`` for dated traces, else
    ``+N s`` from the trace's origin."""
    if time_base is TimeBase.EPOCH:
        when = datetime.fromtimestamp(seconds, tz=UTC)  # tz: a zone the reader checked
        return (when if tz == "UTC" else when.astimezone(zone(tz))).isoformat(timespec="seconds")
    return f"+{seconds:g} s"


def empty_window_error(
    window: SubmitWindow, submits: Sequence[float], time_base: TimeBase, tz: str, name: str
) -> InputError:
    """The error for a window that holds no job of ``name``: says where its jobs are."""
    if submits:
        span = (
            f"its {len(submits)} job(s) were submitted from "
            f"{describe_time(min(submits), time_base, tz)} to "
            f"{describe_time(max(submits), time_base, tz)}"
        )
    else:
        span = "it has no jobs"
    return InputError(
        f"no job of {name} was submitted in the window {window.text}: {span}",
        hint="move or widen --since/--until (times without a zone are read in "
        f"{tz}; +DURATION counts from the first submit)",
        context={"option": "--since/--until", "value": window.text},
    )


def select(
    since: str | None,
    until: str | None,
    submits: Sequence[float],
    *,
    time_base: TimeBase,
    tz: str,
    name: str,
) -> tuple[WindowCut, str] | None:
    """The ``--since/--until`` window over an input (``name``) whose jobs were submitted
    at ``submits``: what it keeps and the note that says so; None without a window.
    Raises :class:`InputError` for a bad window or one that holds no job."""
    window = submit_window(since, until, time_base=time_base, tz=tz, submits=submits)
    if window is None:
        return None
    kept = cut(window, submits)
    if not kept.kept:
        raise empty_window_error(window, submits, time_base, tz, name)
    note = (
        f"window {window.text}: {len(kept.kept)} of {len(submits)} job(s) submitted in it "
        f"({kept.before} before, {kept.after} after: left out)"
    )
    if time_base is TimeBase.EPOCH:
        note += f"; dates without a zone read in {tz}"
    return kept, note
