"""The column map of the generic CSV reader: which column of a site's export holds which
field, and how its times, durations and sizes are written.

Given as a string (``--columns submit=queued_at,start=began,gpus=gpu_count,time_unit=ms``)
or as a small YAML or TOML file with the same keys (flat, or the fields under a
``columns:`` table). :func:`parse_column_map` and :func:`column_map_from_mapping` are pure;
:func:`load_column_map` reads the file.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from ..errors import InputError

#: Trace-record fields a column can feed (``mem`` in ``mem_unit``; ``duration`` and
#: ``time_limit`` as numbers in ``duration_unit`` or as Slurm ``[D-]HH:MM:SS``;
#: ``gpu_type`` one GPU type or a set separated by ``|``, empty = any; ``arch`` ``ps`` or
#: ``allreduce``, empty = not said).
FIELDS: tuple[str, ...] = (
    "job_id",
    "submit",
    "start",
    "end",
    "duration",
    "time_limit",
    "gpus",
    "cpus",
    "mem",
    "nodes",
    "state",
    "user",
    "name",
    "partition",
    "model",
    "workers",
    "gpu_type",
    "arch",
)
TIME_FORMATS = ("iso", "epoch", "offset")
UNITS_S: dict[str, float] = {"s": 1.0, "ms": 0.001, "min": 60.0, "h": 3600.0}
MEM_UNITS = ("K", "M", "G", "T")
DELIMITERS: dict[str, str] = {"comma": ",", "tab": "\t", "semicolon": ";", "pipe": "|"}
#: Options and their defaults.
OPTIONS: dict[str, str] = {
    "time_format": "iso",
    "time_unit": "s",
    "duration_unit": "s",
    "mem_unit": "M",
    "tz": "UTC",
    "delimiter": "comma",
}
_HINT = (
    "give FIELD=COLUMN pairs and options separated by commas, e.g. "
    "'submit=queued_at,start=began,end=ended,gpus=gpu_count'; fields: "
    + ", ".join(FIELDS)
    + "; options: "
    + ", ".join(f"{k} (default {v})" for k, v in OPTIONS.items())
    + "; or the path of a .yaml/.toml file with the same keys (docs/replay-guide.md)"
)


@dataclass(frozen=True)
class ColumnMap:
    """Field -> column, plus how values are written.

    * ``time_format``: ``iso`` (ISO 8601, zone optional, read in ``tz`` without one),
      ``epoch`` (numbers since 1970 in ``time_unit``), ``offset`` (numbers from the trace's
      start in ``time_unit``: the trace's time base is then *offset*), or a
      :func:`~datetime.datetime.strptime` pattern containing ``%``;
    * ``duration_unit``: unit of numeric ``duration``/``time_limit`` (s, ms, min, h);
    * ``mem_unit``: unit of a bare ``mem`` number (K, M, G, T; powers of 1024);
    * ``delimiter``: comma, tab, semicolon, pipe, or one character.
    """

    columns: tuple[tuple[str, str], ...]
    time_format: str = "iso"
    time_unit: str = "s"
    duration_unit: str = "s"
    mem_unit: str = "M"
    tz: str = "UTC"
    delimiter: str = ","

    def column(self, name: str) -> str | None:
        for key, column in self.columns:
            if key == name:
                return column
        return None

    def describe(self) -> str:
        parts = [f"{k}={v}" for k, v in self.columns]
        for option, default in OPTIONS.items():
            value = getattr(self, option)
            shown = next((n for n, c in DELIMITERS.items() if c == value), value)
            if shown != default:
                parts.append(f"{option}={shown}")
        return ",".join(parts)


def _error(problem: str, value: str) -> InputError:
    return InputError(
        f"--columns: {problem}", hint=_HINT, context={"option": "--columns", "value": value}
    )


def column_map_from_mapping(data: Mapping[str, object], origin: str = "--columns") -> ColumnMap:
    """A :class:`ColumnMap` from a mapping of the documented keys (pure)."""
    flat: dict[str, object] = {}
    for key, value in data.items():
        if key == "columns" and isinstance(value, Mapping):
            flat.update({str(k): v for k, v in value.items()})
        else:
            flat[str(key)] = value
    columns: list[tuple[str, str]] = []
    options = dict(OPTIONS)
    for key, value in flat.items():
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise _error(f"{origin}: the value of {key!r} must be a string", str(value))
        text = str(value).strip()
        if key in FIELDS:
            if not text:
                raise _error(f"{origin}: field {key!r} has an empty column name", text)
            columns.append((key, text))
        elif key in OPTIONS:
            options[key] = text
        else:
            raise _error(f"{origin}: unknown key {key!r}", key)
    if not any(k == "submit" for k, _ in columns):
        raise _error(f"{origin}: the map needs submit=COLUMN (the submit time)", "")
    return _checked(columns, options, origin)


def _checked(columns: list[tuple[str, str]], options: dict[str, str], origin: str) -> ColumnMap:
    fmt = options["time_format"]
    if fmt not in TIME_FORMATS and "%" not in fmt:
        raise _error(
            f"{origin}: time_format must be one of {', '.join(TIME_FORMATS)} or a strptime "
            f"pattern with '%', got {fmt!r}",
            fmt,
        )
    for option in ("time_unit", "duration_unit"):
        if options[option] not in UNITS_S:
            raise _error(
                f"{origin}: {option} must be one of {', '.join(UNITS_S)}, got {options[option]!r}",
                options[option],
            )
    mem_unit = options["mem_unit"].upper().removesuffix("IB").removesuffix("B") or "M"
    if mem_unit not in MEM_UNITS:
        raise _error(
            f"{origin}: mem_unit must be one of {', '.join(MEM_UNITS)}, "
            f"got {options['mem_unit']!r}",
            options["mem_unit"],
        )
    delimiter = DELIMITERS.get(options["delimiter"], options["delimiter"])
    if len(delimiter) != 1:
        raise _error(
            f"{origin}: delimiter must be one character or one of {', '.join(DELIMITERS)}, "
            f"got {options['delimiter']!r}",
            options["delimiter"],
        )
    return ColumnMap(
        columns=tuple(columns),
        time_format=fmt,
        time_unit=options["time_unit"],
        duration_unit=options["duration_unit"],
        mem_unit=mem_unit,
        tz=options["tz"],
        delimiter=delimiter,
    )


def parse_column_map(text: str) -> ColumnMap:
    """``submit=queued_at,gpus=gpu_count,time_unit=ms`` -> :class:`ColumnMap` (pure)."""
    pairs: dict[str, object] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, sep, value = item.partition("=")
        if not sep:
            raise _error(f"{item.strip()!r} is not KEY=VALUE", item.strip())
        key = key.strip()
        if key in pairs:
            raise _error(f"{key!r} is given twice", key)
        pairs[key] = value.strip()
    return column_map_from_mapping(pairs)


def load_column_map(path: str | Path) -> ColumnMap:
    """Read a column map from a ``.yaml``/``.yml`` or ``.toml`` file."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"cannot read the column map {file}: {exc.strerror or exc}",
            hint="give --columns as FIELD=COLUMN pairs, or the path of a .yaml/.toml file",
            context={"option": "--columns", "value": str(file)},
        ) from None
    try:
        if file.suffix.lower() == ".toml":
            data: object = tomllib.loads(text)
        else:
            data = yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        kind = file.suffix.lstrip(".") or "YAML"
        raise _error(f"{file}: not valid {kind}: {exc}", str(file)) from None
    if not isinstance(data, Mapping):
        raise _error(f"{file}: expected a mapping of FIELD: COLUMN", str(file))
    return column_map_from_mapping(data, origin=str(file))


def column_map(spec: str | Path | ColumnMap) -> ColumnMap:
    """A :class:`ColumnMap` from ``--columns``: pairs (any ``=`` in it) or a file path."""
    if isinstance(spec, ColumnMap):
        return spec
    if isinstance(spec, Path):
        return load_column_map(spec)
    if "=" in spec:
        return parse_column_map(spec)
    return load_column_map(spec)
