"""``optimus``: Optimus's marginal-gain allocation, re-run at every arrival and completion
(MODEL.md §6, Appendix A; Peng et al., EuroSys 2018). A re-allocating policy
(``placement.reallocation``): replay only.

**Speed model.** Each job's training speed with p PSs and w workers is modelled as

    f(p, w) = w / (θ0 + θ1·w/p + θ2·w + θ3·p),   θ ≥ 0,

fitted once per job by non-negative least squares (``scipy.optimize.nnls``) on
``optimus_samples`` samples (p, w) of our time model (MODEL.md §2), each with a relative
noise uniform in ±``optimus_noise``, drawn from the job's seed: w uniform in [1, N], p
uniform in [S(w), w] (the PS rule's count to the PS cap; a fixed ``--ps S`` is always S),
and the measured speed w/θ_mode, co-located (θ_in) when w workers and a PS fit on the
largest machine, as Optimus's own placement would run them, else distributed (θ_ex). The
fit is linear in θ: w/f = θ0 + θ1·(w/p) + θ2·w + θ3·p. Remaining time = R / f(p, w),
R = the job's remaining mini-batches.

**Allocation**, against the cluster's total capacity, at every event:

1. in arrival order, every job gets 1 worker + its PS(s) if they fit (a job that cannot
   run with 1 worker on the empty cluster, :func:`.task_layout.least_width`, gets the
   fewest it can run with);
2. then, repeatedly, the single task with the largest drop in remaining time per unit of
   its dominant resource, gain = R/f(p, w) − R/f(p', w') over max_r(demand_r / total_r),
   is added, among: a worker to some job (w < N; with the PS the PS rule then needs) or a
   PS (p < w; auto PS count only), while the gain is positive and the task fits (a task
   that does not fit is dropped: the room only shrinks). Ties go to the earlier job.

**Placement** (:func:`.task_layout.fewest_machines`): the fewest machines that hold the job,
its PSs and workers spread evenly over them; co-located when one machine holds it all. A job
that no even spread holds at any width on the empty cluster is laid out by the fallback of
:func:`.task_layout.spread_for` instead (:func:`.task_layout.any_layout`), so it runs
rather than waits forever.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from ...model import ClusterSnapshot, JobProfile, JobRequest, Machine, allreduce
from ..params import PlacementParams
from ..program.eligibility import allowed
from ..program.packing import EPS, fit_counts
from .reallocation import Allocation, RunningJob
from .task_layout import fewest_machines, least_width, place_counts, ps_for
from .timeline import Timeline

FloatArray = npt.NDArray[np.float64]
Theta = tuple[float, float, float, float]

#: The speed model's denominator never goes below this (s per mini-batch and worker).
_FLOOR = 1e-12


def speed(theta: Theta, ps: int, workers: int, allreduce: bool = False) -> float:
    """f(p, w) in mini-batches per second (0 without workers, or without PSs for a ps job;
    an allreduce job: w / (θ0 + θ2·w), no PS terms)."""
    t0, t1, t2, t3 = theta
    if workers <= 0:
        return 0.0
    if allreduce:
        return workers / max(t0 + t2 * workers, _FLOOR)
    if ps <= 0:
        return 0.0
    return workers / max(t0 + t1 * workers / ps + t2 * workers + t3 * ps, _FLOOR)


@lru_cache(maxsize=16_384)
def fit_speed_model(
    profile: JobProfile,
    max_workers: int,
    ps_count: int | None,
    colocated_up_to: int,
    ps_per_worker: float,
    seed: int,
    samples: int,
    noise: float,
) -> Theta:
    """θ by NNLS on noisy samples of the time model (module docstring). Pure; memoized
    (a job's fit is asked for at every event). ``ps_count`` 0: an allreduce job, sampled
    at the ring formula's step time (:func:`_ring_thetas`) and fitted without PS terms."""
    rng = np.random.default_rng(seed)
    n = max(samples, 1)
    w = rng.integers(1, max_workers + 1, size=n)
    if ps_count == 0:
        ring = _ring_thetas(profile, max_workers, colocated_up_to)
        measured = w / ring[w - 1] * (1.0 + rng.uniform(-noise, noise, size=n))
        ring_design = np.column_stack([np.ones(n), w]).astype(np.float64)
        from scipy.optimize import nnls  # on first use: scipy.optimize is slow to import

        c, _ = nnls(ring_design, w / measured)
        return (float(c[0]), 0.0, float(c[1]), 0.0)
    if ps_count is not None:
        p = np.where(w < ps_count, 1, ps_count)
    else:
        lo = np.maximum(1, np.minimum(w, np.ceil(w * ps_per_worker - 1e-9))).astype(np.int64)
        p = rng.integers(lo, w + 1)
    theta = np.where(w <= colocated_up_to, profile.theta_in, profile.theta_ex)
    measured = w / theta * (1.0 + rng.uniform(-noise, noise, size=n))
    design = np.column_stack([np.ones(n), w / p, w, p]).astype(np.float64)
    from scipy.optimize import nnls  # on first use: scipy.optimize is slow to import

    coef, _ = nnls(design, w / measured)
    return (float(coef[0]), float(coef[1]), float(coef[2]), float(coef[3]))


def _ring_thetas(profile: JobProfile, max_workers: int, per_node: int) -> FloatArray:
    """Seconds per mini-batch per worker, T_step(layout), for w = 1 … N workers laid as
    Optimus's placement lays them: on one node up to ``per_node``, else over the fewest
    nodes, evenly (the ring formula, :mod:`...model.allreduce`)."""
    per = max(per_node, 1)
    out = []
    for w in range(1, max_workers + 1):
        k = -(-w // per)
        layout = tuple(w // k + (1 if i < w % k else 0) for i in range(k))
        out.append(allreduce.step_seconds(layout, profile))
    return np.asarray(out, dtype=np.float64)


class _Job:
    """One job's state during an allocation."""

    __slots__ = ("alpha", "beta", "index", "ps", "remaining", "request", "theta", "workers")

    def __init__(self, index: int, job: RunningJob, theta: Theta, workers: int, ps: int) -> None:
        self.index = index
        self.request: JobRequest = job.request
        self.remaining = job.remaining
        self.theta = theta
        self.alpha: FloatArray = np.asarray(job.request.worker.as_tuple())
        self.beta: FloatArray = np.asarray(job.request.ps.as_tuple())
        self.workers = workers
        self.ps = ps

    def time_left(self, ps: int, workers: int) -> float:
        f = speed(self.theta, ps, workers, self.request.is_allreduce)
        return self.remaining / f if f > 0 else float("inf")

    def worker_task(self) -> tuple[int, int, FloatArray] | None:
        """(new workers, new PSs, added demand) for one more worker, None at N."""
        w = self.workers + 1
        if w > self.request.max_workers:
            return None
        p = max(self.ps, ps_for(self.request, w))
        return w, p, self.alpha + self.beta * (p - self.ps)

    def ps_task(self) -> tuple[int, int, FloatArray] | None:
        if self.request.ps_count is not None or self.ps >= self.workers:
            return None
        return self.workers, self.ps + 1, self.beta


def first_tasks(
    jobs: tuple[RunningJob, ...], free: FloatArray, least: Sequence[int] | None = None
) -> list[tuple[int, int]]:
    """Step 1: in arrival order, one worker (``least[i]`` for job i: the fewest it can
    run with, :func:`.task_layout.least_width`; 1 for nearly every job) and its PS(s) for
    every job they fit; ``free`` (the total capacity) is reduced in place."""
    n = len(jobs)
    if not n:
        return []
    first = list(least) if least is not None else [1] * n
    ps1 = [ps_for(j.request, w) for j, w in zip(jobs, first, strict=True)]
    demand = np.array(
        [
            tuple(
                a * w + b * k
                for a, b in zip(j.request.worker.as_tuple(), j.request.ps.as_tuple(), strict=True)
            )
            for j, w, k in zip(jobs, first, ps1, strict=True)
        ]
    ).reshape(n, 3)
    total = demand.sum(axis=0)
    if (total <= free + EPS).all():  # all fit (the usual case): no loop
        free -= total
        return list(zip(first, ps1, strict=True))
    out: list[tuple[int, int]] = []
    for row, w, k in zip(demand, first, ps1, strict=True):
        if (row <= free + EPS).all():
            free -= row
            out.append((w, k))
        else:
            out.append((0, 0))
    return out


def _colocated_up_to(job: JobRequest, capacity: FloatArray) -> int:
    """Most workers that fit with one PS on the largest machine."""
    room = capacity - np.asarray(job.ps.as_tuple())
    ok = (room >= -EPS).all(axis=1)
    if not ok.any():
        return 0
    return int(fit_counts(room[ok], np.asarray(job.worker.as_tuple())).max())


def _theta(
    job: RunningJob, capacity: FloatArray, params: PlacementParams, memo: dict[object, int]
) -> Theta:
    r = job.request
    key = (r.worker, r.ps)
    if key not in memo:
        memo[key] = _colocated_up_to(r, capacity)
    return fit_speed_model(
        r.profile,
        r.max_workers,
        r.ps_count,
        memo[key],
        r.profile.ps_per_worker,
        job.seed,
        params.optimus_samples,
        params.optimus_noise,
    )


@lru_cache(maxsize=16_384)
def own_end(
    theta: Theta, job: JobRequest, workers: int, ps: int, share: tuple[float, float, float]
) -> tuple[int, int]:
    """Where a job's own greedy ends with the cluster to itself: from (workers, ps), its
    better task (largest drop per dominant share, positive) while there is one. The drop
    R·(1/f − 1/f') scales with R, so the path does not depend on the remaining work."""
    s = _Job(0, RunningJob(job, 0, 1.0, None), theta, workers, ps)
    weights = np.asarray(share)
    while True:
        now = s.time_left(s.ps, s.workers)
        best: tuple[float, int, int] | None = None
        for task in (s.worker_task(), s.ps_task()):
            if task is None:
                continue
            gain = now - s.time_left(task[1], task[0])
            dominant = float((task[2] * weights).max())
            if gain > 0 and dominant > 0 and (best is None or gain / dominant > best[0]):
                best = (gain / dominant, task[0], task[1])
        if best is None:
            return s.workers, s.ps
        s.workers, s.ps = best[1], best[2]


def _all_reach_their_own_end(state: list[_Job], free: FloatArray, share: FloatArray) -> bool:
    """If every job's own end (:func:`own_end`) fits at once, the global greedy ends there
    too (it never meets a task that does not fit): set it and say so."""
    key = (float(share[0]), float(share[1]), float(share[2]))
    ends = [own_end(s.theta, s.request, s.workers, s.ps, key) for s in state]
    extra = np.zeros(3)
    for s, (w, p) in zip(state, ends, strict=True):
        extra += s.alpha * (w - s.workers) + s.beta * (p - s.ps)
    if not (extra <= free + EPS).all():
        return False
    for s, (w, p) in zip(state, ends, strict=True):
        s.workers, s.ps = w, p
    return True


def allocate_counts(
    jobs: tuple[RunningJob, ...],
    capacity: FloatArray,
    params: PlacementParams,
    machines: Sequence[Machine] = (),
) -> list[tuple[int, int]]:
    """(workers, PSs) per job: Optimus's greedy against the total capacity. Only jobs that
    run and can take a task (N > 1) enter step 2: a one-worker job has its one PS.
    ``machines`` (in capacity order) give the nodes' GPU types, for the fewest workers
    a typed job can run with."""
    total = capacity.sum(axis=0)
    free = total.copy()
    share = np.where(total > 0, 1.0 / np.where(total > 0, total, 1.0), 0.0)
    least = [
        least_width(
            j.request,
            capacity,
            fewest_machines,
            ok=allowed(j.request, machines) if machines else None,
        )
        for j in jobs
    ]
    counts = first_tasks(jobs, free, least)
    memo: dict[object, int] = {}
    state = [
        _Job(i, j, _theta(j, capacity, params, memo), *counts[i])
        for i, j in enumerate(jobs)
        if counts[i][0] and j.request.max_workers > 1
    ]
    if _all_reach_their_own_end(state, free, share):
        for s in state:
            counts[s.index] = (s.workers, s.ps)
        return counts
    by_index = {s.index: s for s in state}
    heap: list[tuple[float, int, int, int, int]] = []  # (−gain/share, job, kind, w, p)

    def push(s: _Job) -> None:
        now = s.time_left(s.ps, s.workers)
        for kind, task in ((0, s.worker_task()), (1, s.ps_task())):
            if task is None:
                continue
            w, p, demand = task
            gain = now - s.time_left(p, w)
            dominant = float((demand * share).max())
            if gain > 0 and dominant > 0:
                heapq.heappush(heap, (-gain / dominant, s.index, kind, s.workers, s.ps))

    for s in state:
        push(s)
    while heap:  # 2. the largest gain per unit of dominant resource, while it fits
        _, i, kind, w0, p0 = heapq.heappop(heap)
        s = by_index[i]
        if (s.workers, s.ps) != (w0, p0):
            continue  # stale: the job grew since
        task = s.worker_task() if kind == 0 else s.ps_task()
        if task is None or not (task[2] <= free + EPS).all():
            continue  # never fits again: the room only shrinks
        s.workers, s.ps = task[0], task[1]
        free -= task[2]
        push(s)
    for s in state:
        counts[s.index] = (s.workers, s.ps)
    return counts


def reallocate_optimus(
    jobs: tuple[RunningJob, ...], cluster: ClusterSnapshot, slot: int, params: PlacementParams
) -> tuple[Allocation | None, ...]:
    """Optimus: marginal-gain greedy on a fitted speed model, fewest-machines placement."""
    capacity = Timeline.of(cluster, slot).capacity
    counts = allocate_counts(jobs, capacity, params, cluster.machines)
    return place_counts(
        jobs, counts, capacity, fewest_machines, params.realloc_keep_placement, cluster.machines
    )
