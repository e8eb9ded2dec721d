"""The plausible range of every value a trace record holds, checked once for every format
(pure).

Readers parse what a field says; this module says whether a parsed record can be a real
job. A value outside its range is a malformed line like any other (reported with its line,
field and value, or skipped and listed with ``--skip-bad``), so that no single row can make
a replay allocate memory or time for a span no real job covers:

=================  =====================================================================
field              range (:mod:`slurm_mlsched.ranges`, the one set every input uses)
=================  =====================================================================
submit/start/end   wall-clock traces: ``DATES`` (1990–2100);
                   offset traces: ``TRACE_OFFSET_S`` (0 .. 100 years)
duration, limit    ``TRACE_DURATION_S`` (0 .. 10 years)
GPUs, CPUs, nodes  ``TRACE_COUNT`` (0 .. 1,000,000), workers ``TRACE_WORKERS`` (from 1)
memory             ``TRACE_MEM_MIB`` (0 .. 1 EiB)
=================  =====================================================================

Every number must also be finite (no ``inf``, no ``NaN``). Job ids must be distinct: a
repeated id is the later line's fault (:func:`problems` reports it there).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime

from ..ranges import (
    DATES,
    EARLIEST,
    LATEST,
    TRACE_COUNT,
    TRACE_DURATION_S,
    TRACE_MEM_MIB,
    TRACE_OFFSET_S,
    TRACE_WORKERS,
    Range,
)
from .record import TimeBase, TraceRecord
from .rows import BadField

MAX_OFFSET_S = TRACE_OFFSET_S.hi
MAX_DURATION_S = TRACE_DURATION_S.hi
MAX_COUNT = int(TRACE_COUNT.hi)
MAX_MEM_MIB = TRACE_MEM_MIB.hi


def check(rec: TraceRecord, time_base: TimeBase) -> None:
    """Raise :class:`BadField` for the first field of ``rec`` outside its range."""
    window = _time_window(time_base)
    for name in ("submit", "start", "end"):
        value = getattr(rec, name)
        if value is not None and value not in window:
            raise BadField(name, _when(value, time_base), _time_problem(time_base))
    for name in ("duration_s", "time_limit_s"):
        value = getattr(rec, name)
        if value is not None and value not in TRACE_DURATION_S:
            raise BadField(
                name, value, f"must be 0 to {MAX_DURATION_S / 86400 / 365.25:g} years in seconds"
            )
    for name in ("gpus", "cpus", "nodes"):
        value = getattr(rec, name)
        if value is not None and value not in TRACE_COUNT:
            raise BadField(name, value, f"must be a count from 0 to {MAX_COUNT:,}")
    if rec.workers is not None and rec.workers not in TRACE_WORKERS:
        raise BadField("workers", rec.workers, f"must be a count from 1 to {MAX_COUNT:,}")
    if rec.mem_mb is not None and rec.mem_mb not in TRACE_MEM_MIB:
        raise BadField("mem_mb", rec.mem_mb, "must be 0 to 1 EiB (in MiB)")


def problems(
    records: tuple[TraceRecord, ...], time_base: TimeBase
) -> Iterator[tuple[TraceRecord, BadField]]:
    """Every record that cannot be a real job, with why (ranges, then repeated ids)."""
    first_line: dict[str, int] = {}
    for rec in records:
        try:
            check(rec, time_base)
        except BadField as err:
            yield rec, err
            continue
        seen = first_line.setdefault(rec.job_id, rec.line)
        if seen != rec.line:
            yield rec, BadField("job_id", rec.job_id, f"repeats the job id of line {seen}")


def _time_window(time_base: TimeBase) -> Range:
    return DATES if time_base == TimeBase.EPOCH else TRACE_OFFSET_S


def _time_problem(time_base: TimeBase) -> str:
    if time_base == TimeBase.EPOCH:
        return (
            f"is outside the plausible window {EARLIEST:%Y-%m-%d} .. {LATEST:%Y-%m-%d} "
            "(a typo, or a placeholder date?)"
        )
    return f"must be 0 to {MAX_OFFSET_S / 86400 / 365.25:g} years after the trace's start"


def _when(value: float, time_base: TimeBase) -> object:
    if time_base != TimeBase.EPOCH or not _finite(value):
        return value
    try:
        return datetime.fromtimestamp(value, UTC).isoformat()
    except (OverflowError, OSError, ValueError):
        return value


def _finite(value: float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a float
        return False
