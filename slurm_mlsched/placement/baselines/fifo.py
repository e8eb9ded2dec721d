"""``fifo-ff`` and ``fifo-bf``: what plain Slurm does (MODEL.md §6), as placement policies.

Plain Slurm knows nothing of workers, parameter servers or locality. A job asks for its
N workers (one GPU each in replay) and the PSs a distributed run needs, and gets them all
at once, with constant counts, for its whole run (non-elastic; ``params.form`` is
ignored). Both policies decide on arrival, against the reservations already in the
snapshot, like every policy of the registry:

* **Layout** (select/cons_tres with block task distribution, modelled as first fit):
  the job's tasks, its workers first and then its PSs, are laid out over the machines in
  node order; each machine takes the longest run of the remaining tasks that fits in its
  room, then the next machine takes over (:func:`block_first_fit`). Room is the least
  residual capacity over the run's slots. The layout is tried with one PS over the
  co-located run length d_in = ⌈V / (N·ν_in)⌉; if every task lands on one machine the job
  runs co-located there (θ_in, one PS, MODEL.md O3). Otherwise the job runs distributed:
  N workers (capped by the PS rule when the PS count is fixed) and S = ps_needed(N) PSs,
  laid out over d_ex = ⌈V / (N·ν_ex)⌉ slots. Locality is a by-product, never a goal.
* **Start**: the earliest slot s ≥ a floor at which a layout fits. Room only grows where
  some reservation ends, so the candidates are the floor and every such end after it;
  the last one is the empty cluster. A job that does not fit even there can never run
  with all N workers at once: :class:`~slurm_mlsched.errors.NeverFitsError`.
* ``fifo-ff`` (first come, first served; Slurm's sched/builtin): the floor is the latest
  start among the snapshot's reservations (and the arrival), so no job starts before a job
  that was placed before it: no overtaking.
* ``fifo-bf`` (EASY backfill; sched/backfill): the floor is the arrival. A later job may
  start before earlier ones if it fits in the holes their reservations leave. EASY lets a
  job jump ahead only if it does not delay the reservation of the job at the head of the
  queue; here every earlier job already holds a reservation that nothing moves (decisions
  are taken on arrival and kept), so "does not delay" holds by construction, for the head
  job and all others (which makes it conservative backfill, the variant in which every
  queued job is protected; with exact run times and decisions on arrival the two differ
  only in that EASY may delay jobs behind the head, which never happens here).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from ...errors import NeverFitsError
from ...model import ClusterSnapshot, Decision, Form, JobRequest, Machine, Mode, SlotPlan
from ...model.speed import worker_rates
from ..params import PlacementParams
from ..program.eligibility import BoolArray, allowed, masked
from ..program.packing import EPS, fit_counts
from .timeline import FloatArray, IntArray, Timeline

SOLVER = "first-fit"


@dataclass(frozen=True)
class Layout:
    """Where and when the job runs: constant per-machine worker and PS counts."""

    start: int
    mode: Mode
    workers: IntArray  # (H,)
    ps: IntArray  # (H,)
    slots: int
    rate: float  # mini-batches per worker and slot in this mode

    @property
    def total_workers(self) -> int:
        return int(self.workers.sum())


def block_first_fit(
    room: FloatArray, alpha: FloatArray, n_workers: int, beta: FloatArray, n_ps: int
) -> tuple[IntArray, IntArray] | None:
    """Lay out ``n_workers`` workers then ``n_ps`` PSs over the machines in order, each
    machine taking the longest run of the remaining tasks that fits in its ``room`` row.

    Returns the per-machine (workers, PSs), or None when some task finds no room.
    """
    h = room.shape[0]
    workers = np.zeros(h, dtype=np.int64)
    ps = np.zeros(h, dtype=np.int64)
    last = 0  # machine holding the last worker (the PSs start there)
    if n_workers > 0:
        took = np.minimum(fit_counts(room, alpha), n_workers)
        cum = np.cumsum(took)
        if cum[-1] < n_workers:
            return None
        last = int(np.searchsorted(cum, n_workers))  # first machine where cum reaches N
        workers[:last] = took[:last]
        workers[last] = n_workers - (int(cum[last - 1]) if last else 0)
    if n_ps <= 0:
        return workers, ps
    left = room[last:].copy()
    left[0] -= alpha * workers[last]
    took_ps = np.minimum(fit_counts(left, beta), n_ps)
    cum_ps = np.cumsum(took_ps)
    if cum_ps[-1] < n_ps:
        return None
    end = int(np.searchsorted(cum_ps, n_ps))
    ps[last : last + end] = took_ps[:end]
    ps[last + end] = n_ps - (int(cum_ps[end - 1]) if end else 0)
    return workers, ps


def _slots_for(workload: float, rate: float) -> int:
    return max(1, math.ceil(workload / rate - 1e-9))


@dataclass(frozen=True)
class _Shapes:
    """The job's two requests: co-located (N workers, one PS) and distributed."""

    alpha: FloatArray
    beta: FloatArray
    n: int
    d_in: int
    nu_in: float
    w_ex: int  # distributed workers (0: no distributed shape satisfies the PS rules)
    s_ex: int
    d_ex: int
    nu_ex: float
    workload: float
    ok: BoolArray | None = None  # the machines the job's GPU tasks may use (None: all)

    @staticmethod
    def of(job: JobRequest, slot_seconds: float, machines: Sequence[Machine] = ()) -> _Shapes:
        nu_in, nu_ex = worker_rates(job, slot_seconds)
        n = job.max_workers
        w_ex = min(n, job.max_distributed_workers())
        if w_ex < job.min_distributed_workers():
            w_ex = 0
        return _Shapes(
            alpha=np.array(job.worker.as_tuple()),
            beta=np.array(job.ps.as_tuple()),
            n=n,
            d_in=_slots_for(job.workload, n * nu_in),
            nu_in=nu_in,
            w_ex=w_ex,
            s_ex=job.ps_needed(w_ex) if w_ex else 0,
            d_ex=_slots_for(job.workload, w_ex * nu_ex) if w_ex else 0,
            nu_ex=nu_ex,
            workload=job.workload,
            ok=allowed(job, machines) if machines else None,
        )

    def least_demand(self) -> FloatArray:
        """A lower bound on what either request needs in total (the pruning test)."""
        colo = self.alpha * self.n + self.beta
        if not self.w_ex:
            return colo
        out: FloatArray = np.minimum(colo, self.alpha * self.w_ex + self.beta * self.s_ex)
        return out


def _one_machine(workers: IntArray, ps: IntArray) -> int | None:
    used = np.flatnonzero(workers + ps)
    return int(used[0]) if len(used) == 1 else None


def layout_at(shapes: _Shapes, timeline: Timeline, start: int) -> Layout | None:
    """The job's layout if it starts at ``start``, or None if it does not fit then."""
    colo = block_first_fit(
        masked(timeline.room(start, start + shapes.d_in), shapes.ok),
        shapes.alpha,
        shapes.n,
        shapes.beta,
        1,
    )
    if colo is not None and _one_machine(*colo) is not None:
        return Layout(start, Mode.COLOCATED, colo[0], colo[1], shapes.d_in, shapes.nu_in)
    if not shapes.w_ex:
        return None
    room = masked(timeline.room(start, start + shapes.d_ex), shapes.ok)
    dist = block_first_fit(room, shapes.alpha, shapes.w_ex, shapes.beta, shapes.s_ex)
    if dist is None:
        return None
    h = _one_machine(*dist)
    if h is not None:  # (a capped worker count can land on one machine): one PS suffices
        workers, ps = dist[0], np.zeros_like(dist[1])
        ps[h] = 1
        slots = _slots_for(shapes.workload, shapes.w_ex * shapes.nu_in)
        return Layout(start, Mode.COLOCATED, workers, ps, slots, shapes.nu_in)
    return Layout(start, Mode.DISTRIBUTED, dist[0], dist[1], shapes.d_ex, shapes.nu_ex)


def earliest_layout(
    job: JobRequest,
    timeline: Timeline,
    floor: int,
    slot_seconds: float,
    machines: Sequence[Machine] = (),
) -> Layout:
    """The layout at the earliest start ≥ ``floor`` (see the module docstring); with
    ``machines`` (the timeline's), the job's GPU tasks only on the nodes its GPU types
    allow."""
    shapes = _Shapes.of(job, slot_seconds, machines)
    first = layout_at(shapes, timeline, floor)
    if first is not None:
        return first
    later = timeline.ends_after(floor)
    if len(later) > 1 and not timeline.oversubscribed():
        # necessary: the cluster as a whole has the room over the shorter run
        need = shapes.least_demand() - EPS
        short = min(shapes.d_in, shapes.d_ex) if shapes.w_ex else shapes.d_in
        ok: npt.NDArray[np.bool_] = np.asarray(
            (timeline.total_room(later, short) >= need).all(axis=1)
        )
        ok[-1] = True  # the empty cluster is always tried
        later = later[ok]
    for s in later:
        found = layout_at(shapes, timeline, int(s))
        if found is not None:
            return found
    raise NeverFitsError(
        f"job {job.job_id!r} never fits with all its {job.max_workers} workers at once, even "
        "on the empty cluster (plain Slurm runs a job with every task it asks for)",
        hint="replay it with an elastic policy, or on a bigger cluster",
        context={"job_id": job.job_id, "workers": job.max_workers},
    )


def _decision(
    job: JobRequest,
    layout: Layout,
    names: tuple[str, ...],
    policy: str,
    params: PlacementParams,
    elapsed_ms: float,
) -> Decision:
    workers = tuple((names[h], int(layout.workers[h])) for h in np.flatnonzero(layout.workers))
    ps = tuple((names[h], int(layout.ps[h])) for h in np.flatnonzero(layout.ps))
    plan = SlotPlan(layout.start, layout.mode, workers, ps, layout.slots)
    notes: tuple[str, ...] = ()
    if params.form is not Form.NON_ELASTIC:
        notes = (f"{policy} runs every job non-elastic: params.form is ignored",)
    return Decision(
        job_id=job.job_id,
        policy=policy,
        form=Form.NON_ELASTIC,
        seed=params.seed,
        slots=(plan,),
        start_slot=layout.start,
        end_slot=layout.start + layout.slots - 1,
        work_covered=layout.rate * layout.total_workers * layout.slots,
        arrival_slot=job.arrival_slot,
        solver=SOLVER,
        timings_ms=(("search", round(elapsed_ms, 3)),),
        notes=notes,
    )


def place_first_fit(
    job: JobRequest, snapshot: ClusterSnapshot, params: PlacementParams, policy: str, fcfs: bool
) -> Decision:
    """The requested width laid out first-fit at the earliest start (``fcfs``: no earlier
    than the latest start already in the snapshot), recorded under ``policy``."""
    began = time.perf_counter()
    a = max(job.arrival_slot, snapshot.now_slot)
    timeline = Timeline.of(snapshot, a)
    floor = a
    if fcfs:
        latest = timeline.latest_start()
        floor = a if latest is None else max(a, latest)
    layout = earliest_layout(job, timeline, floor, snapshot.slot_seconds, snapshot.machines)
    elapsed = (time.perf_counter() - began) * 1000.0
    return _decision(job, layout, timeline.names, policy, params, elapsed)


def place_fifo_ff(job: JobRequest, snapshot: ClusterSnapshot, params: PlacementParams) -> Decision:
    """Plain Slurm, first come first served: first-fit in node order, no overtaking."""
    return place_first_fit(job, snapshot, params, "fifo-ff", fcfs=True)


def place_fifo_bf(job: JobRequest, snapshot: ClusterSnapshot, params: PlacementParams) -> Decision:
    """Plain Slurm with EASY backfill: first-fit in node order in the earliest hole."""
    return place_first_fit(job, snapshot, params, "fifo-bf", fcfs=False)
