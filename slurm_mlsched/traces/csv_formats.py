"""Readers of the fixed-layout CSV traces: Philly (``philly.csv``), the Pollux and Sia
workloads, and LANL Mustang (``../shared/traces/README.md`` §1–4). Each is a pure function
of the file's lines and :class:`~.rows.ReadOptions`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .record import TimeBase, Trace, TraceRecord
from .rows import (
    BadField,
    LineErrors,
    ReadOptions,
    StateWords,
    csv_rows,
    optional,
    parsed,
    require_columns,
)
from .values import parse_count, parse_number, parse_pandas_timedelta, parse_timestamp, zone

#: Philly's logs carry no zone; they are US Pacific (traces/README.md §1).
PHILLY_TZ = "America/Los_Angeles"
PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus")
POLLUX_COLUMNS = ("name", "time", "application", "num_replicas")
MUSTANG_COLUMNS = ("submit_time", "end_time", "job_status", "node_count", "tasks_requested")


def _tz(opts: ReadOptions, default: str, errors: LineErrors) -> str:
    tz = opts.tz or default
    try:
        zone(tz)
    except ValueError as exc:
        raise errors.whole_file(str(exc), "pass an IANA zone name such as UTC") from None
    return tz


# --- Philly ---------------------------------------------------------------------------


def parse_philly(lines: Iterable[str], opts: ReadOptions | None = None) -> Trace:
    """``timestamp,duration,num_gpus,gpu_time,cluster`` (Pollux's job-level Philly trace).

    job_id = the line number (the file has no ids); submit = ``timestamp`` read in US
    Pacific time unless ``tz`` says otherwise; ``duration`` = run time; gpus = ``num_gpus``;
    partition = ``cluster`` (the hashed virtual cluster). No user, state, CPU or memory.
    """
    opts = opts or ReadOptions()
    errors = LineErrors(opts, "philly")
    tz = _tz(opts, PHILLY_TZ, errors)
    header, rows = csv_rows(lines, errors)
    require_columns(header, PHILLY_COLUMNS, errors)
    records: list[TraceRecord] = []
    for line, row in rows:
        try:
            records.append(_philly_record(line, row, tz))
        except BadField as exc:
            errors.bad(line, exc)
    note = f"submit times have no zone in the file: read as {tz}"
    return Trace(
        tuple(records),
        "philly",
        opts.path,
        TimeBase.EPOCH,
        tuple(errors.skipped),
        (note,),
        errors.counts(),
        zone=tz,
    )


def _philly_record(line: int, row: Mapping[str, str], tz: str) -> TraceRecord:
    return TraceRecord(
        job_id=str(line),
        submit=parsed(row, "timestamp", lambda t: parse_timestamp(t, tz)),
        source="philly",
        line=line,
        duration_s=parsed(row, "duration", parse_number),
        gpus=parsed(row, "num_gpus", parse_count),
        partition=row.get("cluster") or None,
    )


# --- Pollux / Sia workloads -----------------------------------------------------------


def parse_pollux(lines: Iterable[str], opts: ReadOptions | None = None) -> Trace:
    """``name,time,application,num_replicas,batch_size`` (Pollux and Sia workloads).

    job_id = ``name``; submit = ``time`` (seconds from the workload's start: time base
    *offset*); model = ``application``; workers = gpus = ``num_replicas`` (one GPU per
    replica). No duration: these workloads are model-driven (synthesis supplies one).
    """
    opts = opts or ReadOptions()
    errors = LineErrors(opts, "pollux")
    header, rows = csv_rows(lines, errors)
    require_columns(header, POLLUX_COLUMNS, errors)
    records: list[TraceRecord] = []
    for line, row in rows:
        try:
            records.append(_pollux_record(line, row))
        except BadField as exc:
            errors.bad(line, exc)
    notes = (
        "model-driven workload: no run times; model and replica counts were assigned by "
        "the workload's authors (traces/README.md §2-3)",
    )
    return Trace(
        tuple(records),
        "pollux",
        opts.path,
        TimeBase.OFFSET,
        tuple(errors.skipped),
        notes,
        errors.counts(),
    )


def _pollux_record(line: int, row: Mapping[str, str]) -> TraceRecord:
    name = row["name"].strip()
    if not name:
        raise BadField("name", row["name"], "empty job name")
    model = row["application"].strip()
    if not model:
        raise BadField("application", row["application"], "empty application")
    replicas = parsed(row, "num_replicas", parse_count)
    if replicas < 1:
        raise BadField("num_replicas", row["num_replicas"], "must be >= 1")
    extra = (("batch_size", row["batch_size"]),) if row.get("batch_size") else ()
    return TraceRecord(
        job_id=name,
        submit=parsed(row, "time", parse_number),
        source="pollux",
        line=line,
        gpus=replicas,
        model=model,
        workers=replicas,
        name=name,
        extra=extra,
    )


# --- LANL Mustang ---------------------------------------------------------------------


def parse_mustang(lines: Iterable[str], opts: ReadOptions | None = None) -> Trace:
    """LANL Mustang accounting rows (header read from the file; traces/README.md §4).

    job_id = the line number; submit/start/end = ``submit_time``/``start_time`` (empty when
    the job never started)/``end_time``; duration = end − start; time limit =
    ``wallclock_limit`` (a pandas Timedelta); state = ``job_status``; nodes =
    ``node_count``; cpus = ``tasks_requested``; gpus = 0 (a CPU cluster); user =
    ``user_ID``.
    """
    opts = opts or ReadOptions()
    errors = LineErrors(opts, "mustang")
    tz = _tz(opts, "UTC", errors)
    header, rows = csv_rows(lines, errors)
    require_columns(header, MUSTANG_COLUMNS, errors)
    states = StateWords()
    records: list[TraceRecord] = []
    for line, row in rows:
        try:
            records.append(_mustang_record(line, row, tz, states))
        except BadField as exc:
            errors.bad(line, exc)
    return Trace(
        tuple(records),
        "mustang",
        opts.path,
        TimeBase.EPOCH,
        tuple(errors.skipped),
        states.notes(),
        errors.counts(),
        zone=tz,
    )


def _mustang_record(line: int, row: Mapping[str, str], tz: str, states: StateWords) -> TraceRecord:
    def when(text: str) -> float:
        return parse_timestamp(text, tz)

    submit = parsed(row, "submit_time", when)
    start = parsed(row, "start_time", optional(when))
    end = parsed(row, "end_time", optional(when))
    duration = None
    if start is not None and end is not None:
        if end < start:
            raise BadField("end_time", row["end_time"], "ends before its start_time")
        duration = end - start
    extra = tuple((k, row[k]) for k in ("group_ID",) if row.get(k))
    return TraceRecord(
        job_id=str(line),
        submit=submit,
        source="mustang",
        line=line,
        start=start,
        end=end,
        duration_s=duration,
        time_limit_s=parsed(row, "wallclock_limit", parse_pandas_timedelta),
        gpus=0,
        cpus=parsed(row, "tasks_requested", parse_count),
        nodes=parsed(row, "node_count", parse_count),
        state=states(row["job_status"]),
        user=row.get("user_ID") or None,
        extra=extra,
    )
