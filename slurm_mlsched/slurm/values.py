"""One decoder for the numbers in Slurm's JSON (``sinfo``/``squeue``/``sacct --json``, 22.05
and 24.11 layouts), used by the node-state, job-state and trace readers alike.

* **Layouts**: a plain number (22.05), or ``{"set": …, "infinite": …, "number": …}``
  (24.11); a string of decimal digits is read as its number.
* **Sentinels**: ``None``, an unset or infinite value, and Slurm's NO_VAL / INFINITE
  (32- and 64-bit) read as ``None`` ("not known" / "no limit"): the caller decides what
  that means for its field.
* **Errors**: anything else (a bool, text, a list, a NaN) raises :class:`SlurmValueError`
  naming the field: never a silent ``None``. The live readers turn it into a
  ``SlurmError`` naming the command; the trace reader into a reported bad row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

#: NO_VAL, INFINITE, NO_VAL64, INFINITE64 (slurm.h).
SENTINELS = frozenset({0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFFFFFFFFFE, 0xFFFFFFFFFFFFFFFF})


class SlurmValueError(ValueError):
    """A value in Slurm's JSON that is not a number in any layout Slurm writes."""

    def __init__(self, path: str, value: object, reason: str) -> None:
        self.path, self.value, self.reason = path, value, reason
        super().__init__(f"{path or 'value'}: {reason}, got {value!r}"[:300])


def slurm_number(value: object, path: str = "") -> float | None:
    """The number in ``value``, ``None`` for "not known / no limit" (see the module)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise SlurmValueError(path, value, "expected a number")
    if isinstance(value, int):
        return None if value in SENTINELS else float(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise SlurmValueError(path, value, "expected a finite number")
        return None if value in SENTINELS else value
    if isinstance(value, Mapping) and ("number" in value or "set" in value):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        return slurm_number(value.get("number"), path)
    if isinstance(value, str) and value.strip().isdigit():
        return slurm_number(int(value.strip()), path)
    raise SlurmValueError(path, value, "expected a number or {set, infinite, number}")
