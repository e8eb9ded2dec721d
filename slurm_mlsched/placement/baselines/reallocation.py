"""The data of re-allocating policies (``optimus``, ``drf``; MODEL.md §6), pure.

A re-allocating policy is called at every event of the replay (an arrival or a completion)
with every **active** job (arrived, not finished) and returns, for each, its
:class:`Allocation` until the next event, or None (the job waits). Its signature
(``registry.ReallocateFn``)::

    reallocate(jobs: tuple[RunningJob, ...], cluster: ClusterSnapshot, slot: int,
               params: PlacementParams) -> tuple[Allocation | None, ...]

``cluster`` is the replay's empty cluster (its machines and Δ; re-allocating policies own
the whole cluster, so it holds no reservations), ``slot`` the slot of the event, ``jobs``
in arrival order (arrival slot, submit time, job id). The simulator (``sim.realloc``)
accounts the progress with MODEL.md's time model, W·ν_mode mini-batches per slot, checks
every allocation (:func:`allocation_problems`, capacity) and calls again at the next event.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ...model import JobRequest, Machine, Mode
from ...model.eligibility import ineligible_use
from ...model.speed import layout_rate

Counts = tuple[tuple[int, int], ...]
"""(machine index, count) pairs, in machine order, counts > 0."""


@dataclass(frozen=True, slots=True)
class Allocation:
    """A running job's tasks from one event to the next: the mode and the per-machine
    worker and PS counts (machine indices into ``cluster.machines``).

    Co-located (every task on one machine, exactly one PS) runs at θ_in, distributed at
    θ_ex (MODEL.md §2)."""

    mode: Mode
    workers: Counts
    ps: Counts

    @property
    def total_workers(self) -> int:
        return sum(c for _, c in self.workers)

    @property
    def total_ps(self) -> int:
        return sum(c for _, c in self.ps)

    def rate(self, job: JobRequest, slot_seconds: float) -> float:
        """Mini-batches per slot: W · ν_mode (a ``ps`` job, asynchronous training), the ring
        formula of the layout (an ``allreduce`` job; :func:`~...model.speed.layout_rate`)."""
        return layout_rate(job, [c for _, c in self.workers], self.mode, slot_seconds)


@dataclass(frozen=True, slots=True)
class RunningJob:
    """An active job as a re-allocating policy sees it at an event."""

    request: JobRequest
    seed: int  # derive_seed(params.seed, job_id): every random step of the job uses it
    remaining: float  # mini-batches still to train (> 0)
    allocation: Allocation | None  # what it ran with since the last event (None: waiting)
    attained_s: float = 0.0  # service so far: GPU-seconds (worker-seconds without GPUs)


def service_rate(job: JobRequest, alloc: Allocation) -> float:
    """Attained service per second of an allocation: its GPUs (its workers when the job
    uses no GPU), Tiresias's two-dimensional service (count × time)."""
    gpus = job.worker.gpu * alloc.total_workers + job.ps.gpu * alloc.total_ps
    return gpus if gpus > 0 else float(alloc.total_workers)


def allocation_problems(
    job: JobRequest, alloc: Allocation, n_machines: int, machines: Sequence[Machine] = ()
) -> list[str]:
    """MODEL.md's rules for one job's allocation (capacity is checked over all jobs):
    1 ≤ W ≤ N; co-located: one machine, one PS; distributed: the PS rules of §2; with
    ``machines``, no GPU task on a node the job's GPU types exclude."""
    out: list[str] = []
    w, s = alloc.total_workers, alloc.total_ps
    for h, c in (*alloc.workers, *alloc.ps):
        if not 0 <= h < n_machines or c < 1:
            out.append(f"bad (machine, count) pair ({h}, {c})")
    if machines and not out:
        bad = ineligible_use(
            job,
            machines,
            [machines[h].name for h, _ in alloc.workers],
            [machines[h].name for h, _ in alloc.ps],
        )
        if bad:
            out.append(f"GPU task(s) on node(s) {list(bad)} of a GPU type the job excludes")
    if not 1 <= w <= job.max_workers:
        out.append(f"{w} workers outside [1, {job.max_workers}]")
    if job.is_allreduce:  # no PS; any layout (its rate is the ring formula's)
        if s:
            out.append(f"{s} PSs for an allreduce job, which has none")
        if alloc.mode is Mode.COLOCATED and len({h for h, _ in alloc.workers}) != 1:
            out.append("co-located needs one machine")
        return out
    if alloc.mode is Mode.COLOCATED:
        used = {h for h, _ in (*alloc.workers, *alloc.ps)}
        if len(used) != 1 or s != 1:
            out.append(f"co-located needs one machine and one PS (machines {used}, ps {s})")
        return out
    if job.ps_count is not None and s != job.ps_count:
        out.append(f"{s} PSs but the job fixes {job.ps_count}")
    if s < job.ps_needed(w) or s > w:
        out.append(f"{s} PSs for {w} workers (need {job.ps_needed(w)}..{w})")
    if w > job.max_distributed_workers():
        out.append(f"{w} distributed workers > {job.max_distributed_workers()} (PS rule)")
    return out
