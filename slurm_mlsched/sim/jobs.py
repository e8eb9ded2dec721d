"""Jobs of a replay: a request plus its submission time, and the slot it arrives in.

Replay time is seconds after the replay epoch (the wall time of slot 0, normally the first
submission of the trace). A job submitted at ``submit_s`` arrives in slot
a = ⌈submit_s / Δ⌉: the first slot boundary at or after its submission. A slot that has
already begun is not given out in hindsight, so no job starts before it was submitted
(waits are ≥ 0), at the cost of up to Δ of waiting added to every job.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..model import Architecture, JobRequest, Resources


@dataclass(frozen=True)
class SimJob:
    """One job of a replay: its request (``arrival_slot`` = a) and its submit time (s)."""

    request: JobRequest
    submit_s: float

    @property
    def job_id(self) -> str:
        return self.request.job_id


def arrival_slot(submit_s: float, slot_seconds: float) -> int:
    """a = ⌈submit_s / Δ⌉ (a submission on a boundary arrives in that slot)."""
    if submit_s < 0 or not math.isfinite(submit_s):
        raise ValueError(f"submit time must be a finite number >= 0, got {submit_s!r}")
    return math.ceil(submit_s / slot_seconds - 1e-9)


def sim_jobs(entries: Iterable[tuple[JobRequest, float]], slot_seconds: float) -> list[SimJob]:
    """Pair each request with its submit time, set its arrival slot from that time, and
    order the jobs as the replay sees them: by submit time, then job id. Job ids must be
    distinct."""
    out = [
        SimJob(replace(req, arrival_slot=arrival_slot(submit, slot_seconds)), float(submit))
        for req, submit in entries
    ]
    ids = [j.job_id for j in out]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})[:5]
        raise ValueError(f"job ids must be distinct, repeated: {dup}")
    return sorted(out, key=lambda j: (j.submit_s, j.job_id))


#: A job reads as allreduce under :func:`as_allreduce` from this many GPUs in all.
ALLREDUCE_FROM_GPUS = 2


def as_allreduce(
    jobs: Iterable[SimJob], from_gpus: int = ALLREDUCE_FROM_GPUS
) -> tuple[SimJob, ...]:
    """The all-reduce reading of a replay (issue 31): every job of at least ``from_gpus``
    GPUs in all (N × its worker's GPUs) becomes an ``allreduce`` job — no PS, ``ps_count``
    0, the same workers, workload and submit time; the others are unchanged. Traces say
    how many GPUs a job had, not how it exchanged gradients, so this is a reading, not
    data (docs/formulation.md §18)."""
    out = []
    for job in jobs:
        r = job.request
        if not r.is_allreduce and r.max_workers * r.worker.gpu >= from_gpus:
            r = replace(r, ps=Resources(), ps_count=0, arch=Architecture.ALLREDUCE)
        out.append(SimJob(r, job.submit_s))
    return tuple(out)
