"""The states of a job array's tasks (``mlsub replay --on-slurm``).

Two sources, read through the one Slurm funnel:

* ``squeue -h -r -t all -j ID -o %i|%T``: one line per task (``-r`` expands pending
  tasks), finished ones included for ``MinJobAge`` seconds (300 by default); a job the
  controller no longer knows makes squeue fail with ``Invalid job id specified``, which
  means "none listed", not an error;
* ``sacct -n -P -X -j ID -o JobID,State`` (accounting, when slurmdbd runs): tasks that
  left the queue. Pending tasks may be folded there as ``ID_[0-5%2]``.

:func:`parse_array_states` is pure and reads both (``ID_K|STATE`` lines; ``STATE`` may be
``CANCELLED by 0``).
"""

from __future__ import annotations

import re

from ..errors import SlurmError
from .runner import SlurmCommands

_LINE = re.compile(r"^(\d+)_(\d+|\[[^\]]*\])\|(.*)$")
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def parse_array_states(text: str, job_id: str) -> dict[int, str]:
    """``{task index: STATE}`` of array job ``job_id`` from squeue/sacct lines ``ID_K|STATE``
    or ``ID_[a-b,c%N]|STATE``; other jobs' lines and blank lines are ignored."""
    out: dict[int, str] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match or match[1] != job_id:
            continue
        words = match[3].split()
        state = words[0].upper() if words else "UNKNOWN"
        for index in _indexes(match[2]):
            out[index] = state
    return out


def _indexes(text: str) -> list[int]:
    if not text.startswith("["):
        return [int(text)]
    inner = text[1:-1].split("%", 1)[0]
    out: list[int] = []
    for part in inner.split(","):
        match = _RANGE.match(part.strip())
        if match:
            first = int(match[1])
            last = int(match[2]) if match[2] else first
            out.extend(range(first, last + 1))
    return out


class ArrayStatusReader:
    """The tasks' states: squeue first, then sacct for the tasks squeue no longer lists."""

    def __init__(self, slurm: SlurmCommands) -> None:
        self.slurm = slurm

    def states(self, job_id: str, tasks: int) -> dict[int, str]:
        """``{index: STATE}`` for the tasks 0 … ``tasks`` − 1 that Slurm still knows."""
        out = parse_array_states(self._queue(job_id), job_id)
        if any(i not in out for i in range(tasks)):
            accounted = parse_array_states(self._accounting(job_id), job_id)
            for index, state in accounted.items():
                out.setdefault(index, state)
        return {i: s for i, s in out.items() if 0 <= i < tasks}

    def _queue(self, job_id: str) -> str:
        argv = ["squeue", "-h", "-r", "-t", "all", "-j", job_id, "-o", "%i|%T"]
        try:
            return self.slurm.run(argv)
        except SlurmError as err:
            if "invalid job id" in err.message.lower():
                return ""
            raise

    def _accounting(self, job_id: str) -> str:
        """sacct's lines, or nothing when accounting is not there (no slurmdbd)."""
        try:
            return self.slurm.run(["sacct", "-n", "-P", "-X", "-j", job_id, "-o", "JobID,State"])
        except SlurmError:
            return ""
