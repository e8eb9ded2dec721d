"""Latency of one late-binding re-plan (``make bench-queue``; issue 14 item 2).

One call of ``yu-rr``'s queue form (the per-job re-plan, the default, or the joint
program over the head of the queue then the per-job re-plan of the rest) at an event,
with the look-ahead on (the waiting jobs are the recent arrivals it forecasts from),
against a cluster of machines with 8 GPUs, 32 CPUs, 256 GiB each, 200 running jobs
(reservations from now: random machine, 2, 4 or 8 GPUs, ending 1–39 slots from now) and
200 waiting jobs (1–32 one-GPU workers, ResNet-50, 2–30 slots of work at full width,
arrived over the last 50 slots). Both programs (``per-job`` and ``joint``); targets:
p99 ≤ 0.25 s at 64 machines, ≤ 2 s at 1,024.

A second scenario, *full*: every machine holds one running job (all 8 GPUs on 90 % of
the machines, 4 or 6 on the rest) and 1,000 jobs wait, so most of the queue cannot start
and the re-plan reserves for it; there the estimate ``mlsub queue`` shows (the waiting
jobs list-scheduled forward, :func:`slurm_mlsched.sim.queue_estimate.estimate_queue`) is
timed too, since the user waits for both.

Scenarios *running*, *preempt* and *resize*: the light instance's running jobs as runs
that started before now (one in five long), timed without and with checkpoint-restart
preemption (the replay's default; live, a site's ``preempt = true``), and with resize too
(``preempt_resize``; live, a site's ``preempt_resize = true``): with either, the call
timed is the whole re-plan with preemption (``preemption.replan_preempting``), which the
same targets bound.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from slurm_mlsched.model import (
    ClusterSnapshot,
    Decision,
    Form,
    JobRequest,
    Machine,
    Mode,
    Reservation,
    Resources,
    SlotPlan,
)
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.params import derive_seed
from slurm_mlsched.placement.yu_rr.joint import replan_yu_rr
from slurm_mlsched.placement.yu_rr.late_binding import PendingJob
from slurm_mlsched.placement.yu_rr.preemption import RunningRun, replan_preempting
from slurm_mlsched.sim.queue_estimate import QueuedJob, estimate_queue

from .instances import PROFILES, SLOT_S, latency_job
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


def full_instance(
    machines: int, seed: int, waiting: int = 1000
) -> tuple[ClusterSnapshot, tuple[PendingJob, ...]]:
    """The *full* scenario: one running job per machine (8 GPUs on 90 % of them, else 4
    or 6), ending 1–39 slots from now, and ``waiting`` jobs as in :func:`instance`."""
    rng = random.Random(seed)
    names = [f"n{i}" for i in range(machines)]
    running = tuple(
        Reservation(
            n, NOW, NOW + rng.randrange(1, 40),
            Resources(8 if rng.random() < 0.9 else rng.choice([4, 6]), 8, 65536), f"r{k}",
        )
        for k, n in enumerate(names)
    )  # fmt: skip
    snap = ClusterSnapshot(
        tuple(Machine(n, Resources(8, 32, 262144)) for n in names),
        running,
        slot_seconds=SLOT_S,
        now_slot=NOW,
    )
    pending = []
    for i in range(waiting):
        job = replace(latency_job(i, rng), arrival_slot=rng.randrange(0, NOW + 1))
        pending.append(PendingJob(job, derive_seed(seed, job.job_id)))
    return snap, tuple(pending)


def _fits(snap: ClusterSnapshot) -> ClusterSnapshot:
    """Drop random reservations that would overfill a machine (the running jobs fit)."""
    used: dict[str, float] = {}
    keep = []
    for r in snap.reservations:
        if used.get(r.machine, 0.0) + r.usage.gpu <= 8:
            used[r.machine] = used.get(r.machine, 0.0) + r.usage.gpu
            keep.append(r)
    return replace(snap, reservations=tuple(keep))


def running_runs(
    snap: ClusterSnapshot, seed: int
) -> tuple[ClusterSnapshot, tuple[RunningRun, ...]]:
    """The running jobs of the *running* and *preempt* scenarios: each reservation of
    ``snap`` becomes a co-located run of g one-GPU workers (3 CPUs, 16 GiB) and one PS
    (2 CPUs, 8 GiB) that started 1–20 slots ago, as the preemption rule sees running jobs
    (docs/formulation.md §16); one in five is long (100–400 slots left, the others keep
    their reservation's 1–39), so that some are worth pausing. The snapshot holds their
    reservations."""
    rng = random.Random(seed)
    prof = PROFILES[0]
    runs = []
    for r in snap.reservations:
        g = int(r.usage.gpu)
        ran = rng.randrange(1, 21)
        left = r.end_slot - r.start_slot
        if rng.random() < 0.2:
            left = rng.randrange(100, 401)
            r = replace(r, end_slot=r.start_slot + left)
        job = JobRequest(
            r.job_id,
            0,
            g * prof.nu_in(SLOT_S) * (ran + left),
            g,
            Resources(1, 3, 16384),
            Resources(0, 2, 8192),
            prof,
        )
        start = r.start_slot - ran
        plan = SlotPlan(start, Mode.COLOCATED, ((r.machine, g),), ((r.machine, 1),), ran + left)
        decision = Decision(
            r.job_id, "yu-rr", Form.NON_ELASTIC, 0, (plan,), start, r.end_slot - 1, job.workload
        )
        runs.append(RunningRun(job, derive_seed(seed, r.job_id), decision))
    held = tuple(x for run in runs for x in run.decision.reservations(run.request))
    return replace(snap, reservations=held), tuple(runs)


def measure(machines: int, program: str, runs: int, scenario: str = "light") -> dict[str, Any]:
    times, started, estimates, paused = [], [], [], []
    for k in range(runs):
        if scenario == "full":
            snap, pending = full_instance(machines, 1000 + k)
        else:
            snap, pending = instance(machines, 1000 + k)
        preempt = scenario in ("preempt", "resize")
        params = PlacementParams(
            queue_program=program, preempt=preempt, preempt_resize=scenario == "resize"
        )
        running: tuple[RunningRun, ...] = ()
        if scenario in ("running", "preempt", "resize"):
            snap, running = running_runs(snap, 1000 + k)
        recent = tuple(p.request for p in pending)  # they arrived over the last 50 slots
        began = time.perf_counter()
        if preempt:
            step, chosen = replan_preempting(pending, running, snap, params, replan_yu_rr, recent)
            paused.append(len(chosen))
        else:
            step = replan_yu_rr(pending, snap, params, recent)
        times.append(time.perf_counter() - began)
        started.append(len(step.started))
        if scenario == "full":
            # as ``mlsub queue`` builds it (services/replan.queue_view)
            decided = {d.job_id: d for d in (*step.started, *step.planned)}
            rejected = {k: f"cannot be placed: {e.message}" for k, e in step.rejected}
            queued = [
                QueuedJob(
                    p.request, decided.get(p.request.job_id), rejected.get(p.request.job_id, "")
                )
                for p in pending
            ]
            began = time.perf_counter()
            estimate_queue(queued, snap, datetime(2026, 1, 1, tzinfo=UTC), params=params)
            estimates.append(time.perf_counter() - began)
    return {
        "machines": machines,
        "program": program,
        "scenario": scenario,
        "runs": runs,
        "waiting": len(pending),
        "running": len(snap.reservations),
        "p50_s": pct(times, 0.5),
        "p99_s": pct(times, 0.99),
        "max_s": max(times),
        "started_mean": sum(started) / len(started),
        "paused_mean": sum(paused) / len(paused) if paused else None,
        "estimate_p50_s": pct(estimates, 0.5) if estimates else None,
        "estimate_max_s": max(estimates) if estimates else None,
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
        "started (mean). Targets (issue 14): p99 ≤ 0.25 s at 64 machines, ≤ 2 s at 1,024. "
        "Scenario *full*: one running job on every machine (8 GPUs on 90 % of them) and "
        "1,000 waiting jobs, most of which cannot start; there *estimate* is the time of the "
        "queue estimate `mlsub queue` shows beside the re-plan (p50 / max, no target). "
        "Scenarios *running* and *preempt*: the *light* instance's running jobs as runs "
        "that started 1–20 slots ago, each with one PS, one in five with 100–400 slots "
        "left; *running* times the plain re-plan on it, *preempt* the re-plan with "
        "checkpoint-restart preemption on (docs/formulation.md §16; the replay's default, "
        "live a site's `preempt = true`: `replan_preempting`, the rule, then the re-plan, "
        "repeated when a pause would not pay), so the two rows differ by preemption "
        "alone; *resize* with resize by checkpoint-restart on too (`preempt_resize`: the "
        "grows and narrow starts of §16); *paused* = running jobs it paused or grew (mean).",
        "",
        "| scenario | machines | program | runs | waiting | running jobs | started | p50 (s) | "
        "p99 (s) | max (s) | target | met | estimate p50 / max (s) | paused |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        target = TARGET.get(r["machines"])
        met = "—" if target is None else ("yes" if r["p99_s"] <= target else "no")
        est = (
            "—"
            if r.get("estimate_p50_s") is None
            else f"{r['estimate_p50_s']:.2f} / {r['estimate_max_s']:.2f}"
        )
        lines.append(
            f"| {r.get('scenario', 'light')} | {r['machines']} | {r['program']} | {r['runs']} | "
            f"{r.get('waiting', 200)} | {r['running']} | {r['started_mean']:.1f} | "
            f"{r['p50_s']:.3f} | {r['p99_s']:.3f} | {r['max_s']:.3f} | "
            f"{target if target is not None else '—'} | {met} | {est} | "
            + ("—" if r.get("paused_mean") is None else f"{r['paused_mean']:.1f}")
            + " |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--raw", default="bench/out/queue.json")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--full-runs", type=int, default=5, help="runs of the *full* scenario")
    args = ap.parse_args()
    rows = (
        [
            measure(machines, program, args.runs)
            for machines in (64, 1024)
            for program in ("per-job", "joint")
        ]
        + [
            measure(machines, program, args.full_runs, "full")
            for machines in (64, 1024)
            for program in ("per-job", "joint")
        ]
        + [
            measure(machines, program, args.runs, scenario)
            for machines in (64, 1024)
            for program in ("per-job", "joint")
            for scenario in ("running", "preempt", "resize")
        ]
    )
    res = {"machine": machine_facts(), "rows": rows}
    Path(args.raw).parent.mkdir(parents=True, exist_ok=True)
    Path(args.raw).write_text(json.dumps(res, indent=1))
    write_section(Path(args.out), "queue", render(res))
    print(render(res))


if __name__ == "__main__":
    main()
