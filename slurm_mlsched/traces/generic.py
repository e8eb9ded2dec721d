"""The generic CSV reader: any export, through a column map (:mod:`.columns`).

A site replays its own accounting export without code::

    --format csv --columns submit=queued_at,start=began,end=ended,gpus=gpu_count

Only ``submit`` is required. ``duration`` defaults to end − start when both are mapped;
``job_id`` defaults to the line number; ``state`` words are normalized like Slurm's
(``COMPLETED``, ``FAILED``, ``CANCELLED`` …, plus ``success``/``killed``/``pass``);
counts may be empty (unknown).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime

from ..model import Architecture
from ..model.eligibility import parse_gpu_types
from .columns import UNITS_S, ColumnMap
from .record import TimeBase, Trace, TraceRecord
from .rows import BadField, LineErrors, ReadOptions, StateWords, csv_rows, optional
from .values import (
    NO_LIMIT_WORDS,
    parse_count,
    parse_memory,
    parse_number,
    parse_slurm_duration,
    parse_timestamp,
    zone,
)


def _time_parser(cmap: ColumnMap) -> Callable[[str], float]:
    fmt, unit = cmap.time_format, UNITS_S[cmap.time_unit]
    if fmt in ("epoch", "offset"):

        def numeric(text: str) -> float:
            try:
                return float(text) * unit
            except ValueError:
                raise ValueError(
                    f"not a number: {text!r} (time_format={fmt}; for dates use time_format=iso)"
                ) from None

        return numeric
    if fmt == "iso":

        def iso(text: str) -> float:
            try:
                return parse_timestamp(text, cmap.tz)
            except ValueError as exc:
                raise ValueError(
                    f"{exc} (time_format=iso; for numbers use time_format=epoch or offset, "
                    "or give a strptime pattern)"
                ) from None

        return iso
    tzinfo = zone(cmap.tz) if cmap.tz != "UTC" else UTC

    def pattern(text: str) -> float:
        try:
            when = datetime.strptime(text.strip(), fmt)
        except ValueError:
            raise ValueError(f"does not match time_format {fmt!r}: {text!r}") from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=tzinfo)
        return when.timestamp()

    return pattern


def _duration_parser(cmap: ColumnMap, limit: bool) -> Callable[[str], float | None]:
    unit = UNITS_S[cmap.duration_unit]

    def duration(text: str) -> float | None:
        stripped = text.strip()
        if limit and stripped.upper() in NO_LIMIT_WORDS:
            return None
        if ":" in stripped:
            return parse_slurm_duration(stripped)
        return parse_number(stripped) * unit

    return duration


def parse_generic(lines: Iterable[str], opts: ReadOptions | None = None) -> Trace:
    """A CSV file read through ``opts.columns`` (a :class:`~.columns.ColumnMap`)."""
    opts = opts or ReadOptions()
    errors = LineErrors(opts, "csv")
    cmap = opts.columns
    if cmap is None:
        raise errors.whole_file(
            "the csv format needs a column map",
            "pass --columns submit=COLUMN,… (docs/replay-guide.md)",
        )
    try:
        zone(cmap.tz)
    except ValueError as exc:
        raise errors.whole_file(str(exc), "set tz= to an IANA zone name such as UTC") from None
    header, rows = csv_rows(lines, errors, delimiter=cmap.delimiter)
    missing = [column for _, column in cmap.columns if column not in header]
    if missing:
        raise errors.whole_file(
            f"column(s) {', '.join(missing)} of the column map are not in the header "
            f"({', '.join(header)})",
            "fix --columns: the names must match the header exactly",
            line=1,
        )
    states = StateWords()
    reader = _RowReader(cmap, states)
    records: list[TraceRecord] = []
    for line, row in rows:
        try:
            records.append(reader.record(line, row))
        except BadField as exc:
            errors.bad(line, exc)
    time_base = TimeBase.OFFSET if cmap.time_format == "offset" else TimeBase.EPOCH
    notes = (f"column map: {cmap.describe()}", *states.notes())
    return Trace(
        tuple(records),
        "csv",
        opts.path,
        time_base,
        tuple(errors.skipped),
        notes,
        errors.counts(),
        zone=cmap.tz,
    )


class _RowReader:
    def __init__(self, cmap: ColumnMap, states: StateWords) -> None:
        self.cmap = cmap
        self.states = states
        self.time = _time_parser(cmap)
        self.duration = _duration_parser(cmap, limit=False)
        self.limit = _duration_parser(cmap, limit=True)
        self.mem_unit = cmap.mem_unit

    def get(self, row: Mapping[str, str], name: str, parse: Callable[[str], object]) -> object:
        column = self.cmap.column(name)
        if column is None:
            return None
        value = row[column]
        try:
            return optional(parse)(value)
        except ValueError as exc:
            raise BadField(column, value, str(exc)) from None

    def text(self, row: Mapping[str, str], name: str) -> str | None:
        column = self.cmap.column(name)
        return (row[column].strip() or None) if column is not None else None

    def record(self, line: int, row: Mapping[str, str]) -> TraceRecord:
        submit = self.get(row, "submit", self.time)
        if submit is None:
            column = self.cmap.column("submit") or "submit"
            raise BadField(column, row.get(column, ""), "the submit time is empty")
        start = self.get(row, "start", self.time)
        end = self.get(row, "end", self.time)
        duration = self.get(row, "duration", self.duration)
        if duration is None and isinstance(start, float) and isinstance(end, float):
            if end < start:
                column = self.cmap.column("end") or "end"
                raise BadField(column, row[column], "ends before it starts")
            duration = end - start
        state_text = self.text(row, "state")
        return TraceRecord(
            job_id=self.text(row, "job_id") or str(line),
            submit=_f(submit),
            source="csv",
            line=line,
            start=_opt_f(start),
            end=_opt_f(end),
            duration_s=_opt_f(duration),
            time_limit_s=_opt_f(self.get(row, "time_limit", self.limit)),
            gpus=_opt_i(self.get(row, "gpus", parse_count)),
            cpus=_opt_i(self.get(row, "cpus", parse_count)),
            mem_mb=_opt_f(self.get(row, "mem", lambda t: parse_memory(t, self.mem_unit))),
            nodes=_opt_i(self.get(row, "nodes", parse_count)),
            state=self.states(state_text or ""),
            user=self.text(row, "user"),
            name=self.text(row, "name"),
            partition=self.text(row, "partition"),
            model=self.text(row, "model"),
            workers=_opt_i(self.get(row, "workers", parse_count)),
            gpu_types=self.gpu_types(row),
            arch=_opt_arch(self.get(row, "arch", parse_arch)),
        )

    def gpu_types(self, row: Mapping[str, str]) -> frozenset[str] | None:
        """The ``gpu_type`` column: ``V100M16|V100M32`` -> a set; empty -> None (any)."""
        column = self.cmap.column("gpu_type")
        if column is None:
            return None
        try:
            return parse_gpu_types(row[column], separator="|")
        except ValueError as exc:
            raise BadField(column, row[column], str(exc)) from None


def parse_arch(text: str) -> Architecture:
    """``ps`` or ``allreduce`` (case ignored); ValueError naming both otherwise."""
    try:
        return Architecture(text.strip().lower())
    except ValueError:
        valid = " or ".join(a.value for a in Architecture)
        raise ValueError(f"not an architecture: {text!r} (write {valid})") from None


def _opt_arch(value: object) -> Architecture | None:
    assert value is None or isinstance(value, Architecture)
    return value


def _f(value: object) -> float:
    assert isinstance(value, int | float)
    return float(value)


def _opt_f(value: object) -> float | None:
    return None if value is None else _f(value)


def _opt_i(value: object) -> int | None:
    return None if value is None else int(_f(value))
