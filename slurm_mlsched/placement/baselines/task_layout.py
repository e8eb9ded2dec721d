"""From worker/PS counts to machines, for the re-allocating policies (pure numpy).

``optimus`` and ``drf`` first decide how many workers W (and PSs S) each active job gets,
against the cluster's **total** capacity; then this module places them:

1. **keep** (``params.realloc_keep_placement``, default): a job whose counts did not change
   keeps its machines (no migration); its usage is taken out of the room first;
2. the other jobs are placed one by one, in arrival order, on what is left:
   * **co-located** if W workers and one PS fit on one machine (MODEL.md O3: one PS
     suffices there; the job then runs at θ_in);
   * otherwise **distributed** with the counts asked for (PS rule of MODEL.md §2);
   * which machines: the policy's :data:`Spread` (Optimus: the fewest machines, tasks
     spread evenly, :func:`fewest_machines`; DRF: first fit in node order,
     :func:`first_fit`);
   * a job that does not fit (the counts were decided on the total, and machines are
     fragmented) **sheds** workers one at a time (with the PSs the rule then needs) until it
     fits; with none left it waits until the next event.

With a fixed PS count S (``--ps S``) a job runs distributed only with S ≤ W ≤ ⌊S·B_ex/b_ex⌋
workers and S PSs; other worker counts can only run co-located.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from ...model import JobRequest, Mode
from ..packing import EPS, fit_counts
from ..reallocation import Allocation, Counts, RunningJob
from .fifo import block_first_fit

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

Spread = Callable[[FloatArray, FloatArray, int, FloatArray, int], tuple[IntArray, IntArray] | None]
"""``spread(room, alpha, workers, beta, ps)`` -> per-machine (workers, PSs), or None."""


def ps_for(job: JobRequest, workers: int) -> int:
    """PSs a job with ``workers`` workers holds in the allocation step: the PS rule when
    distributed is possible (``ps_needed``), else one (co-located only)."""
    if workers <= 0:
        return 0
    lo, hi = job.min_distributed_workers(), job.max_distributed_workers()
    if job.ps_count is not None and not lo <= workers <= hi:
        return 1
    return job.ps_needed(workers)


def fewest_machines(
    room: FloatArray, alpha: FloatArray, workers: int, beta: FloatArray, ps: int
) -> tuple[IntArray, IntArray] | None:
    """Optimus's placement: the smallest k such that the k machines with the most room
    (for workers; ties to the lower index) hold the job with its workers and its PSs each
    spread evenly (⌈n/k⌉ or ⌊n/k⌋ per machine; the extra workers on the first machines, the
    extra PSs on the last)."""
    h = room.shape[0]
    order = np.lexsort((np.arange(h), -fit_counts(room, alpha)))
    for k in range(1, min(h, workers + ps) + 1):
        sel = order[:k]
        w = np.full(k, workers // k, dtype=np.int64)
        w[: workers % k] += 1
        s = np.full(k, ps // k, dtype=np.int64)
        if ps % k:
            s[k - ps % k :] += 1
        need = w[:, None] * alpha + s[:, None] * beta
        if (room[sel] >= need - EPS).all():
            out_w = np.zeros(h, dtype=np.int64)
            out_s = np.zeros(h, dtype=np.int64)
            out_w[sel], out_s[sel] = w, s
            return out_w, out_s
    return None


def first_fit(
    room: FloatArray, alpha: FloatArray, workers: int, beta: FloatArray, ps: int
) -> tuple[IntArray, IntArray] | None:
    """First fit in node order, workers then PSs, each machine taking the longest run of
    the remaining tasks that fits (Slurm's block distribution, as ``fifo-*``)."""
    return block_first_fit(room, alpha, workers, beta, ps)


def _pairs(counts: IntArray) -> Counts:
    return tuple((int(h), int(counts[h])) for h in np.flatnonzero(counts))


def usage_rows(
    pairs: Sequence[tuple[JobRequest, Allocation]],
) -> tuple[list[int], list[tuple[float, float, float]]]:
    """(machine, usage) rows of every task group of the allocations (for one ``np.add.at``)."""
    rows: list[int] = []
    use: list[tuple[float, float, float]] = []
    for job, alloc in pairs:
        for demand, counts in ((job.worker, alloc.workers), (job.ps, alloc.ps)):
            g, c, m = demand.gpu, demand.cpu, demand.mem
            for h, n in counts:
                rows.append(h)
                use.append((g * n, c * n, m * n))
    return rows, use


def _one_machine(workers: IntArray, ps: IntArray) -> int | None:
    used = np.flatnonzero(workers + ps)
    return int(used[0]) if len(used) == 1 else None


def place_one(
    job: JobRequest, workers: int, ps: int, room: FloatArray, spread: Spread, shed: bool = True
) -> Allocation | None:
    """The job's tasks on ``room`` (module docstring, step 2), shedding workers until they
    fit (``shed=False``: all ``workers`` or nothing); ``room`` is reduced by what is
    placed."""
    alpha, beta = np.asarray(job.worker.as_tuple()), np.asarray(job.ps.as_tuple())
    lo, hi = job.min_distributed_workers(), job.max_distributed_workers()
    for w in range(workers, 0 if shed else workers - 1, -1):
        s = ps if w == workers else ps_for(job, w)
        colo = spread(room, alpha, w, beta, 1)
        if colo is not None and (h := _one_machine(*colo)) is not None:
            room[h] -= alpha * w + beta
            return Allocation(Mode.COLOCATED, ((h, w),), ((h, 1),))
        if not lo <= w <= hi:
            continue
        dist = spread(room, alpha, w, beta, max(s, job.ps_needed(w)))
        if dist is None:
            continue
        room -= dist[0][:, None] * alpha + dist[1][:, None] * beta
        if (h := _one_machine(*dist)) is not None:  # landed on one machine: one PS there
            room[h] += beta * (int(dist[1][h]) - 1)
            return Allocation(Mode.COLOCATED, ((h, w),), ((h, 1),))
        return Allocation(Mode.DISTRIBUTED, _pairs(dist[0]), _pairs(dist[1]))
    return None


def _unchanged(alloc: Allocation, workers: int, ps: int) -> bool:
    if alloc.total_workers != workers:
        return False
    return alloc.mode is Mode.COLOCATED or alloc.total_ps == ps


def place_counts(
    jobs: Sequence[RunningJob],
    counts: Sequence[tuple[int, int]],
    capacity: FloatArray,
    spread: Spread,
    keep: bool,
) -> tuple[Allocation | None, ...]:
    """Allocations for ``jobs`` with the (workers, PSs) of ``counts`` (module docstring)."""
    room = np.array(capacity, dtype=np.float64)
    out: list[Allocation | None] = [None] * len(jobs)
    todo: list[int] = []
    kept: list[tuple[JobRequest, Allocation]] = []
    for i, (job, (w, s)) in enumerate(zip(jobs, counts, strict=True)):
        if w <= 0:
            continue
        if keep and job.allocation is not None and _unchanged(job.allocation, w, s):
            kept.append((job.request, job.allocation))
            out[i] = job.allocation
        else:
            todo.append(i)
    if kept:
        rows, use = usage_rows(kept)
        np.subtract.at(room, np.asarray(rows), np.asarray(use))
    for i in todo:
        w, s = counts[i]
        out[i] = place_one(jobs[i].request, w, s, room, spread)
    return tuple(out)
