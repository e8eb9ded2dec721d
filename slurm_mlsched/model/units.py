"""Units, in one place.

Internal units of the whole project:

* time: seconds (float); slots are integers counted from the snapshot's epoch;
* memory: MiB (Slurm's "MB": ``RealMemory``, ``--mem``), as float;
* GPUs, CPUs: counts;
* model size: MB = 10**6 bytes; bandwidth: MB/s (the DL2 profile table's units; only
  their ratio enters the time model, so the choice of MB cancels out).
"""

from __future__ import annotations

import math
import re

MIB_PER_GIB = 1024.0

_SIZE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGTP]?)(i?B?)?\s*$", re.IGNORECASE)
_FACTORS_MIB = {"K": 1.0 / 1024.0, "M": 1.0, "": 1.0, "G": 1024.0, "T": 1024.0**2, "P": 1024.0**3}


def parse_mem_mib(text: str | int | float) -> float:
    """Parse a Slurm-style memory size into MiB.

    Slurm's rules: a bare number is MiB; suffixes K, M, G, T, P are powers of 1024
    (``8G`` = 8192 MiB, ``512M`` = 512 MiB). A trailing ``B`` or ``iB`` is accepted.

    >>> parse_mem_mib("8G")
    8192.0
    >>> parse_mem_mib("512M")
    512.0
    >>> parse_mem_mib(100)
    100.0
    """
    if isinstance(text, bool):
        raise ValueError(f"not a memory size: {text!r}")
    if isinstance(text, int | float):
        value = float(text)
        if value < 0 or not math.isfinite(value):
            raise ValueError(f"memory size must be a finite number >= 0, got {text!r}")
        return value
    match = _SIZE_RE.match(text)
    if not match:
        raise ValueError(
            f"not a memory size: {text!r} (use a number of MiB or a Slurm-style size such as "
            "'8G', '512M')"
        )
    number, unit, _ = match.groups()
    return float(number) * _FACTORS_MIB[unit.upper()]


def gib_to_mib(gib: float) -> float:
    return gib * MIB_PER_GIB


def format_mem_mib(mib: float) -> str:
    """Render MiB as a Slurm ``--mem`` value: whole GiB as ``NG``, else whole MiB ``NM``."""
    whole = math.ceil(mib - 1e-9)
    if whole % 1024 == 0 and whole > 0:
        return f"{whole // 1024}G"
    return f"{whole}M"
