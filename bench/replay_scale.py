"""Scale probe of the replay engine on a synthetic Philly-like job list.

    .venv/bin/python -m bench.replay_scale --jobs 5000 --policy fifo-ff --policy yu-rr
    .venv/bin/python -m bench.replay_scale --jobs 2000 --policy yu-rr --profile 25

The job list mimics Philly (``../shared/traces/philly-pollux/philly.csv``, 82,247 jobs
over 109 days) in aggregate, without reading it:

* GPUs per job drawn from Philly's counts (1: 76,627 · 2: 1,818 · 4: 1,870 · 8: 1,643 ·
  12: 7 · 16: 199 · 24: 7 · 32: 67 · 64: 6 · 128: 3); one worker per GPU;
* Poisson arrivals at Philly's mean rate (82,247 jobs in 109 days);
* run time log-normal with Philly's median (1,144 s) and mean (13,136 s), capped at
  4.6e6 s (Philly's longest);
* a model profile drawn from the DL2 table; the workload V is what makes the job take its
  run time with all its workers co-located (≤ 8 GPUs) or distributed (more);
* default tasks (worker 1 GPU, 4 CPUs, 16 GiB; PS 2 CPUs, 8 GiB) on ``--nodes`` (250x8).

Each policy runs in a fresh child process, so the peak RSS it reports (``ru_maxrss``) is
that policy's alone. The extrapolation to the whole trace is linear in the number of jobs,
from the per-job rate of the *second half* of the run (after warm-up: the book of active
reservations has reached its steady size), and says so.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import math
import pstats
import random
import resource
import subprocess
import sys
import time
from typing import Any

from slurm_mlsched.model import Form, JobProfile, JobRequest, Resources
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.sim import admit, node_grid, parse_nodes_spec, sim_jobs, simulate

PHILLY_JOBS = 82_247
PHILLY_DAYS = 109.0
GPU_COUNTS = {1: 76_627, 2: 1_818, 4: 1_870, 8: 1_643, 12: 7, 16: 199, 24: 7, 32: 67, 64: 6, 128: 3}
MEDIAN_S, MEAN_S, MAX_S = 1_144.0, 13_136.0, 4.6e6
PROFILES = (
    JobProfile(0.449, 102.2, 91.875, 306.5, name="resnet-50"),
    JobProfile(0.535, 553.4, 233.0, 427.75, name="vgg-16"),
    JobProfile(0.226, 6.92, 59.5, 63.0, name="resnext-110"),
    JobProfile(0.815, 42.1, 145.875, 1082.125, name="inception-bn"),
    JobProfile(0.075, 36.5, 120.125, 181.125, name="seq2seq"),
    JobProfile(0.585, 24.0, 60.75, 159.625, name="cnn-text-classification"),
    JobProfile(0.567, 6.0, 92.125, 65.625, name="dssm"),
    JobProfile(0.154, 19.2, 10.375, 22.875, name="wlm"),
)
WORKER = Resources(1.0, 4.0, 16 * 1024.0)
PS = Resources(0.0, 2.0, 8 * 1024.0)


def philly_like(count: int, seed: int) -> list[tuple[JobRequest, float]]:
    """``count`` jobs with their submit times (s), deterministic for ``seed``."""
    rng = random.Random(seed)
    sizes, weights = zip(*GPU_COUNTS.items(), strict=True)
    sigma = math.sqrt(2.0 * math.log(MEAN_S / MEDIAN_S))
    rate = PHILLY_JOBS / (PHILLY_DAYS * 86_400.0)
    now = 0.0
    out = []
    for i in range(count):
        now += rng.expovariate(rate)
        gpus = rng.choices(sizes, weights)[0]
        run_s = min(MAX_S, max(60.0, rng.lognormvariate(math.log(MEDIAN_S), sigma)))
        prof = rng.choice(PROFILES)
        theta = prof.theta_in if gpus <= 8 else prof.theta_ex
        workload = gpus * run_s / theta
        job = JobRequest(f"p{i:06d}", 0, workload, gpus, WORKER, PS, prof)
        out.append((job, now))
    return out


def run_one(args: argparse.Namespace, policy: str) -> dict[str, Any]:
    nodes, gpus = parse_nodes_spec(args.nodes)
    cluster = node_grid(nodes, gpus, slot_seconds=args.slot_seconds)
    jobs, unplaceable = admit(
        sim_jobs(philly_like(args.jobs, args.seed), args.slot_seconds), cluster
    )
    params = PlacementParams(form=Form(args.form), seed=args.seed)
    marks: list[tuple[int, float]] = []
    began = time.perf_counter()

    def progress(done: int, total: int) -> None:
        marks.append((done, time.perf_counter() - began))

    profiler = cProfile.Profile() if args.profile else None
    if profiler:
        profiler.enable()
    result = simulate(jobs, cluster, policy, params, progress=progress, progress_every=250)
    if profiler:
        profiler.disable()
    wall = time.perf_counter() - began
    half = [m for m in marks if m[0] >= len(jobs) // 2]
    per_job = (
        (half[-1][1] - half[0][1]) / max(1, half[-1][0] - half[0][0])
        if len(half) > 1
        else wall / max(1, len(jobs))
    )
    out: dict[str, Any] = {
        "policy": policy,
        "form": args.form,
        "jobs": len(jobs),
        "unplaceable": len(unplaceable),
        "rejected": len(result.rejected),
        "wall_s": round(wall, 2),
        "ms_per_job_all": round(1000 * wall / max(1, len(jobs)), 3),
        "ms_per_job_second_half": round(1000 * per_job, 3),
        "extrapolated_82k_s": round(per_job * PHILLY_JOBS, 1),
        "peak_active_reservations": result.peak_active_reservations,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "last_end_slot": max((d.end_slot for d in result.decisions), default=0),
    }
    if profiler:
        buf = io.StringIO()
        pstats.Stats(profiler, stream=buf).sort_stats("cumulative").print_stats(args.profile)
        out["profile"] = buf.getvalue()
    return out


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--nodes", default="250x8")
    ap.add_argument("--policy", action="append", dest="policies")
    ap.add_argument("--form", default="non-elastic", choices=["elastic", "non-elastic"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--slot-seconds", type=float, default=600.0)
    ap.add_argument("--profile", type=int, default=0, help="print the top N cProfile rows")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # child process: run this policy only
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args, args.one)))
        return
    rows = []
    for policy in args.policies or ["fifo-ff", "yu-rr"]:
        child = [
            sys.executable,
            "-m",
            "bench.replay_scale",
            *(argv or sys.argv[1:]),
            "--one",
            policy,
        ]
        done = subprocess.run(child, check=True, capture_output=True, text=True)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        profile = row.pop("profile", None)
        rows.append(row)
        print(json.dumps(row), flush=True)
        if profile:
            print(profile, flush=True)


if __name__ == "__main__":
    main()
