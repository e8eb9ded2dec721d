"""Open a trace file and read it with the right reader: the only module here that does I/O.

``.gz`` files (by their magic bytes, whatever their name) are unzipped on the fly; the
text must be UTF-8 (a byte-order mark is dropped). ``format="auto"`` looks at the first
64 KiB. Every reader's records then pass :func:`bounded` (the plausible ranges of
:mod:`.bounds`, and distinct job ids), the same for every format.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import BinaryIO, TextIO, cast

from ..errors import InputError
from . import bounds
from .columns import ColumnMap, column_map
from .formats import FORMATS, detect_format, formats_help
from .record import Trace
from .rows import LineErrors, ReadOptions

_GZIP_MAGIC = b"\x1f\x8b"
_HEAD_BYTES = 64 * 1024


def read_trace(
    path: str | Path,
    format: str = "auto",
    columns: str | Path | ColumnMap | None = None,
    skip_bad: bool = False,
    *,
    tz: str | None = None,
) -> Trace:
    """Read the trace at ``path``.

    * ``format``: ``auto`` (detect; ``csv`` when ``columns`` is given) or one of
      :data:`~.formats.FORMATS`;
    * ``columns``: the generic CSV column map (``submit=queued_at,…`` or a .yaml/.toml path);
    * ``skip_bad``: skip malformed lines, counting them in :attr:`Trace.skipped`, instead of
      raising :class:`~slurm_mlsched.errors.InputError` on the first;
    * ``tz``: zone for times written without one (default UTC; Philly: US Pacific).
    """
    file = Path(path)
    cmap = column_map(columns) if columns is not None else None
    name = _format_name(file, format, cmap)
    opts = ReadOptions(path=str(path), skip_bad=skip_bad, tz=tz, columns=cmap)
    with open_text(file) as stream:
        try:
            return bounded(FORMATS[name].reader(stream, opts), opts)
        except UnicodeDecodeError as exc:
            raise _unreadable(file, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except (OSError, EOFError) as exc:  # a truncated or corrupt .gz shows up mid-read
            raise _unreadable(file, str(exc)) from None


def bounded(trace: Trace, opts: ReadOptions) -> Trace:
    """``trace`` without the records that cannot be real jobs (:mod:`.bounds`): each is a
    malformed line like any other, through the same funnel (:class:`~.rows.LineErrors`):
    an error naming its line, field and value, or (``skip_bad``) a skipped line listed with
    the others."""
    bad = list(bounds.problems(trace.records, trace.time_base))
    if not bad:
        return trace
    errors = LineErrors(opts, trace.format, "job entry" if trace.format == "sacct-json" else "line")
    for rec, err in bad:
        errors.bad(rec.line, err)  # raises unless skip_bad
    dropped = {id(rec) for rec, _ in bad}
    return replace(
        trace,
        records=tuple(r for r in trace.records if id(r) not in dropped),
        skipped_lines=tuple(sorted((*trace.skipped_lines, *errors.skipped), key=lambda s: s.line)),
    )


def _format_name(file: Path, format: str, cmap: ColumnMap | None) -> str:
    if format != "auto" and format not in FORMATS:
        raise InputError(
            f"unknown trace format {format!r}",
            hint=f"use auto or one of: {', '.join(FORMATS)}",
            context={"option": "--format", "value": format},
        )
    if cmap is not None:
        if format not in ("auto", "csv"):
            raise InputError(
                f"--columns applies to --format csv only, not {format}",
                hint="drop --columns, or use --format csv",
                context={"option": "--columns"},
            )
        return "csv"
    if format == "csv":
        raise InputError(
            "--format csv needs a column map",
            hint="pass --columns submit=COLUMN,… (docs/replay-guide.md)",
            context={"option": "--columns"},
        )
    if format != "auto":
        return format
    detected = detect_format(read_head(file))
    if detected is None:
        raise InputError(
            f"{file}: cannot tell the trace format from its first lines",
            hint=f"pass --format with one of: {formats_help()}; or --columns for any other "
            "CSV (docs/replay-guide.md)",
            context={"file": str(file)},
        )
    return detected


def read_head(file: Path) -> str:
    """The first 64 KiB of the file's text (unzipped), cut at the last full line."""
    with _open_binary(file) as raw:
        data = raw.read(_HEAD_BYTES)
    text = data.decode("utf-8", errors="replace")
    if len(data) == _HEAD_BYTES and "\n" in text:
        text = text[: text.rindex("\n") + 1]
    return text


@contextmanager
def _open_binary(file: Path) -> Iterator[BinaryIO]:
    try:
        with file.open("rb") as probe:
            magic = probe.read(2)
        # a GzipFile reads like a binary file (typeshed types it apart)
        unzip = magic == _GZIP_MAGIC
        stream = cast(BinaryIO, gzip.GzipFile(file, "rb")) if unzip else file.open("rb")
    except OSError as exc:
        raise _unreadable(file, exc.strerror or str(exc)) from None
    with stream:
        try:
            yield stream
        except (OSError, EOFError) as exc:
            raise _unreadable(file, str(exc)) from None


@contextmanager
def open_text(file: Path) -> Iterator[TextIO]:
    """The file as UTF-8 text lines (``.gz`` unzipped; a leading byte-order mark dropped)."""
    with _open_binary(file) as raw:
        yield io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")


def _unreadable(file: Path, problem: str) -> InputError:
    return InputError(
        f"cannot read trace file {file}: {problem}",
        hint="check the path and that the file is a complete trace (plain text or .gz)",
        context={"file": str(file)},
    )
