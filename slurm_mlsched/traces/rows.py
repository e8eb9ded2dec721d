"""What every reader shares: its options, the funnel for malformed lines, and a CSV row
iterator that knows line numbers.

A reader parses one row at a time; a bad value raises :class:`BadField` (field, value,
problem). :class:`LineErrors` then either raises one :class:`~slurm_mlsched.errors.InputError`
naming the file, line, field and value (the default), or, with ``skip_bad``, keeps the line
as a :class:`~.record.SkippedLine` so the trace can report it.
"""

from __future__ import annotations

import csv
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TypeVar

from ..errors import InputError
from .columns import ColumnMap
from .record import JobState, RowCounts, SkippedLine
from .values import normalize_state

T = TypeVar("T")

SKIP_BAD_HINT = (
    "fix or delete that line, or pass --skip-bad to skip malformed lines (they are counted "
    "and listed in the replay summary)"
)
#: Longest value quoted in an error message.
_QUOTE_MAX = 120


@dataclass(frozen=True)
class ReadOptions:
    """How to read a trace: every reader takes these (one signature for all formats).

    * ``path``: the file's name, for messages and :attr:`Trace.path`;
    * ``skip_bad``: skip malformed lines (counted) instead of failing on the first;
    * ``tz``: IANA zone for times written without one (``None`` = the format's default:
      UTC, except Philly, whose logs are US Pacific);
    * ``columns``: the column map of the generic CSV reader (:mod:`.generic`).
    """

    path: str = "<text>"
    skip_bad: bool = False
    tz: str | None = None
    columns: ColumnMap | None = None


class BadField(Exception):
    """A field of one row that cannot be read."""

    def __init__(self, field: str, value: object, problem: str) -> None:
        super().__init__(problem)
        self.field = field
        self.value = value
        self.problem = problem


def quote(value: object) -> str:
    text = value if isinstance(value, str) else repr(value)
    if len(text) > _QUOTE_MAX:
        text = text[: _QUOTE_MAX - 1] + "…"
    return repr(text) if isinstance(value, str) else text


class LineErrors:
    """Raises on the first malformed line, or (``skip_bad``) collects them all."""

    def __init__(self, opts: ReadOptions, fmt: str, unit: str = "line") -> None:
        self.opts = opts
        self.fmt = fmt
        self.unit = unit  # "line", or "job entry" for JSON
        self.skipped: list[SkippedLine] = []
        # where the other rows went (RowCounts): the readers count as they read
        self.total = 0
        self.header = 0
        self.blank = 0
        self.folded = 0
        self.ignored = 0

    def counts(self) -> RowCounts:
        """The row accounting so far (:class:`~.record.RowCounts`)."""
        return RowCounts(
            "job entries" if self.unit == "job entry" else "lines",
            self.total,
            self.header,
            self.blank,
            self.folded,
            self.ignored,
        )

    def bad(self, line: int, error: BadField) -> None:
        """Report ``error`` at ``line``: raise, or record it when skipping."""
        if not self.opts.skip_bad:
            raise InputError(
                f"{self.opts.path}, {self.unit} {line}: field {error.field!r}: {error.problem} "
                f"(value {quote(error.value)})",
                hint=SKIP_BAD_HINT,
                context={
                    "file": self.opts.path,
                    "format": self.fmt,
                    self.unit.replace(" ", "_"): line,
                    "field": error.field,
                    "value": str(error.value),
                },
            )
        self.skipped.append(SkippedLine(line, error.field, str(error.value), error.problem))

    def whole_file(self, problem: str, hint: str, line: int | None = None) -> InputError:
        """An error about the file as a whole (never skippable): missing columns, bad JSON."""
        where = f", {self.unit} {line}" if line is not None else ""
        return InputError(
            f"{self.opts.path}{where}: {problem}",
            hint=hint,
            context={"file": self.opts.path, "format": self.fmt},
        )


def csv_rows(
    lines: Iterable[str], errors: LineErrors, delimiter: str = ","
) -> tuple[list[str], Iterator[tuple[int, dict[str, str]]]]:
    """The header and an iterator of (line number, row as a dict) of a CSV text.

    Each physical line is one row: no trace format has quoted fields that span lines, so a
    stray ``"`` spoils only its own line (reported as malformed with its own number)
    instead of swallowing the lines after it. Blank lines are passed over; a row whose
    field count differs from the header's, or that breaks CSV quoting, or whose field is
    longer than :data:`MAX_FIELD` characters, is a malformed line (reported through
    ``errors``).
    """
    numbered = enumerate(iter(lines), start=1)
    header: list[str] = []
    for number, text in numbered:
        errors.total = number
        try:
            raw = _split(text, delimiter)
        except csv.Error as exc:
            raise errors.whole_file(
                f"the header line is not CSV: {exc}", "check the file", number
            ) from None
        if raw and any(cell.strip() for cell in raw):
            header = [cell.strip().lstrip("\ufeff") for cell in raw]
            errors.header += 1
            break
        errors.blank += 1
    if not header:
        raise errors.whole_file("the file is empty (no header line)", "check the file")

    def rows() -> Iterator[tuple[int, dict[str, str]]]:
        for number, text in numbered:
            errors.total = number
            try:
                raw = _split(text, delimiter)
            except csv.Error as exc:
                errors.bad(number, BadField("(row)", text.rstrip("\r\n"), f"not CSV: {exc}"))
                continue
            if not raw or (len(raw) == 1 and not raw[0].strip()):
                errors.blank += 1
                continue  # a blank line
            if len(raw) != len(header):
                errors.bad(
                    number,
                    BadField(
                        "(row)",
                        delimiter.join(raw),
                        f"{len(raw)} fields, the header has {len(header)}",
                    ),
                )
                continue
            yield number, dict(zip(header, raw, strict=True))

    return header, rows()


#: Longest field a trace line may hold (characters).
MAX_FIELD = 131_072


def _split(text: str, delimiter: str) -> list[str]:
    """One physical line as CSV fields; :class:`csv.Error` if it breaks CSV quoting or
    holds a field longer than :data:`MAX_FIELD`."""
    line = text.rstrip("\r\n")
    if len(line) > MAX_FIELD and max(len(f) for f in line.split(delimiter)) > MAX_FIELD:
        raise csv.Error(f"a field is longer than {MAX_FIELD:,} characters")
    if '"' in line:
        return next(csv.reader([line], delimiter=delimiter, strict=True), [])
    return line.split(delimiter) if line else []


def require_columns(header: list[str], needed: Iterable[str], errors: LineErrors) -> None:
    missing = [name for name in needed if name not in header]
    if missing:
        raise errors.whole_file(
            f"missing column(s) {', '.join(missing)}; the header has: {', '.join(header)}",
            hint=f"a {errors.fmt} file needs the columns {', '.join(needed)}; for another "
            "layout use --format csv --columns …",
            line=1,
        )


def parsed(row: Mapping[str, str], name: str, parse: Callable[[str], T]) -> T:
    """``parse(row[name])``, with a :class:`ValueError` turned into :class:`BadField`."""
    value = row.get(name, "")
    try:
        return parse(value)
    except ValueError as exc:
        raise BadField(name, value, str(exc)) from None


def optional(parse: Callable[[str], T]) -> Callable[[str], T | None]:
    """``parse`` that reads an empty value (or ``-1``, ``NaN``, ``None``) as ``None``."""

    def wrapped(text: str) -> T | None:
        if text.strip() in ("", "-1", "NaN", "nan", "None", "null", "NA", "N/A"):
            return None
        return parse(text)

    return wrapped


class StateWords:
    """Normalizes state words, counting the ones it does not know (kept as unknown)."""

    def __init__(self) -> None:
        self.unknown: Counter[str] = Counter()

    def __call__(self, text: str) -> JobState:
        state = normalize_state(text)
        if state is None:
            self.unknown[text.strip()] += 1
            return JobState.UNKNOWN
        return state

    def notes(self) -> tuple[str, ...]:
        if not self.unknown:
            return ()
        words = ", ".join(f"{w!r} ×{n}" for w, n in self.unknown.most_common())
        return (f"state words not recognized, kept as 'unknown': {words}",)
