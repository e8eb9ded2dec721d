"""One replay cell taken apart: where a policy's completion time goes beyond what the
lower bound's own relaxation reaches (issue 28: "the worst case explained";
``make bench-anatomy``).

The robustness sweep (``bench/sweep.py``) reports, per cell, the policy's avg JCT ÷ the
lower bound and a schedule of the bound's relaxation (``relaxed``,
``sim.capped_bound.relaxed_schedule``: pooled, elastic, preemptive for free). Where the
policy is far from both, the question is which jobs carry the distance and what they spent
it on. This replays one cell (its jobs, cluster and Δ exactly as the sweep does) under one
policy and compares it job by job with the relaxed schedule
(``sim.capped_bound.relaxed_completions``):

* **By requested width** (:func:`by_width`): per width W, the jobs, Σ d_i (the fewest
  slots each could take on this cluster, the bound's floor), Σ T_i of the relaxed schedule
  and of the policy (T_i = end − arrival + 1 slots), and the policy's T_i split into the
  wait before its first run, d_i, and the rest (its runs took longer than d_i: a slower
  shape, pauses, restarts). ``excess`` = Σ T_i − Σ T_i(relaxed), and its share of the cell's.
* **GPU time by node size and mode** (:func:`gpu_time`): per width class, the GPU-slots the
  policy's runs held on nodes of each GPU count, co-located or distributed, and how much
  of them was work at the co-located rate (a distributed run trains at ν_ex per worker
  instead of ν_in: ``efficiency`` = work ÷ (GPU-slots × the co-located rate per GPU)).

* **When** (:func:`in_system`, the plot ``bench/out/anatomy.png``): the jobs in the system
  (arrived, not ended) per slot under the policy and under the relaxed schedule. Σ_i T_i
  is the area under that curve, so the area between the two is the excess, and the plot
  shows in which stretch of the trace it accrues; a second panel, the GPUs the policy's
  runs held per slot by width class.

``python -m bench.cell_anatomy --cell KEY`` takes any sweep cell (``bench.sweep.cells``;
the default is the sweep's worst cell ÷ bound in docs/benchmarks.md) and writes the section
``anatomy`` of docs/benchmarks.md (raw rows in ``bench/out/anatomy.json``, the plot beside
them). The functions are pure: they read a ``SimResult`` and the relaxed completions.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from slurm_mlsched.model import Mode
from slurm_mlsched.services.replay import prepare_jobs
from slurm_mlsched.services.replay.run import replay_params
from slurm_mlsched.sim import SimResult, simulate
from slurm_mlsched.sim.capped_bound import capped_jobs, relaxed_completions

from .run import machine_facts
from .sections import write_section
from .sweep import avg_jct_s_of, bound_avg_jct_of, cells

DEFAULT_CELL = "Philly first 2,000|mixed|load 1|seed 0"
"""The sweep's worst cell ÷ bound (docs/benchmarks.md, "Robustness sweep", 2026-12-05)."""

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class WidthRow:
    """The jobs of one requested width, summed (slots)."""

    width: int
    jobs: int
    fewest: int  # Σ d_i
    relaxed: int  # Σ T_i of the relaxed schedule
    total: int  # Σ T_i of the policy
    wait: int  # Σ (first start − arrival)
    longer: int  # Σ (T_i − wait − d_i): runs, pauses and restarts beyond d_i
    excess: int  # total − relaxed


@dataclass(frozen=True)
class GpuRow:
    """GPU-slots one width class held on nodes of one GPU count in one mode."""

    widths: str
    node_gpus: float
    mode: str
    gpu_slots: float
    work_gpu_slots: float  # the work done, in GPU-slots at the co-located rate

    @property
    def efficiency(self) -> float:
        return self.work_gpu_slots / self.gpu_slots if self.gpu_slots > 0 else 1.0


def by_width(result: SimResult, relaxed: IntArray, fewest: IntArray) -> list[WidthRow]:
    """Rows per requested width (module docstring). ``relaxed`` and ``fewest``: each job's
    T_i in the relaxed schedule and its d_i, in the order of ``result.outcomes``. Every
    job must have been placed."""
    if len(relaxed) != len(result.outcomes) or len(fewest) != len(result.outcomes):
        raise ValueError("one relaxed completion and one d_i per outcome are needed")
    acc: dict[int, list[int]] = {}
    for o, t_rel, d in zip(result.outcomes, relaxed.tolist(), fewest.tolist(), strict=True):
        if o.decision is None:
            raise ValueError(f"job {o.job.job_id} was not placed: {o.error}")
        a = o.job.request.arrival_slot
        total = o.decision.end_slot - a + 1
        wait = o.decision.start_slot - a
        row = acc.setdefault(o.job.request.max_workers, [0] * 6)
        for k, v in enumerate((1, d, t_rel, total, wait, total - wait - d)):
            row[k] += int(v)
    return [
        WidthRow(w, n, d, rel, tot, wait, longer, tot - rel)
        for w, (n, d, rel, tot, wait, longer) in sorted(acc.items())
    ]


def width_class(width: int) -> str:
    """The classes of :func:`gpu_time`: 1, 2–4, 5–8, > 8 workers."""
    if width <= 1:
        return "1"
    if width <= 4:
        return "2-4"
    return "5-8" if width <= 8 else ">8"


def gpu_time(result: SimResult) -> list[GpuRow]:
    """GPU-slots held and work done per (width class, node GPU count, mode) (module
    docstring). Work per run is the job's own speed model (``JobRequest.work_per_slot``);
    the restart charges inside a resumed run count as held, not as work."""
    gpus = {m.name: m.capacity.gpu for m in result.cluster.machines}
    delta = result.cluster.slot_seconds
    acc: dict[tuple[str, float, str], list[float]] = {}
    for o in result.outcomes:
        if o.decision is None:
            continue
        req = o.job.request
        per_gpu = req.profile.nu_in(delta) / req.worker.gpu if req.worker.gpu > 0 else 0.0
        if per_gpu <= 0:
            continue
        cls = width_class(req.max_workers)
        for run in o.decision.slots:
            layout = [c for _, c in run.workers]
            colocated = run.mode == Mode.COLOCATED
            work = req.work_per_slot(layout, delta, colocated=colocated) * run.length
            held = sum(layout) * req.worker.gpu * run.length
            # a run's work is split over its nodes by their share of its workers
            for name, count in run.workers:
                share = count / sum(layout)
                row = acc.setdefault((cls, gpus[name], "co-located" if colocated else "spread"),
                                     [0.0, 0.0])  # fmt: skip
                row[0] += held * share
                row[1] += work * share / per_gpu
    order = {"1": 0, "2-4": 1, "5-8": 2, ">8": 3}
    return [
        GpuRow(cls, node, mode, held, work)
        for (cls, node, mode), (held, work) in sorted(
            acc.items(), key=lambda kv: (order[kv[0][0]], -kv[0][1], kv[0][2])
        )
    ]


def in_system(arrival: IntArray, total: IntArray, horizon: int | None = None) -> IntArray:
    """Per slot t, the jobs with arrival a_i ≤ t < a_i + T_i (T_i ≥ 1 slots): Σ_t of it is
    Σ_i T_i. ``horizon``: the slots counted (default up to the last end)."""
    ends = arrival + total
    n = int(ends.max(initial=0)) if horizon is None else horizon
    delta = np.zeros(n + 1, dtype=np.int64)
    np.add.at(delta, np.minimum(arrival, n), 1)
    np.add.at(delta, np.minimum(ends, n), -1)
    out: IntArray = np.cumsum(delta)[:n]
    return out


def held_per_slot(result: SimResult, horizon: int) -> dict[str, npt.NDArray[np.float64]]:
    """GPUs the runs held per slot, by width class (:func:`width_class`)."""
    out: dict[str, npt.NDArray[np.float64]] = {}
    for o in result.outcomes:
        if o.decision is None:
            continue
        req = o.job.request
        row = out.setdefault(width_class(req.max_workers), np.zeros(horizon))
        for run in o.decision.slots:
            gpus = sum(c for _, c in run.workers) * req.worker.gpu
            row[run.slot : min(run.stop, horizon)] += gpus
    return out


def plot(res: dict[str, Any], curves: dict[str, Any], path: Path) -> None:
    """The two panels of the module docstring as a PNG at ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    hours = res["slot_seconds"] / 3600.0
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for label, key, style in (
        (res["policy"], "policy", "-"),
        ("relaxed schedule", "relaxed", "--"),
    ):
        y = curves[key]
        top.plot(np.arange(len(y)) * hours, y, style, label=f"{label}: all jobs", linewidth=0.9)
        wide = curves[key + "_wide"]
        top.plot(np.arange(len(wide)) * hours, wide, style, label=f"{label}: > 4 workers",
                 linewidth=0.9)  # fmt: skip
    top.set_ylabel("jobs in the system")
    top.legend(loc="upper left", fontsize=8)
    top.set_title(f"{res['cell']}: area between the curves = excess over the relaxed schedule")
    held = curves["held"]
    names = [n for n in ("1", "2-4", "5-8", ">8") if n in held]
    x = np.arange(len(held[names[0]])) * hours if names else np.arange(0)
    if names:
        bottom.stackplot(
            x,
            *[held[n] for n in names],
            labels=[f"{n} worker{'' if n == '1' else 's'}" for n in names],
        )
    bottom.axhline(res["gpus"], color="black", linewidth=0.8, label="GPUs")
    bottom.set_ylabel(f"GPUs held by {res['policy']}")
    bottom.set_xlabel("hours from the first arrival")
    bottom.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=100)
    plt.close(fig)


def anatomy(key: str, policy: str = "yu-rr", png: Path | None = None) -> dict[str, Any]:
    """Replay sweep cell ``key`` under ``policy`` and take it apart."""
    found = {c.key: c for c in cells()}
    if key not in found:
        known = ", ".join(sorted(found)[:6])
        raise SystemExit(f"no sweep cell {key!r}; cells look like: {known}, …")
    opts = replace(found[key].options(), policies=(policy,))
    prepared = prepare_jobs(opts)
    jobs, cluster = prepared.admitted, prepared.cluster
    requests = [j.request for j in jobs]
    began = time.perf_counter()
    result = simulate(jobs, cluster, policy, replay_params(opts, opts.seed))
    wall = time.perf_counter() - began
    empty = cluster.at_slot(0)
    relaxed = relaxed_completions(requests, empty)
    fewest = capped_jobs(requests, empty).fewest.astype(np.int64)

    def hours(total_slots: float) -> float:
        return avg_jct_s_of(total_slots, jobs, cluster) / 3600.0

    widths = by_width(result, relaxed, fewest)
    total = sum(r.total for r in widths)
    out = {
        "cell": key,
        "policy": policy,
        "jobs": len(jobs),
        "machines": len(cluster.machines),
        "gpus": sum(m.capacity.gpu for m in cluster.machines),
        "slot_seconds": cluster.slot_seconds,
        "bound_h": bound_avg_jct_of(jobs, cluster) / 3600.0,
        "relaxed_h": hours(float(relaxed.sum())),
        "policy_h": hours(float(total)),
        "wall_s": round(wall, 1),
        "widths": [asdict(r) for r in widths],
        "gpu": [asdict(r) | {"efficiency": r.efficiency} for r in gpu_time(result)],
        "machine": machine_facts(),
    }
    if png is not None:
        arrival = np.array([r.arrival_slot for r in requests], dtype=np.int64)
        ours = (
            np.array(
                [o.decision.end_slot + 1 for o in result.outcomes if o.decision is not None],
                dtype=np.int64,
            )
            - arrival
        )
        horizon = int(max((arrival + ours).max(), (arrival + relaxed).max()))
        wide = np.array([r.max_workers > 4 for r in requests])
        curves = {
            "policy": in_system(arrival, ours, horizon),
            "relaxed": in_system(arrival, relaxed, horizon),
            "policy_wide": in_system(arrival[wide], ours[wide], horizon),
            "relaxed_wide": in_system(arrival[wide], relaxed[wide], horizon),
            "held": held_per_slot(result, horizon),
        }
        plot(out, curves, png)
    return out


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    widths = [WidthRow(**r) for r in res["widths"]]
    excess = sum(r.excess for r in widths) or 1
    lines = [
        f"## Anatomy of a cell: {res['cell']} under `{res['policy']}`",
        "",
        f"`make bench-anatomy` (`python -m bench.cell_anatomy --cell '{res['cell']}'`), "
        f"{m.get('date', '?')} on {m.get('cpu', '?')} ({m.get('cores', '?')} cores). "
        f"{res['jobs']} jobs on {res['machines']} nodes ({res['gpus']:g} GPUs), "
        f"Δ = {res['slot_seconds']:g} s, the sweep's defaults. Avg JCT: the bound "
        f"{res['bound_h']:.2f} h, the relaxed schedule {res['relaxed_h']:.2f} h "
        f"({res['relaxed_h'] / res['bound_h']:.2f} ×), `{res['policy']}` "
        f"{res['policy_h']:.2f} h ({res['policy_h'] / res['bound_h']:.2f} ×; replay "
        f"{res['wall_s']:g} s). Slots summed over the jobs of each requested width: d_i the "
        "fewest slots a job can take on this cluster, T_i its end − arrival + 1, *wait* "
        "before its first run, *longer* = T_i − wait − d_i (slower shapes, pauses, "
        "restarts); *excess* = Σ T_i − Σ T_i of the relaxed schedule "
        "(`sim.capped_bound.relaxed_completions`, docs/formulation.md §15.10). "
        "The plot beside the raw rows (`bench/out/anatomy.png`) shows the jobs in the "
        "system per slot under both: the excess is the area between the curves.",
        "",
        "| width | jobs | Σ d_i | Σ T_i relaxed | Σ T_i | wait | longer | excess | share |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r.width} | {r.jobs} | {r.fewest:,} | {r.relaxed:,} | {r.total:,} | {r.wait:,} "
        f"| {r.longer:,} | {r.excess:,} | {r.excess / excess:.0%} |"
        for r in widths
    ]
    lines += [
        "",
        "GPU-slots the runs held, by the jobs' width class, the GPU count of the node and the "
        "mode; *work* is what they trained, in GPU-slots at the co-located rate "
        "(*efficiency* = work ÷ held: a spread run trains at ν_ex per worker, not ν_in).",
        "",
        "| widths | node GPUs | mode | GPU-slots held | work | efficiency |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {g['widths']} | {g['node_gpus']:g} | {g['mode']} | {g['gpu_slots']:,.0f} "
        f"| {g['work_gpu_slots']:,.0f} | {g['efficiency']:.2f} |"
        for g in res["gpu"]
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", default=DEFAULT_CELL, help="a sweep cell key (bench.sweep)")
    ap.add_argument("--policy", default="yu-rr")
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--raw", default="bench/out/anatomy.json")
    args = ap.parse_args(argv)
    Path(args.raw).parent.mkdir(parents=True, exist_ok=True)
    res = anatomy(args.cell, args.policy, Path(args.raw).with_suffix(".png"))
    Path(args.raw).write_text(json.dumps(res, indent=1))
    text = render(res)
    write_section(Path(args.out), "anatomy", text)
    print(text)


if __name__ == "__main__":
    main()
