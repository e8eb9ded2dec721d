"""The replay loop of re-allocating policies (``optimus``, ``drf``), pure and deterministic.

The sibling of :func:`slurm_mlsched.sim.engine.simulate` for policies that change running
jobs' worker/PS counts over time (``placement.reallocation``). Same inputs, same
:class:`~slurm_mlsched.sim.result.SimResult`, so the metrics and reports are the same.

Events are arrivals (slot a_i, in submission order) and completions. At each slot with an
event the policy is called **once** with every active job (arrived and unfinished, in
arrival order), its remaining work and its current allocation, and returns every job's
allocation until the next event (None: the job waits). The loop then

* checks the allocations: MODEL.md's rules per job
  (``placement.reallocation.allocation_problems``) and the capacity of every machine,
  summed over all jobs; a breach is a bug in the policy (RuntimeError);
* runs time forward with MODEL.md's time model: a job with W workers in mode m trains
  W·ν_m mini-batches per slot (ν_in = Δ/θ_in co-located, ν_ex = Δ/θ_ex distributed), so
  with R left it ends in slot t + ⌈R / (W·ν_m)⌉ − 1; the next event is the earliest such
  end + 1 or the next arrival;
* charges the **restart cost** (MODEL.md §6, ``params.restart_s``): a job that has run
  before and gets a different allocation (resized, migrated, or resumed after a
  preemption) makes no progress for ``restart_s`` seconds while it holds the new one; in
  slots, its remaining work grows by the new rate × ``restart_s / Δ``, which is the same
  when the allocation lasts that long and charges again if it changes sooner;
* at a job's completion, records its :class:`~slurm_mlsched.model.Decision` (elastic):
  the runs of identical allocations it had, from its first running slot to its last.

Nothing is rejected (a re-allocating policy never turns a job away; admitted jobs fit the
empty cluster). A call that runs no job while jobs wait and none is still to arrive could
never end: RuntimeError. Each call is timed (``time.perf_counter``, durations only):
``SimResult.call_ms``, the decision latency of these policies.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..errors import PolicyStallError
from ..model import ClusterSnapshot, Decision, Form, Machine, SlotPlan
from ..placement.baselines.reallocation import (
    Allocation,
    RunningJob,
    allocation_problems,
    service_rate,
)
from ..placement.baselines.task_layout import usage_rows
from ..placement.params import PlacementParams, derive_seed
from ..placement.policy_table import ReallocateFn, WakeupFn
from .jobs import SimJob
from .result import JobOutcome, SimResult

Progress = Callable[[int, int], None]

EPS = 1e-6
NOTES = ("re-allocated at every arrival and completion; decision latency is per call",)


@dataclass
class _Active:
    """A job between its arrival and its completion."""

    job: SimJob
    seed: int
    remaining: float
    allocation: Allocation | None = None
    runs: list[tuple[int, int, Allocation]] = field(default_factory=list)  # (start, stop, alloc)
    rate: float = 0.0
    ran: bool = False  # has held an allocation before
    restarts: int = 0
    attained: float = 0.0  # GPU-seconds (worker-seconds without GPUs) run so far

    def record(self, start: int, stop: int) -> None:
        if self.allocation is None or stop <= start:
            return
        if self.runs and self.runs[-1][1] == start and self.runs[-1][2] == self.allocation:
            self.runs[-1] = (self.runs[-1][0], stop, self.allocation)
        else:
            self.runs.append((start, stop, self.allocation))


def _plan(start: int, stop: int, alloc: Allocation, names: tuple[str, ...]) -> SlotPlan:
    return SlotPlan(
        start,
        alloc.mode,
        tuple((names[h], c) for h, c in alloc.workers),
        tuple((names[h], c) for h, c in alloc.ps),
        stop - start,
    )


def _decision(
    act: _Active, policy: str, names: tuple[str, ...], delta: float, end: int
) -> Decision:
    plans = tuple(_plan(s, e, a, names) for s, e, a in act.runs)
    request = act.job.request
    work = sum(a.rate(request, delta) * (e - s) for s, e, a in act.runs)
    return Decision(
        job_id=act.job.job_id,
        policy=policy,
        form=Form.ELASTIC,
        seed=act.seed,
        slots=plans,
        start_slot=plans[0].slot,
        end_slot=end,
        work_covered=work,
        arrival_slot=request.arrival_slot,
        solver=f"{policy}-reallocation",
        notes=NOTES,
        stats=(("restarts", float(act.restarts)),),
    )


def _check(
    active: Sequence[_Active],
    got: Sequence[Allocation | None],
    capacity: np.ndarray,
    slot: int,
    machines: Sequence[Machine] = (),
) -> None:
    if len(got) != len(active):
        raise RuntimeError(f"slot {slot}: {len(got)} allocations for {len(active)} jobs")
    pairs = []
    for act, alloc in zip(active, got, strict=True):
        if alloc is None:
            continue
        request = act.job.request
        if alloc is not act.allocation:
            problems = allocation_problems(request, alloc, len(capacity), machines)
            if problems:
                raise RuntimeError(f"slot {slot}: job {act.job.job_id!r}: {'; '.join(problems)}")
        pairs.append((request, alloc))
    rows, use = usage_rows(pairs)
    if not rows:
        return
    held = np.zeros_like(capacity)
    np.add.at(held, np.asarray(rows), np.asarray(use))
    over = np.flatnonzero((held > capacity + EPS).any(axis=1))
    if len(over):
        h = int(over[0])
        raise RuntimeError(
            f"slot {slot}: machine {h} over capacity: {held[h].tolist()} > {capacity[h].tolist()}"
        )


def simulate_reallocating(
    jobs: Sequence[SimJob],
    cluster: ClusterSnapshot,
    policy: str,
    reallocate: ReallocateFn,
    params: PlacementParams,
    progress: Progress | None = None,
    progress_every: int = 100,
    wakeup: WakeupFn | None = None,
) -> SimResult:
    """Replay ``jobs`` on the empty ``cluster`` under the re-allocating ``policy`` (module
    docstring); ``wakeup`` (the policy's hook) adds calls between arrivals and ends.
    Deterministic for ``params.seed``; ``progress(done, total)`` counts finished jobs."""
    order = sorted(
        range(len(jobs)),
        key=lambda i: (jobs[i].request.arrival_slot, jobs[i].submit_s, jobs[i].job_id),
    )
    queue = [jobs[i] for i in order]
    names = tuple(m.name for m in cluster.machines)
    capacity = np.array([m.capacity.as_tuple() for m in cluster.machines]).reshape(-1, 3)
    delta = cluster.slot_seconds
    restart = max(0.0, params.restart_s) / delta  # slots of no progress per re-allocation
    decided: dict[str, Decision] = {}
    active: list[_Active] = []
    calls: list[float] = []
    nxt = done = peak = 0
    slot = queue[0].request.arrival_slot if queue else 0
    while nxt < len(queue) or active:
        while nxt < len(queue) and queue[nxt].request.arrival_slot <= slot:
            job = queue[nxt]
            active.append(_Active(job, derive_seed(params.seed, job.job_id), job.request.workload))
            nxt += 1
        view = tuple(
            RunningJob(a.job.request, a.seed, a.remaining, a.allocation, a.attained) for a in active
        )
        peak = max(peak, len(view))
        began = time.perf_counter()
        got = reallocate(view, cluster, slot, params)
        calls.append(round((time.perf_counter() - began) * 1000.0, 4))
        _check(active, got, capacity, slot, cluster.machines)
        following = queue[nxt].request.arrival_slot if nxt < len(queue) else math.inf
        ends: list[float] = []
        for act, alloc in zip(active, got, strict=True):
            if alloc is not act.allocation and alloc != act.allocation:
                act.allocation = alloc
                act.rate = alloc.rate(act.job.request, delta) if alloc is not None else 0.0
                if alloc is not None and act.ran and restart > 0:
                    act.remaining += act.rate * restart
                    act.restarts += 1
                act.ran = act.ran or alloc is not None
            if act.rate > 0:
                ends.append(slot + math.ceil(act.remaining / act.rate - 1e-9))
        woken = wakeup(view, tuple(got), slot, delta, params) if wakeup is not None else None
        if woken is not None and woken <= slot:
            raise RuntimeError(f"{policy}: wake-up slot {woken} is not after slot {slot}")
        then = min([following, *ends, *([woken] if woken is not None else [])])
        if then == math.inf:
            waiting = sorted(a.job.job_id for a in active)
            raise PolicyStallError(
                f"{policy}: at slot {slot} no job runs, {len(active)} wait and none is to "
                f"arrive: its allocation places none of {', '.join(waiting[:5])}"
                + (f" and {len(waiting) - 5} more" if len(waiting) > 5 else ""),
                hint=f"replay without --policy {policy} (the other policies are not affected)"
                " and report it with the jobs and the cluster",
                context={"policy": policy, "slot": slot, "waiting": len(waiting)},
            )
        stop = int(then)
        still: list[_Active] = []
        for act in active:
            act.record(slot, stop)
            if act.allocation is not None:
                act.attained += (
                    service_rate(act.job.request, act.allocation) * (stop - slot) * delta
                )
            if act.rate > 0 and slot + math.ceil(act.remaining / act.rate - 1e-9) <= stop:
                decided[act.job.job_id] = _decision(act, policy, names, delta, stop - 1)
                done += 1
                if progress is not None and (done % progress_every == 0 or done == len(queue)):
                    progress(done, len(queue))
                continue
            act.remaining -= act.rate * (stop - slot)
            still.append(act)
        active = still
        slot = stop
    outcomes = tuple(JobOutcome(j, decided[j.job_id]) for j in queue)
    return SimResult(
        policy=policy,
        params=params,
        cluster=cluster,
        outcomes=outcomes,
        peak_active_reservations=peak,
        events=len(calls),
        call_ms=tuple(calls),
    )
