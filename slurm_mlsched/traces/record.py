"""The one record type every trace reader produces, and the trace that holds them.

A :class:`TraceRecord` is one job as the source recorded it: when it was submitted, what it
asked for, how long it ran and how it ended, plus whatever the source knows about its
training structure (model, data-parallel workers). Fields a source does not have are
``None``; nothing is guessed here (job synthesis, :mod:`.synthesis`, makes the documented
guesses). Units: seconds, MiB, counts.

Times: ``submit``/``start``/``end`` are seconds since the Unix epoch (UTC) when the source
has wall-clock times, or seconds from the trace's start when it only has offsets; the
trace's :attr:`Trace.time_base` says which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from ..model import Architecture


class JobState(StrEnum):
    """A job's final (or current) state, normalized over every source."""

    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    TIMEOUT = "timeout"
    NODE_FAIL = "node_fail"
    OUT_OF_MEMORY = "out_of_memory"
    PREEMPTED = "preempted"
    RUNNING = "running"
    PENDING = "pending"
    UNKNOWN = "unknown"


class TimeBase(StrEnum):
    """What ``submit``/``start``/``end`` count from."""

    EPOCH = "epoch"  # seconds since 1970-01-01T00:00:00Z
    OFFSET = "offset"  # seconds since the trace's own origin (the source has no dates)


@dataclass(frozen=True, slots=True)
class TraceRecord:
    """One job of a trace (frozen). ``None`` = the source does not say.

    * ``job_id``: the source's id; Slurm hetjob components (``N+K``) and steps (``N.batch``,
      ``N.0``) are folded into the job ``N``; array tasks keep ``N_K``. Sources without ids
      use the line number.
    * ``duration_s``: run time (Slurm ``Elapsed``, Philly ``duration``, SWF run time).
    * ``time_limit_s``: requested limit; ``None`` for ``UNLIMITED``, ``Partition_Limit`` or
      unknown.
    * ``gpus``/``cpus``/``mem_mb``/``nodes``: the job's total request (summed over hetjob
      components); Slurm's requested TRES when present, else its allocation.
    * ``model``: the model the source names (Pollux/Sia ``application``);
      ``workers``: data-parallel replicas when the source knows them.
    * ``source``: the format name; ``line``: 1-based line of the job's (first) row in the
      file (for ``sacct --json``: the 1-based index of its first entry in ``jobs``).
    * ``extra``: other source fields kept verbatim as (name, value) pairs (exit code,
      account, node list, batch size …).
    * ``gpu_types``: the GPU types the job could run on when the source says (the Alibaba
      2023 trace's ``gpu_spec``: ``V100M16|V100M32``); None = any.
    * ``arch``: how the job's workers exchanged gradients when the source says (a column
      mapped to ``arch``: ``ps`` or ``allreduce``); None = not said (synthesis decides,
      ``SynthesisParams.arch_default``).
    """

    job_id: str
    submit: float
    source: str
    line: int
    start: float | None = None
    end: float | None = None
    duration_s: float | None = None
    time_limit_s: float | None = None
    gpus: int | None = None
    cpus: int | None = None
    mem_mb: float | None = None
    nodes: int | None = None
    state: JobState = JobState.UNKNOWN
    user: str | None = None
    name: str | None = None
    partition: str | None = None
    model: str | None = None
    workers: int | None = None
    extra: tuple[tuple[str, str], ...] = ()
    gpu_types: frozenset[str] | None = None
    arch: Architecture | None = None

    @property
    def ran(self) -> bool:
        """Whether the job ever ran: a start time, or a positive run time."""
        if self.start is not None:
            return True
        return self.duration_s is not None and self.duration_s > 0

    def extra_value(self, name: str) -> str | None:
        for key, value in self.extra:
            if key == name:
                return value
        return None


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A malformed line left out under ``skip_bad``: where, which field, what was wrong."""

    line: int
    field: str
    value: str
    reason: str


@dataclass(frozen=True)
class RowCounts:
    """Where every physical row of a file went (``unit``: lines, or job entries of
    ``sacct --json``): ``total`` = ``header`` (header and comment lines) + ``blank`` +
    ``folded`` (rows another row of the same job stands for: steps, hetjob components,
    requeued duplicates) + ``ignored`` (rows of no job: steps without their job row) + the
    trace's records + its skipped lines. :meth:`unaccounted` is 0 for every reader (a
    test asserts it over fuzzed files); anything else is a reader bug."""

    unit: str
    total: int
    header: int = 0
    blank: int = 0
    folded: int = 0
    ignored: int = 0

    def unaccounted(self, records: int, skipped: int) -> int:
        return (
            self.total - self.header - self.blank - self.folded - self.ignored - records - skipped
        )


@dataclass(frozen=True)
class Trace:
    """The records of one file, with what was skipped and anything worth knowing.

    ``skipped`` counts malformed lines left out (only with ``skip_bad``);
    ``skipped_lines`` says which, with the field and value. ``notes`` are facts about the
    read a user should see (time zone assumed, step rows folded, unknown states …).
    """

    records: tuple[TraceRecord, ...]
    format: str
    path: str
    time_base: TimeBase
    skipped_lines: tuple[SkippedLine, ...] = ()
    notes: tuple[str, ...] = field(default=())
    rows: RowCounts | None = None  # None: the reader did not count (a bug: tests check it)
    zone: str = "UTC"  # the zone times written without one were read in (``--tz``, else the
    # format's: Philly US Pacific, the rest UTC); ``mlsub replay --since/--until`` read theirs so

    def unaccounted(self) -> int:
        """Rows that are neither header, blank, folded, ignored, a record nor skipped."""
        if self.rows is None:
            return 0
        return self.rows.unaccounted(len(self.records), self.skipped)

    @property
    def skipped(self) -> int:
        return len(self.skipped_lines)

    def __len__(self) -> int:
        return len(self.records)
