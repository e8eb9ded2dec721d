"""Trace readers (sacct, Philly, Pollux/Sia, LANL Mustang, SWF, any CSV) and job synthesis.

* :func:`read_trace` opens a file and picks the reader (``format="auto"`` detects it);
* every reader is a pure ``(lines, ReadOptions) -> Trace`` in :data:`FORMATS`;
* :mod:`.synthesis` turns a :class:`TraceRecord` into a placement ``JobRequest``
  (MODEL.md §7), versioned by :data:`SYNTHESIS_VERSION`.

See docs/replay-guide.md for the formats, the exact columns used and the synthesis rules.
"""

from .columns import ColumnMap, column_map, load_column_map, parse_column_map
from .csv_formats import parse_mustang, parse_philly, parse_pollux
from .formats import FORMATS, TraceFormat, detect_format
from .generic import parse_generic
from .reader import read_trace
from .record import JobState, SkippedLine, TimeBase, Trace, TraceRecord
from .rows import ReadOptions
from .sacct import SACCT_FORMAT, parse_sacct, parse_sacct_json
from .swf import parse_swf

__all__ = [
    "FORMATS",
    "SACCT_FORMAT",
    "ColumnMap",
    "JobState",
    "ReadOptions",
    "SkippedLine",
    "TimeBase",
    "Trace",
    "TraceFormat",
    "TraceRecord",
    "column_map",
    "detect_format",
    "load_column_map",
    "parse_column_map",
    "parse_generic",
    "parse_mustang",
    "parse_philly",
    "parse_pollux",
    "parse_sacct",
    "parse_sacct_json",
    "parse_swf",
    "read_trace",
]
