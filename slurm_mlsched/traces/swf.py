"""Reader of the Standard Workload Format (Parallel Workloads Archive, SWF v2.2).

Header lines start with ``;`` (``; UnixStartTime: 749458803`` …); each job is one line of 18
whitespace-separated numbers, ``-1`` meaning unknown:

====  ====================  ==========================================================
 #    field                 becomes
====  ====================  ==========================================================
 1    job number            ``job_id``
 2    submit time (s)       ``submit`` (+ ``UnixStartTime`` when the header gives it)
 3    wait time (s)         ``start`` = submit + wait (when known)
 4    run time (s)          ``duration_s``; ``end`` = start + run
 5    allocated processors  ``cpus`` (else field 8)
 6    average CPU time      ``extra``
 7    used memory (KB/proc) ``extra``
 8    requested processors  ``cpus`` when field 5 is unknown
 9    requested time (s)    ``time_limit_s``
 10   requested memory      ``mem_mb`` = KB per processor × processors / 1024
 11   status                ``state``: 1 completed, 0 failed, 5 cancelled, 2/3/4 partial
                            executions (3 ended completed, 4 failed, 2 unknown)
 12   user id               ``user``
 13   group id              ``extra``
 14   executable number     ``name``
 15   queue number          ``extra``
 16   partition number      ``partition``
 17   preceding job         ``extra``
 18   think time            ``extra``
====  ====================  ==========================================================

SWF has no GPUs (``gpus`` = 0) and no node counts (processors are not nodes).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from .record import JobState, TimeBase, Trace, TraceRecord
from .rows import BadField, LineErrors, ReadOptions

SWF_FIELDS = (
    "job",
    "submit",
    "wait",
    "run",
    "alloc_procs",
    "avg_cpu",
    "used_mem",
    "req_procs",
    "req_time",
    "req_mem",
    "status",
    "user",
    "group",
    "app",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
_STATUS: dict[int, JobState] = {
    1: JobState.COMPLETED,
    0: JobState.FAILED,
    5: JobState.CANCELLED,
    3: JobState.COMPLETED,
    4: JobState.FAILED,
    2: JobState.UNKNOWN,
    -1: JobState.UNKNOWN,
}


def parse_swf_header(lines: Iterable[str]) -> dict[str, str]:
    """The ``; Key: value`` pairs of an SWF header (first value of a repeated key)."""
    header: dict[str, str] = {}
    for line in lines:
        stripped = line.strip()
        if not stripped:
            continue
        if not stripped.startswith(";"):
            break
        key, sep, value = stripped[1:].partition(":")
        if sep and key.strip() and " " not in key.strip():
            header.setdefault(key.strip(), value.strip())
    return header


def parse_swf(lines: Iterable[str], opts: ReadOptions | None = None) -> Trace:
    """An SWF log (the lines of the plain text; the opener unzips ``.gz``)."""
    opts = opts or ReadOptions()
    errors = LineErrors(opts, "swf")
    header: dict[str, str] = {}
    origin: float | None = None
    in_header = True
    records: list[TraceRecord] = []
    for number, raw in enumerate(lines, start=1):
        errors.total = number
        stripped = raw.strip()
        if not stripped:
            errors.blank += 1
            continue
        if stripped.startswith(";"):
            errors.header += 1  # header and comment lines
            if in_header:
                header.update(parse_swf_header([stripped]))
            continue
        if in_header:
            in_header = False
            origin = _unix_start(header, errors)
        try:
            records.append(_swf_record(number, stripped, origin))
        except BadField as exc:
            errors.bad(number, exc)
    if in_header:
        origin = _unix_start(header, errors)
    notes: list[str] = []
    if origin is not None:
        notes.append(f"times = UnixStartTime {origin:.0f} + the file's offsets")
    else:
        notes.append("no UnixStartTime in the header: times are offsets from the log's start")
    for key in ("Computer", "Installation", "TimeZoneString"):
        if key in header:
            notes.append(f"{key}: {header[key]}")
    time_base = TimeBase.EPOCH if origin is not None else TimeBase.OFFSET
    return Trace(
        tuple(records),
        "swf",
        opts.path,
        time_base,
        tuple(errors.skipped),
        tuple(notes),
        errors.counts(),
    )


def _unix_start(header: dict[str, str], errors: LineErrors) -> float | None:
    text = header.get("UnixStartTime")
    if text is None:
        return None
    try:
        return float(text)
    except ValueError:
        raise errors.whole_file(
            f"header UnixStartTime is not a number: {text!r}", "fix the header line"
        ) from None


#: Largest magnitude an SWF field may have (seconds, counts, KB: 1e15 is far beyond any).
_MAX_FIELD_VALUE = 1e15


def _swf_record(line: int, text: str, origin: float | None) -> TraceRecord:
    parts = text.split()
    if len(parts) != len(SWF_FIELDS):
        raise BadField("(row)", text, f"{len(parts)} fields, SWF has {len(SWF_FIELDS)}")
    values: dict[str, float] = {}
    for name, part in zip(SWF_FIELDS, parts, strict=True):
        try:
            values[name] = float(part)
        except ValueError:
            raise BadField(name, part, "not a number") from None
        if not math.isfinite(values[name]) or abs(values[name]) > _MAX_FIELD_VALUE:
            raise BadField(name, part, f"not a finite number of at most {_MAX_FIELD_VALUE:g}")

    def known(name: str) -> float | None:
        value = values[name]
        if value < 0:
            if value != -1:
                raise BadField(name, parts[SWF_FIELDS.index(name)], "negative (only -1 = unknown)")
            return None
        return value

    submit = known("submit")
    if submit is None:
        raise BadField("submit", parts[1], "the submit time is unknown (-1)")
    if origin is not None:
        submit += origin
    wait, run = known("wait"), known("run")
    start = submit + wait if wait is not None else None
    end = start + run if start is not None and run is not None else None
    procs = known("alloc_procs")
    if procs is None:
        procs = known("req_procs")
    req_mem = known("req_mem")
    mem = req_mem * procs / 1024.0 if req_mem is not None and procs is not None else None
    status = int(values["status"])
    if status not in _STATUS:
        raise BadField("status", parts[10], "not an SWF status (-1, 0 … 5)")
    user, app, partition = known("user"), known("app"), known("partition")
    extra = tuple(
        (name, parts[i])
        for i, name in enumerate(SWF_FIELDS)
        if name in ("avg_cpu", "used_mem", "group", "queue", "preceding_job", "think_time")
        and values[name] != -1
    )
    return TraceRecord(
        job_id=parts[0],
        submit=submit,
        source="swf",
        line=line,
        start=start,
        end=end,
        duration_s=run,
        time_limit_s=known("req_time"),
        gpus=0,
        cpus=int(procs) if procs is not None else None,
        mem_mb=mem,
        state=_STATUS[status],
        user=str(int(user)) if user is not None else None,
        name=str(int(app)) if app is not None else None,
        partition=str(int(partition)) if partition is not None else None,
        extra=extra,
    )
