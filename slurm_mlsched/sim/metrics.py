"""The metrics of MODEL.md §8, per policy, from a replay's outcomes (pure).

Times in seconds are measured from the replay epoch (slot 0 begins at 0 s). A job
submitted at ``submit_s`` with a decision running slots [start, end]:

* start time = start · Δ, finish time = (end + 1) · Δ (the end of its last slot);
* JCT = finish − submit; wait (queueing delay) = start − submit (≥ 0, jobs arrive at the
  first slot boundary after submission, ``sim.jobs``);
* completion term = end − a + 1 slots (its term in Σ_t z[i,t] of MODEL.md §3); the total
  completion time is the sum over placed jobs, and ``lp_bound_ratio`` divides it by the
  lower bound (:func:`lower_bound`) when every job was placed (otherwise the two sums are
  not over the same jobs: None); a total below that bound raises
  :class:`~slurm_mlsched.errors.BelowBoundError` (``sim.bounds.check_not_below``: no
  feasible schedule is below it, docs/formulation.md §15);
* makespan = last finish − first submit;
* averages are means; p50/p95/p99 are numpy percentiles with linear interpolation;
* GPU utilization in slot t = GPUs held by running tasks / the cluster's GPUs, for
  t ∈ [0, last end]; ``gpu_util`` is its mean over those slots (GPU-slots used / offered),
  None on a cluster without GPUs;
* colocated share = co-located running slots / running slots, over all placed jobs
  (a job-slot is one job running in one slot);
* decision latency = ``Decision.decision_ms()`` (the policy's own timings) per placed job,
  or, for a re-allocating policy, the duration of each re-allocation call
  (``SimResult.call_ms``); p50 and p99;
* queue length in slot t = jobs arrived (a ≤ t) and not started (t < start); running =
  jobs started and not finished (an elastic job idle between two runs still counts);
* algorithm (``metrics.json`` and the report, not ``summary.json``; :func:`algorithm_stats`):
  shares of decisions by the exact fast path, by an LP + rounding (per job or joint), by
  the joint program, repaired (any repair action other than trimming), first fit, and
  re-allocation; LP solves per decision; distinct rounding outcomes
  per LP decision; re-plans per job while waiting (late binding); restarts per job
  (re-allocating policies) and the restart cost in force;
* rejected = jobs the policy could not place (``SimResult.rejected``). No job is left
  unfinished: a placed job's decision covers its work and the replay runs until the
  last completion.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from ..errors import MlschedError
from ..model import ClusterSnapshot, JobRequest, Mode
from ..placement.program.integer_program import default_horizon, horizon_floor, lp_bound
from .bounds import check_not_below, scalable_bound
from .jobs import SimJob
from .limits import LP_MAX_JOBS, LP_MAX_VARIABLES
from .result import SimResult
from .utility import Utility, total_utility

FloatArray = npt.NDArray[np.float64]

#: The per-policy keys of ``summary.json`` (issue 3, item 5), in order.
SUMMARY_KEYS = (
    "avg_jct_s",
    "p50_jct_s",
    "p95_jct_s",
    "p99_jct_s",
    "makespan_s",
    "total_utility",
    "avg_wait_s",
    "gpu_util",
    "colocated_share",
    "lp_bound_ratio",
    "decision_p50_ms",
    "decision_p99_ms",
    "wall_s",
)


@dataclass(frozen=True)
class Series:
    """Per-slot series from slot 0 to the last end (inclusive), for plots."""

    slot_seconds: float
    gpu_util: tuple[float, ...]
    queue: tuple[int, ...]
    running: tuple[int, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "slot_seconds": self.slot_seconds,
            "gpu_util": list(self.gpu_util),
            "queue": list(self.queue),
            "running": list(self.running),
        }


@dataclass(frozen=True)
class PolicyMetrics:
    policy: str
    placed: int
    rejected: int
    avg_jct_s: float | None
    p50_jct_s: float | None
    p95_jct_s: float | None
    p99_jct_s: float | None
    makespan_s: float | None
    total_completion_slots: int
    lp_bound_ratio: float | None
    total_utility: float
    avg_wait_s: float | None
    gpu_util: float | None
    colocated_share: float | None
    decision_p50_ms: float | None
    decision_p99_ms: float | None
    wall_s: float | None
    jct_s: tuple[float, ...] = field(repr=False)
    series: Series = field(repr=False)
    rejected_jobs: tuple[tuple[str, str], ...] = ()  # (job id, error)
    peak_active_reservations: int = 0
    algorithm: tuple[tuple[str, float | None], ...] = ()  # algorithm_stats

    def summary(self) -> dict[str, float | None]:
        """The per-policy object of ``summary.json``: exactly :data:`SUMMARY_KEYS`."""
        return {key: getattr(self, key) for key in SUMMARY_KEYS}

    def as_dict(self) -> dict[str, Any]:
        """Everything (``metrics.json``): the summary, the counts, the series, the JCTs."""
        return {
            **self.summary(),
            "policy": self.policy,
            "placed": self.placed,
            "rejected": self.rejected,
            "rejected_jobs": [{"job_id": j, "error": e} for j, e in self.rejected_jobs],
            "total_completion_slots": self.total_completion_slots,
            "peak_active_reservations": self.peak_active_reservations,
            "algorithm": dict(self.algorithm),
            "jct_s": list(self.jct_s),
            "series": self.series.as_dict(),
        }


def pct(values: FloatArray, q: float) -> float | None:
    return float(np.percentile(values, q)) if len(values) else None


def mean(values: FloatArray) -> float | None:
    return float(values.mean()) if len(values) else None


def compute_metrics(
    result: SimResult,
    utilities: Mapping[str, Utility],
    bound: float | None = None,
    wall_s: float | None = None,
) -> PolicyMetrics:
    """The metrics of one policy's replay (module docstring)."""
    placed = [o for o in result.outcomes if o.decision is not None]
    runs: list[tuple[int, int, float]] = []
    run_slots = colo_slots = 0
    for o in placed:
        assert o.decision is not None
        per_worker, per_ps = o.job.request.worker.gpu, o.job.request.ps.gpu
        for p in o.decision.slots:
            runs.append((p.slot, p.stop, p.total_workers * per_worker + p.total_ps * per_ps))
            run_slots += p.length
            if p.mode == Mode.COLOCATED:
                colo_slots += p.length
    rows = JobRows(
        ids=[o.job.job_id for o in placed],
        submit_s=np.array([o.job.submit_s for o in placed], dtype=np.float64),
        arrival=np.array([o.job.request.arrival_slot for o in placed], dtype=np.int64),
        start=np.array([o.decision.start_slot for o in placed if o.decision], dtype=np.int64),
        end=np.array([o.decision.end_slot for o in placed if o.decision], dtype=np.int64),
        gpu_runs=runs,
        run_slots=run_slots,
        colocated_slots=colo_slots,
        decision_ms=np.array(result.decision_latencies_ms(), dtype=np.float64),
        rejected=tuple((o.job.job_id, o.error) for o in result.rejected),
        peak_active_reservations=result.peak_active_reservations,
        algorithm=algorithm_stats(result),
    )
    cluster = result.cluster
    return metrics_of_rows(
        result.policy,
        rows,
        cluster.slot_seconds,
        cluster.total_capacity().gpu,
        utilities,
        bound,
        wall_s,
    )


def check_placed(result: SimResult) -> None:
    """For a replay that rejected some jobs (so the replay's bound, over all its jobs, is
    not one of the placed ones): raise
    :class:`~slurm_mlsched.errors.BelowBoundError` when the placed jobs' total completion
    time is below the scalable bound (``sim.bounds``) of those jobs alone."""
    placed = [o for o in result.outcomes if o.decision is not None]
    if not result.rejected or not placed:
        return
    value, _ = scalable_bound([o.job.request for o in placed], result.cluster.at_slot(0))
    total = sum(o.decision.completion_slots for o in placed if o.decision is not None)
    check_not_below(result.policy, total, value, len(placed))


@dataclass(frozen=True)
class JobRows:
    """A replay's placed jobs as columns (in outcome order), and what else the metrics
    read: what :func:`compute_metrics` takes from a SimResult and the on-Slurm merge from
    its cells' rows."""

    ids: Sequence[str]
    submit_s: FloatArray
    arrival: npt.NDArray[np.int64]
    start: npt.NDArray[np.int64]
    end: npt.NDArray[np.int64]
    gpu_runs: Sequence[tuple[int, int, float]]  # (first slot, stop slot, GPUs held)
    run_slots: int
    colocated_slots: int
    decision_ms: FloatArray
    rejected: tuple[tuple[str, str], ...]
    peak_active_reservations: int = 0
    algorithm: tuple[tuple[str, float | None], ...] = ()


_LP_SOLVERS = ("highs-lp", "highs-lp-joint")


def algorithm_stats(result: SimResult) -> tuple[tuple[str, float | None], ...]:
    """What the policy did, over its placed jobs (module docstring, "algorithm")."""
    decisions = result.decisions
    n = len(decisions)
    if not n:
        return ()

    def share(test: Any) -> float:
        return sum(1 for d in decisions if test(d)) / n

    def avg(values: list[float]) -> float | None:
        return float(np.mean(values)) if values else None

    lp = [d for d in decisions if d.solver in _LP_SOLVERS]
    stats = [dict(d.stats) for d in decisions]
    return (
        ("decisions", float(n)),
        ("share_fast_path", share(lambda d: d.solver == "fast-path")),
        ("share_lp_rounding", len(lp) / n),
        ("share_joint_program", share(lambda d: d.solver == "highs-lp-joint")),
        (
            "share_repaired",
            share(lambda d: any(not a.startswith("trimmed") for a in d.repair_actions)),
        ),
        ("share_first_fit", share(lambda d: d.solver == "first-fit")),
        ("share_reallocated", share(lambda d: d.solver.endswith("-reallocation"))),
        ("lp_solves_per_decision", avg([s.get("lp_solves", 0.0) for s in stats])),
        (
            "distinct_trial_outcomes",
            avg(
                [
                    st["distinct_trial_outcomes"]
                    for d, st in zip(decisions, stats, strict=True)
                    if d.solver in _LP_SOLVERS and "distinct_trial_outcomes" in st
                ]
            ),
        ),
        ("replans_per_job", avg([s["replans"] for s in stats if "replans" in s])),
        ("restarts_per_job", avg([s["restarts"] for s in stats if "restarts" in s])),
        ("restart_s", float(result.params.restart_s)),
        ("queue_peak", float(max((q for _, q in result.queue_series), default=0))),
    )


def combine_algorithm(
    parts: Sequence[Mapping[str, float | None]],
) -> tuple[tuple[str, float | None], ...]:
    """:func:`algorithm_stats` of several slices of one replay: decisions summed, the
    queue's peak the largest, the restart cost as given, the rest weighted by decisions."""
    parts = [p for p in parts if p]
    if len(parts) <= 1:
        return tuple(parts[0].items()) if parts else ()
    out: dict[str, float | None] = {}
    for key in parts[0]:
        values = [(p.get(key), p.get("decisions") or 0.0) for p in parts]
        known = [(v, w) for v, w in values if v is not None]
        if key == "decisions":
            out[key] = float(sum(v for v, _ in known))
        elif key == "queue_peak":
            out[key] = max((v for v, _ in known), default=None)
        elif key == "restart_s":
            out[key] = known[0][0] if known else None
        else:
            weight = sum(w for _, w in known)
            out[key] = sum(v * w for v, w in known) / weight if weight else None
    return tuple(out.items())


def metrics_of_rows(
    policy: str,
    rows: JobRows,
    slot_seconds: float,
    total_gpus: float,
    utilities: Mapping[str, Utility],
    bound: float | None = None,
    wall_s: float | None = None,
) -> PolicyMetrics:
    """The metrics of MODEL.md §8 from per-job columns (module docstring)."""
    delta = slot_seconds
    finish_s = (rows.end + 1) * delta
    jct = finish_s - rows.submit_s
    wait = rows.start * delta - rows.submit_s
    terms = {j: int(e - a + 1) for j, e, a in zip(rows.ids, rows.end, rows.arrival, strict=True)}
    total_terms = int(sum(terms.values()))
    ratio = None
    if bound is not None and not rows.rejected and rows.ids:
        check_not_below(policy, total_terms, bound, len(rows.ids))
        ratio = total_terms / bound if bound > 0 else None
    series = series_of(rows.gpu_runs, rows.arrival, rows.start, rows.end, delta, total_gpus)
    return PolicyMetrics(
        policy=policy,
        placed=len(rows.ids),
        rejected=len(rows.rejected),
        avg_jct_s=mean(jct),
        p50_jct_s=pct(jct, 50),
        p95_jct_s=pct(jct, 95),
        p99_jct_s=pct(jct, 99),
        makespan_s=float(finish_s.max() - rows.submit_s.min()) if rows.ids else None,
        total_completion_slots=total_terms,
        lp_bound_ratio=ratio,
        total_utility=total_utility(terms, utilities),
        avg_wait_s=mean(wait),
        gpu_util=float(np.mean(series.gpu_util)) if series.gpu_util and total_gpus > 0 else None,
        colocated_share=rows.colocated_slots / rows.run_slots if rows.run_slots else None,
        decision_p50_ms=pct(rows.decision_ms, 50),
        decision_p99_ms=pct(rows.decision_ms, 99),
        wall_s=wall_s,
        jct_s=tuple(float(x) for x in jct),
        series=series,
        rejected_jobs=rows.rejected,
        peak_active_reservations=rows.peak_active_reservations,
        algorithm=rows.algorithm,
    )


#: Most points a time series keeps. A longer one (a trace spanning decades, a 10-year job)
#: is averaged over bins of ``k`` slots and its ``slot_seconds`` is ``k`` times Δ, so its
#: memory and time follow the number of jobs, never a single row's span.
MAX_SERIES_POINTS = 100_000


def series_of(
    runs: Sequence[tuple[int, int, float]],
    arrival: npt.NDArray[np.int64],
    start: npt.NDArray[np.int64],
    end: npt.NDArray[np.int64],
    delta: float,
    total_gpus: float,
) -> Series:
    """GPU utilization, queue length and running jobs per slot over [0, last end]:
    ``runs`` are (first slot, stop slot, GPUs held); the jobs' arrival, start and end
    slots give the queue and the running count. Shared with the on-Slurm merge.

    Each series is a step function built from its change points only (never one array
    cell per slot); with more than :data:`MAX_SERIES_POINTS` slots, each point is the
    mean over ``k`` slots (queue and running rounded to whole jobs)."""
    if not len(end):
        return Series(delta, (), (), ())
    horizon = int(end.max()) + 1
    k = max(1, -(-horizon // MAX_SERIES_POINTS))
    edges = np.arange(0, horizon + k, k, dtype=np.int64)
    edges[-1] = min(int(edges[-1]), horizon)
    widths = np.diff(edges).astype(np.float64)
    lo = np.array([r[0] for r in runs], dtype=np.int64)
    hi = np.array([r[1] for r in runs], dtype=np.int64)
    held = np.array([r[2] for r in runs], dtype=np.float64)
    used = _bin_means(lo, hi, held, edges) / widths
    util = used / total_gpus if total_gpus > 0 else np.zeros(len(widths))
    queue = _bin_means(arrival, start, np.ones(len(arrival)), edges) / widths
    running = _bin_means(start, end + 1, np.ones(len(start)), edges) / widths
    return Series(
        delta * k,
        tuple(float(round(x, 9)) for x in util),
        tuple(round(float(x)) for x in queue),
        tuple(round(float(x)) for x in running),
    )


def _bin_means(
    begin: npt.NDArray[np.int64],
    stop: npt.NDArray[np.int64],
    weight: npt.NDArray[np.float64],
    edges: npt.NDArray[np.int64],
) -> npt.NDArray[np.float64]:
    """For each bin [edges[b], edges[b+1]): the integral over it of the step function
    "sum of ``weight`` over the intervals [begin, stop) that cover the slot" (intervals
    clipped to [0, last edge]). Works on the change points only."""
    if not len(begin):
        return np.zeros(len(edges) - 1)
    top = int(edges[-1])
    pos = np.concatenate([np.clip(begin, 0, top), np.clip(stop, 0, top)])
    change = np.concatenate([weight, -weight])
    order = np.argsort(pos, kind="stable")
    pos, change = pos[order], change[order]
    points, first = np.unique(pos, return_index=True)
    level = np.cumsum(np.add.reduceat(change, first))  # the value on [points[j], points[j+1])
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(points))])  # ∫ up to points[j]
    j = np.searchsorted(points, edges, side="right") - 1  # the last change at or before an edge
    inside = j >= 0
    jj = np.maximum(j, 0)
    cumulative = np.where(inside, area[jj] + level[jj] * (edges - points[jj]), 0.0)
    out: npt.NDArray[np.float64] = np.diff(cumulative)
    return out


# --- the LP lower bound ---------------------------------------------------------------------

#: Defaults of :func:`lower_bound` (:mod:`.limits`): the LP grows as jobs × machines × slots.


@dataclass(frozen=True)
class LowerBound:
    """The LP relaxation's optimum over the replay's jobs (slots), or None and why not."""

    value: float | None
    note: str


def lower_bound(
    jobs: Sequence[SimJob],
    cluster: ClusterSnapshot,
    max_jobs: int = LP_MAX_JOBS,
    max_variables: int = LP_MAX_VARIABLES,
    time_limit_s: float = 60.0,
) -> LowerBound:
    """The largest of the bounds that apply: the scalable ones of :mod:`.bounds` (shortest
    runs, pooled-resource SRPT: any number of jobs) and ``placement.program.lp_bound`` of
    all ``jobs`` on the empty ``cluster`` from slot 0, when that program is small enough:
    at most ``max_jobs`` jobs and ``max_variables`` variables (≈ Σ_i (H − a_i)·(4·machines
    + 2), H the default horizon)."""
    if not jobs:
        return LowerBound(None, "no job to bound")
    requests = [j.request for j in jobs]
    empty = cluster.at_slot(0)
    scalable, which = scalable_bound(requests, empty)
    lp = _lp_bound(requests, empty, max_jobs, max_variables, time_limit_s)
    if lp.value is not None and lp.value >= scalable:
        return lp
    return LowerBound(
        scalable,
        f"lower bound = {which} over {len(jobs)} jobs ({scalable:.0f} slots); "
        + (lp.note if lp.value is None else f"the LP relaxation gave less ({lp.value:.0f})"),
    )


def _lp_bound(
    requests: list[JobRequest],
    empty: ClusterSnapshot,
    max_jobs: int,
    max_variables: int,
    time_limit_s: float,
) -> LowerBound:
    if len(requests) > max_jobs:
        return LowerBound(
            None,
            f"LP bound not computed: {len(requests)} jobs > {max_jobs} (the LP grows as "
            "jobs × machines × slots)",
        )
    per_slot = 4 * len(empty.machines) + 2
    try:
        floor = horizon_floor(requests, empty)  # horizon >= floor: a size check for free
        least = sum(max(0, floor - r.arrival_slot) for r in requests) * per_slot
        if least > max_variables:
            return LowerBound(
                None, f"LP bound not computed: over {least} variables > {max_variables}"
            )
        horizon = default_horizon(requests, empty)
        size = sum(max(0, horizon - r.arrival_slot) for r in requests) * per_slot
        if size > max_variables:
            return LowerBound(
                None, f"LP bound not computed: about {size} variables > {max_variables}"
            )
        value = lp_bound(requests, empty, horizon=horizon, time_limit_s=time_limit_s)
    except MlschedError as err:
        return LowerBound(None, f"LP bound not computed: {err.code}: {err.message}")
    if not math.isfinite(value):
        return LowerBound(None, "LP bound not computed: the solver returned no finite value")
    return LowerBound(value, f"LP relaxation over {len(requests)} jobs, horizon {horizon} slots")
