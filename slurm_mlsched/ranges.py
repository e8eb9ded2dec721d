"""The plausible range of every number mlsub reads, and the converters that check it.

One set for every edge (issue 15): job options and ``# mlsub:`` header lines
(:mod:`slurm_mlsched.files.job_options`), cluster files
(:mod:`slurm_mlsched.files.cluster_file`) and every trace reader
(:mod:`slurm_mlsched.traces.bounds`). A value outside its range is a typo or a
placeholder, never a request: the bounds also keep every number the placement program and
the simulator see finite and their sizes reasonable.

A converter takes what the source gave (text, or a number a YAML/TOML file already typed)
and returns the value, or raises :class:`OutOfRange` with the problem in words; each caller
wraps that in its own error, naming the option, the file's field or the trace's row.
Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

from .model.units import parse_mem_mib


class OutOfRange(ValueError):
    """A value that is not what its range allows; ``problem`` says why, in words that
    follow the value's name (``must be from 1 to 10,000``)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


@dataclass(frozen=True)
class Range:
    """``lo ≤ x ≤ hi`` (``lo < x`` when ``above``), in ``unit``."""

    lo: float
    hi: float
    above: bool = False
    unit: str = ""
    said: str = ""  # how a message says the range, where the numbers read badly (1P)

    def __contains__(self, value: float) -> bool:
        try:
            if not math.isfinite(value):
                return False
        except OverflowError:  # an int too large for a float
            return False
        low_ok = value > self.lo if self.above else value >= self.lo
        return low_ok and value <= self.hi

    def words(self, whole: bool = False) -> str:
        """``from 1 to 10,000`` (whole numbers), ``a finite number > 0 and <= 86400``."""
        if self.said:
            return self.said
        if whole:  # an int bound exactly (a float would print 2**63 - 1 as 2**63)
            return f"from {_whole(self.lo)} to {_whole(self.hi)}"
        low = f"> {self.lo:g}" if self.above else f">= {self.lo:g}"
        return f"a finite number {low} and <= {self.hi:g}"


def unsafe_in_sbatch_line(value: str) -> bool:
    """Whether ``value`` cannot go into an ``#SBATCH`` line (job name, partition, output
    pattern, node names): it holds a control character (newline, tab …) or a backslash.
    The job options refuse such values when read, the script renderer again."""
    return "\\" in value or any(ord(ch) < 32 or ord(ch) == 127 for ch in value)


def _whole(x: float) -> str:
    return f"{x:,}" if isinstance(x, int) else f"{x:,.0f}"


# --- job options and script headers ------------------------------------------------------
TASKS = Range(1, 10_000)  # workers, parameter servers
GPUS_PER_TASK = Range(0, 4_096)
CPUS_PER_TASK = Range(1, 4_096)
BATCHES = Range(1, 10**9)  # epochs, batches per epoch
SEED = Range(0, 2**63 - 1)
STEP_TIME_S = Range(0, 86_400.0, above=True, unit="seconds per step")
MODEL_MB = Range(0, 10**7, above=True, unit="MB")
BANDWIDTH_MBPS = Range(0, 10**9, above=True, unit="MB/s")
JOB_MEM_MIB = Range(0, float(1 << 30), above=True, unit="MiB", said="above 0 and at most 1P")
TIME_LIMIT_MIN = Range(1, 366 * 24 * 60, unit="minutes")  # a year

# --- cluster files ----------------------------------------------------------------------
GROUP_NODES = Range(1, 100_000)  # nodes of one group
NODE_COUNT = Range(0, 100_000)  # GPUs or CPUs of one node (or of a reservation)
NODE_MEM_GIB = Range(0, float(1 << 20), unit="GiB", said="at most 1,048,576 GiB (1 PiB)")
SLOT_SECONDS = Range(0, 366 * 86_400.0, above=True, unit="seconds")

# --- trace records ----------------------------------------------------------------------
TRACE_COUNT = Range(0, 1_000_000)  # GPUs, CPUs, nodes of a job
TRACE_WORKERS = Range(1, 1_000_000)
TRACE_DURATION_S = Range(0, 10 * 365.25 * 86_400.0, unit="seconds")  # ten years
TRACE_MEM_MIB = Range(0, float(1 << 40), unit="MiB")  # 1 EiB
TRACE_OFFSET_S = Range(0, 100 * 365.25 * 86_400.0, unit="seconds")  # after the trace's start
EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)
LATEST = datetime(2100, 1, 1, tzinfo=UTC)
DATES = Range(EARLIEST.timestamp(), LATEST.timestamp(), unit="seconds since 1970")


def whole(value: object, rng: Range) -> int:
    """A whole number in ``rng``: an int, an integral float, or its text (``"4"``)."""
    number: object = value
    if isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            raise OutOfRange("must be a whole number") from None
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, int):
        raise OutOfRange("must be a whole number")
    if number not in rng:
        raise OutOfRange(f"must be {rng.words(whole=True)}")
    return number


def number(value: object, rng: Range) -> float:
    """A finite number in ``rng``: an int or float, or its text (``"0.5"``)."""
    parsed: object = value
    if isinstance(value, str):
        try:
            parsed = float(value.strip())
        except ValueError:
            raise OutOfRange("must be a number") from None
    if isinstance(parsed, bool) or not isinstance(parsed, int | float):
        raise OutOfRange("must be a number")
    if parsed not in rng:
        raise OutOfRange(f"must be {rng.words()}")
    return float(parsed)


def memory_mib(value: object, rng: Range) -> float:
    """A memory size in MiB within ``rng``: Slurm-style text (``8G``, ``512M``; a bare
    number is MiB) or a number of MiB."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise OutOfRange("must be a memory size")
    try:
        mib = parse_mem_mib(value)
    except (ValueError, OverflowError):
        raise OutOfRange("is not a memory size") from None
    if mib not in rng:
        raise OutOfRange(f"must be {rng.words()}" + ("" if rng.said else " MiB"))
    return mib
