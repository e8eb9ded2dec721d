"""Pure parsers of the values trace files hold: Slurm durations, time limits, timestamps,
memory sizes, TRES strings, job states. Each raises :class:`ValueError` on a bad value; the
readers turn that into an error naming the file, line and field (:mod:`.rows`).
"""

from __future__ import annotations

import functools
import math
import re
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from ..model.units import parse_mem_mib
from .record import JobState

#: Slurm's words for "no limit" / "not known" in time-limit fields.
NO_LIMIT_WORDS = frozenset({"UNLIMITED", "PARTITION_LIMIT", "INVALID", "NONE", "UNKNOWN", ""})
#: Slurm's words for "no time" in Start/End fields.
NO_TIME_WORDS = frozenset({"NONE", "UNKNOWN", "N/A", ""})

_DURATION_RE = re.compile(
    r"^(?:(?P<days>\d+)-)?(?P<a>\d+)(?::(?P<b>\d+(?:\.\d+)?))?(?::(?P<c>\d+(?:\.\d+)?))?$"
)


def parse_slurm_duration(text: str) -> float:
    """A Slurm time string in seconds, with Slurm's own reading of each form.

    ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM``, ``D-HH:MM:SS``, a bare number of minutes
    (``-t 30``), and fractional seconds (``00:01.500``, as in TotalCPU).

    >>> parse_slurm_duration("1-02:03:04")
    93784.0
    >>> parse_slurm_duration("05:30")
    330.0
    >>> parse_slurm_duration("2-12")
    216000.0
    """
    match = _DURATION_RE.match(text.strip())
    if not match:
        raise ValueError(f"not a Slurm duration: {text!r} (expected [D-]HH:MM:SS, MM:SS or D-HH)")
    days, a, b, c = match["days"], match["a"], match["b"], match["c"]
    if days is not None:  # D-HH, D-HH:MM, D-HH:MM:SS
        hours, minutes, seconds = float(a), float(b or 0), float(c or 0)
        total = int(days) * 86400 + hours * 3600 + minutes * 60 + seconds
    elif c is not None:  # HH:MM:SS
        total = float(a) * 3600 + float(b or 0) * 60 + float(c)
    elif b is not None:  # MM:SS
        total = float(a) * 60 + float(b)
    else:  # a bare number is minutes
        total = float(a) * 60
    return float(total)


def parse_time_limit(text: str) -> float | None:
    """A Slurm ``Timelimit`` in seconds; ``None`` for ``UNLIMITED``, ``Partition_Limit``,
    ``INVALID`` or empty.

    >>> parse_time_limit("UNLIMITED") is None
    True
    >>> parse_time_limit("00:05:00")
    300.0
    """
    if text.strip().upper() in NO_LIMIT_WORDS:
        return None
    return parse_slurm_duration(text)


def parse_time_limit_minutes(text: str) -> float | None:
    """Slurm ``TimelimitRaw`` (whole minutes) in seconds; ``None`` for the no-limit words."""
    if text.strip().upper() in NO_LIMIT_WORDS:
        return None
    return parse_count(text) * 60.0


_PANDAS_TIMEDELTA_RE = re.compile(
    r"^(?P<sign>-)?(?P<days>\d+) days?(?: (?P<h>\d+):(?P<m>\d{2}):(?P<s>\d{2}(?:\.\d+)?))?$"
)


def parse_pandas_timedelta(text: str) -> float | None:
    """A pandas ``Timedelta`` as printed (``0 days 00:40:00.000000000``) in seconds;
    ``None`` for ``NaT`` or empty."""
    stripped = text.strip()
    if stripped in ("", "NaT"):
        return None
    match = _PANDAS_TIMEDELTA_RE.match(stripped)
    if not match:
        raise ValueError(f"not a pandas Timedelta: {text!r} (expected e.g. '0 days 00:40:00')")
    total = int(match["days"]) * 86400.0
    if match["h"] is not None:
        total += int(match["h"]) * 3600 + int(match["m"]) * 60 + float(match["s"])
    return -total if match["sign"] else total


@functools.cache
def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``; :class:`ValueError` if unknown."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (use an IANA name such as 'UTC')") from None


def parse_timestamp(text: str, tz: str = "UTC") -> float:
    """An ISO 8601 date-time in seconds since the epoch. A time without a zone is read in
    ``tz``; ``YYYY-MM-DD HH:MM:SS`` and ``…T…`` both work, with or without ``+HH:MM``/``Z``.

    >>> parse_timestamp("1970-01-02T00:00:00")
    86400.0
    >>> parse_timestamp("2012-12-13 00:00:35+00:00")
    1355356835.0
    """
    stripped = text.strip()
    try:
        when = datetime.fromisoformat(stripped)
    except ValueError:
        raise ValueError(f"not an ISO 8601 date-time: {text!r}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=zone(tz) if tz != "UTC" else UTC)
    return when.timestamp()


def parse_slurm_time(text: str, tz: str = "UTC") -> float | None:
    """A Slurm ``Submit``/``Start``/``End`` field: ISO local time (read in ``tz``), or epoch
    seconds (``SLURM_TIME_FORMAT=%s``); ``None`` for ``None``, ``Unknown`` or empty."""
    stripped = text.strip()
    if stripped.upper() in NO_TIME_WORDS:
        return None
    if stripped.isdigit():
        return float(stripped)
    return parse_timestamp(stripped, tz)


def parse_count(text: str) -> int:
    """A whole number >= 0 (``"4"``, ``"4.0"``)."""
    value = parse_number(text)
    if value != int(value):
        raise ValueError(f"not a whole number: {text!r}")
    return int(value)


def parse_number(text: str) -> float:
    """A finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a finite number >= 0: {text!r}")
    return value


def parse_memory(text: str, default_unit: str = "M") -> float:
    """A memory size in MiB. Slurm-style suffixes K/M/G/T/P (powers of 1024); a bare number is
    in ``default_unit``. Old ``ReqMem`` values end in ``n`` (per node) or ``c`` (per CPU):
    use :func:`parse_req_mem` for those."""
    stripped = text.strip()
    if stripped and stripped[-1].isdigit():
        stripped += default_unit
    return parse_mem_mib(stripped)


def parse_req_mem(text: str) -> tuple[float, str]:
    """Slurm ``ReqMem``: (MiB, per) where per is ``"job"``, ``"node"`` or ``"cpu"``.

    Slurm before 21.08 printed ``4000Mn`` (per node) and ``1500Mc`` (per CPU); later ones
    print the job's total (``2G``)."""
    stripped = text.strip()
    per = "job"
    if stripped[-1:] in ("n", "c"):
        per = "node" if stripped[-1] == "n" else "cpu"
        stripped = stripped[:-1]
    return parse_memory(stripped), per


def tres_resources(text: str) -> dict[str, float]:
    """The cpu, mem (MiB), gpu and node counts of a TRES string (``ReqTRES``/``AllocTRES``).

    ``billing=2,cpu=2,gres/gpu=2,mem=3G,node=1`` -> ``{"cpu": 2, "mem": 3072, "gpu": 2,
    "node": 1}``. ``gres/gpu`` counts all GPUs; typed entries (``gres/gpu:a100=2``) are
    only summed when the untyped total is absent, so nothing is counted twice. Other TRES
    (billing, energy, licenses …) are ignored.
    """
    out: dict[str, float] = {}
    typed_gpus = 0.0
    stripped = text.strip()
    if not stripped or stripped.upper() in ("(NULL)", "N/A"):
        return out
    for item in stripped.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            raise ValueError(f"not a TRES list (item {item!r} has no '='): {text!r}")
        key = key.strip().lower()
        if key == "mem":
            out["mem"] = parse_memory(value)
        elif key in ("cpu", "node"):
            out[key] = parse_number(value)
        elif key == "gres/gpu":
            out["gpu"] = parse_number(value)
        elif key.startswith("gres/gpu:"):
            typed_gpus += parse_number(value)
    if "gpu" not in out and typed_gpus:
        out["gpu"] = typed_gpus
    return out


#: Slurm job states (``sacct`` State, ``--json`` state.current, LANL Mustang job_status)
#: and common words of other exports, normalized.
_STATE_WORDS: dict[str, JobState] = {
    "COMPLETED": JobState.COMPLETED,
    "COMPLETE": JobState.COMPLETED,
    "CD": JobState.COMPLETED,
    "SUCCESS": JobState.COMPLETED,
    "SUCCEEDED": JobState.COMPLETED,
    "PASS": JobState.COMPLETED,
    "PASSED": JobState.COMPLETED,
    "FINISHED": JobState.COMPLETED,
    "FAILED": JobState.FAILED,
    "FAIL": JobState.FAILED,
    "F": JobState.FAILED,
    "ERROR": JobState.FAILED,
    "BOOT_FAIL": JobState.NODE_FAIL,
    "BF": JobState.NODE_FAIL,
    "CANCELLED": JobState.CANCELLED,
    "CANCELED": JobState.CANCELLED,
    "CA": JobState.CANCELLED,
    "KILLED": JobState.CANCELLED,
    "REVOKED": JobState.CANCELLED,
    "TIMEOUT": JobState.TIMEOUT,
    "TO": JobState.TIMEOUT,
    "DEADLINE": JobState.TIMEOUT,
    "DL": JobState.TIMEOUT,
    "NODE_FAIL": JobState.NODE_FAIL,
    "NF": JobState.NODE_FAIL,
    "OUT_OF_MEMORY": JobState.OUT_OF_MEMORY,
    "OOM": JobState.OUT_OF_MEMORY,
    "PREEMPTED": JobState.PREEMPTED,
    "PR": JobState.PREEMPTED,
    "RUNNING": JobState.RUNNING,
    "R": JobState.RUNNING,
    "COMPLETING": JobState.RUNNING,
    "CG": JobState.RUNNING,
    "SUSPENDED": JobState.RUNNING,
    "S": JobState.RUNNING,
    "RESIZING": JobState.RUNNING,
    "STOPPED": JobState.RUNNING,
    "PENDING": JobState.PENDING,
    "PD": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "QUEUED": JobState.PENDING,
    "UNKNOWN": JobState.UNKNOWN,
    "": JobState.UNKNOWN,
}


def normalize_state(text: str) -> JobState | None:
    """A state word as :class:`JobState`; ``None`` if the word is not known.

    Slurm's ``CANCELLED by 1000`` reads as cancelled; case does not matter.

    >>> normalize_state("CANCELLED by 0")
    <JobState.CANCELLED: 'cancelled'>
    """
    word = text.strip().split(" ", 1)[0].upper().rstrip("+")
    return _STATE_WORDS.get(word)
