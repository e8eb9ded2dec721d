"""Latency of one late-binding re-plan (``make bench-queue``; issue 14 item 2).

One call of ``yu-rr``'s queue form (the per-job re-plan, the default, or the joint
program over the head of the queue then the per-job re-plan of the rest) at an event,
with the look-ahead on (the waiting jobs are the recent arrivals it forecasts from),
against a cluster of machines with 8 GPUs, 32 CPUs, 256 GiB each, 200 running jobs
(reservations from now: random machine, 2, 4 or 8 GPUs, ending 1–39 slots from now) and
200 waiting jobs (1–32 one-GPU workers, ResNet-50, 2–30 slots of work at full width,
arrived over the last 50 slots). Both programs (``per-job`` and ``joint``); targets:
p99 ≤ 0.25 s at 64 machines, ≤ 2 s at 1,024.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from slurm_mlsched.model import ClusterSnapshot, Machine, Reservation, Resources
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.joint import replan_yu_rr
from slurm_mlsched.placement.late_binding import PendingJob
from slurm_mlsched.placement.online import derive_seed

from .instances import SLOT_S, latency_job
from .run import machine_facts, pct
from .sections import write_section

NOW = 50
TARGET = {64: 0.25, 1024: 2.0}


def instance(machines: int, seed: int) -> tuple[ClusterSnapshot, tuple[PendingJob, ...]]:
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(machines)]
    running = tuple(
        Reservation(
            rng.choice(names), NOW, NOW + rng.randrange(1, 40),
            Resources(rng.choice([2, 4, 8]), 8, 65536), f"r{k}",
        )
        for k in range(200)
    )  # fmt: skip
    snap = ClusterSnapshot(
        tuple(Machine(n, Resources(8, 32, 262144)) for n in names),
        running,
        slot_seconds=SLOT_S,
        now_slot=NOW,
    )
    pending = []
    for i in range(200):
        job = replace(latency_job(i, rng), arrival_slot=rng.randrange(0, NOW + 1))
        pending.append(PendingJob(job, derive_seed(seed, job.job_id)))
    return _fits(snap), tuple(pending)


def _fits(snap: ClusterSnapshot) -> ClusterSnapshot:
    """Drop random reservations that would overfill a machine (the running jobs fit)."""
    used: dict[str, float] = {}
    keep = []
    for r in snap.reservations:
        if used.get(r.machine, 0.0) + r.usage.gpu <= 8:
            used[r.machine] = used.get(r.machine, 0.0) + r.usage.gpu
            keep.append(r)
    return replace(snap, reservations=tuple(keep))


def measure(machines: int, program: str, runs: int) -> dict[str, Any]:
    times, started = [], []
    for k in range(runs):
        snap, pending = instance(machines, 1000 + k)
        params = PlacementParams(queue_program=program)
        began = time.perf_counter()
        recent = tuple(p.request for p in pending)  # they arrived over the last 50 slots
        step = replan_yu_rr(pending, snap, params, recent)
        times.append(time.perf_counter() - began)
        started.append(len(step.started))
    return {
        "machines": machines,
        "program": program,
        "runs": runs,
        "running": len(snap.reservations),
        "p50_s": pct(times, 0.5),
        "p99_s": pct(times, 0.99),
        "max_s": max(times),
        "started_mean": sum(started) / len(started),
    }


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        "## Late-binding re-plan latency",
        "",
        "Written by `make bench-queue` (`python -m bench.queue_latency`); raw numbers in "
        f"`bench/out/queue.json`. Machine: {m['cpu']}, {m['cores']} cores, Python "
        f"{m['python']}. Date: {m['date']}. One run.",
        "",
        "One call of `yu-rr`'s queue form at an event (`per-job`, the default: each waiting "
        "job decided alone in queue order; or `joint`: one LP over the head of the queue, "
        "then the per-job re-plan of the rest), look-ahead on, with 200 waiting jobs (1–32 "
        "one-GPU workers; they are also the recent arrivals the look-ahead forecasts from) "
        "and about 200 running jobs on machines of 8 GPUs. *Started* = jobs the re-plan "
        "started (mean). Targets (issue 14): p99 ≤ 0.25 s at 64 machines, ≤ 2 s at 1,024.",
        "",
        "| machines | program | runs | running jobs | started | p50 (s) | p99 (s) | max (s) | "
        "target | met |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        target = TARGET.get(r["machines"])
        met = "—" if target is None else ("yes" if r["p99_s"] <= target else "no")
        lines.append(
            f"| {r['machines']} | {r['program']} | {r['runs']} | {r['running']} | "
            f"{r['started_mean']:.1f} | {r['p50_s']:.3f} | {r['p99_s']:.3f} | "
            f"{r['max_s']:.3f} | {target if target is not None else '—'} | {met} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--raw", default="bench/out/queue.json")
    ap.add_argument("--runs", type=int, default=20)
    args = ap.parse_args()
    rows = [
        measure(machines, program, args.runs)
        for machines in (64, 1024)
        for program in ("per-job", "joint")
    ]
    res = {"machine": machine_facts(), "rows": rows}
    Path(args.raw).parent.mkdir(parents=True, exist_ok=True)
    Path(args.raw).write_text(json.dumps(res, indent=1))
    write_section(Path(args.out), "queue", render(res))
    print(render(res))


if __name__ == "__main__":
    main()
