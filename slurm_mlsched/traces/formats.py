"""The trace formats: one registry of readers with one signature, and format detection.

Every reader is ``(lines, ReadOptions) -> Trace``; formats differ in data, never in
signature. :func:`detect_format` looks at the first lines only.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .csv_formats import (
    MUSTANG_COLUMNS,
    PHILLY_COLUMNS,
    POLLUX_COLUMNS,
    parse_mustang,
    parse_philly,
    parse_pollux,
)
from .generic import parse_generic
from .record import Trace
from .rows import ReadOptions
from .sacct import parse_sacct, parse_sacct_json
from .swf import SWF_FIELDS, parse_swf

Reader = Callable[[Iterable[str], ReadOptions], Trace]


def _sacct_json(lines: Iterable[str], opts: ReadOptions) -> Trace:
    return parse_sacct_json("".join(lines), opts)


@dataclass(frozen=True)
class TraceFormat:
    name: str
    description: str
    detected_by: str
    reader: Reader


FORMATS: dict[str, TraceFormat] = {
    f.name: f
    for f in (
        TraceFormat(
            "sacct",
            "Slurm sacct --parsable2 / --parsable with a header line",
            "a header line with a JobID field ('|'-separated, or with Submit and State)",
            parse_sacct,
        ),
        TraceFormat(
            "sacct-json",
            "Slurm sacct --json (22.05 openapi/dbv0.0.38, 24.11 data_parser/v0.0.42)",
            "the text starts with '{'",
            _sacct_json,
        ),
        TraceFormat(
            "philly",
            "Microsoft Philly job trace as shipped with Pollux (philly.csv)",
            "CSV header with " + ", ".join(PHILLY_COLUMNS),
            parse_philly,
        ),
        TraceFormat(
            "pollux",
            "Pollux / Sia workload CSV (name,time,application,num_replicas,batch_size)",
            "CSV header with " + ", ".join(POLLUX_COLUMNS),
            parse_pollux,
        ),
        TraceFormat(
            "mustang",
            "LANL Mustang Slurm accounting CSV (ATLAS trace)",
            "CSV header with " + ", ".join(MUSTANG_COLUMNS),
            parse_mustang,
        ),
        TraceFormat(
            "swf",
            "Standard Workload Format (Parallel Workloads Archive), plain or .gz",
            "';' header lines, or 18 numbers on the first line",
            parse_swf,
        ),
        TraceFormat(
            "csv",
            "any CSV through a column map (--columns)",
            "never detected: give --columns",
            parse_generic,
        ),
    )
}


def formats_help() -> str:
    return "; ".join(f"{f.name} ({f.description})" for f in FORMATS.values())


def detect_format(head: str) -> str | None:
    """The format of a text from its beginning (``head``: the first lines), or ``None``."""
    stripped = head.lstrip("\ufeff \t\r\n")
    if not stripped:
        return None
    if stripped.startswith("{"):
        return "sacct-json"
    first = stripped.splitlines()[0].strip()
    if first.startswith(";"):
        return "swf"
    numbers = first.split()
    if len(numbers) == len(SWF_FIELDS) and all(_is_number(t) for t in numbers):
        return "swf"
    tokens = {t.lower() for t in _words(first)}
    if "jobid" in tokens and ("|" in first or {"submit", "state"} <= tokens):
        return "sacct"
    try:
        header = {c.strip().lower() for c in next(csv.reader(io.StringIO(first)))}
    except (csv.Error, StopIteration):
        return None
    for name, needed in (
        ("philly", PHILLY_COLUMNS),
        ("pollux", POLLUX_COLUMNS),
        ("mustang", MUSTANG_COLUMNS),
    ):
        if set(needed) <= header:
            return name
    return None


def _words(line: str) -> list[str]:
    word: list[str] = []
    out: list[str] = []
    for ch in line:
        if ch.isalnum() or ch == "_":
            word.append(ch)
        elif word:
            out.append("".join(word))
            word = []
    if word:
        out.append("".join(word))
    return out


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
