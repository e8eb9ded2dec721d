"""Replay of a real Slurm log against what Slurm did (``make bench-agreement``).

1. A seeded burst of plain ``sbatch`` jobs runs on the local real cluster (4 nodes × 4
   GPUs): each asks for G one-GPU tasks on one node and sleeps S seconds, more GPU-time
   than the cluster has, so they queue. Slurm schedules them (``sched/backfill``, time
   limits set, so backfill can act).
2. Their accounting, ``SLURM_TIME_FORMAT=%s sacct -a --parsable2`` (the reader's fields),
   is saved and read back by ``mlsub``'s sacct reader.
3. The log is replayed (same cluster, Δ = 1 s) with ``fifo-ff``, ``fifo-bf`` and ``yu-rr``;
   each policy's start order is compared with the order Slurm started the jobs
   (:func:`slurm_mlsched.sim.agreement.start_agreement`).

Writes the ``agreement`` section of docs/benchmarks.md and bench/out/agreement.json; the
sacct log goes to bench/out/agreement-sacct.txt. ``tests/integration/test_slurm_agreement.py``
runs a smaller burst through the same functions.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.services.replay import ReplayOptions, load_input, replay_cluster
from slurm_mlsched.sim import admit, sim_jobs, simulate
from slurm_mlsched.sim.agreement import start_agreement
from slurm_mlsched.traces import read_trace

from .run import machine_facts
from .sections import write_section

#: The fields the sacct reader wants (docs/replay-guide.md).
SACCT_FORMAT = (
    "JobID,JobIDRaw,JobName,User,Account,Partition,State,ExitCode,Submit,Eligible,Start,End,"
    "Elapsed,ElapsedRaw,Timelimit,TimelimitRaw,NNodes,NCPUS,ReqCPUS,ReqMem,ReqNodes,ReqTRES,"
    "AllocTRES,NodeList"
)
#: The replay cluster: the lab's 4 nodes × 4 GPUs; CPUs and memory generous, so that GPUs
#: bind as they do for the burst's jobs (1 CPU and 1 GiB per task on 8-CPU, 64-GiB nodes).
LAB_CLUSTER = """slot_seconds: 1
groups:
  - {prefix: node, count: 4, gpus: 4, cpus: 64, mem_gb: 1024}
"""
POLICIES = ("fifo-ff", "fifo-bf", "yu-rr")
FINISHED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"}


@dataclass(frozen=True)
class BurstJob:
    gpus: int
    sleep_s: int


def burst(n: int, seed: int) -> list[BurstJob]:
    rng = random.Random(seed)
    return [BurstJob(rng.choice([1, 2, 2, 3, 4]), rng.randint(4, 14)) for _ in range(n)]


def run(argv: list[str], **env: str) -> str:
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, env={**os.environ, **env}, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {done.stderr.strip()}")
    return done.stdout


def submit_burst(jobs: list[BurstJob], tag: str, gap_s: float = 0.3) -> list[str]:
    """Submit the burst (in order, ``gap_s`` apart, so that submit times order them)."""
    ids = []
    for k, job in enumerate(jobs):
        out = run(
            [
                "sbatch", "--parsable", "-J", f"{tag}-{k}", "-p", "debug", "-N", "1",
                "-n", str(job.gpus), "-c", "1", f"--gres=gpu:{job.gpus}", "--mem=1G",
                "-t", "1", "-o", "/dev/null", "--wrap", f"sleep {job.sleep_s}",
            ]
        )  # fmt: skip
        ids.append(out.strip().split(";")[0])
        time.sleep(gap_s)
    return ids


def wait_accounted(ids: list[str], timeout_s: float) -> str:
    """The sacct log once every job has finished and its start and end are recorded."""
    deadline = time.monotonic() + timeout_s
    while True:
        text = run(
            ["sacct", "-a", "-X", "--parsable2", "-j", ",".join(ids), f"--format={SACCT_FORMAT}"],
            SLURM_TIME_FORMAT="%s",
        )
        rows = [line.split("|") for line in text.splitlines()[1:] if line.strip()]
        states = {r[0]: r[6].split()[0] for r in rows}
        done = len(states) == len(ids) and all(s in FINISHED for s in states.values())
        if done and all(r[10] not in ("", "Unknown", "None") for r in rows):
            return text
        if time.monotonic() > deadline:
            raise TimeoutError(f"jobs not finished/accounted after {timeout_s} s: {states}")
        time.sleep(1.0)


def compare(sacct_file: Path, cluster_file: Path) -> dict[str, Any]:
    """Replay ``sacct_file`` with each policy and compare start orders with the record."""
    trace = read_trace(sacct_file)
    recorded_abs = {r.job_id: r.start for r in trace.records if r.start is not None}
    opts = ReplayOptions(trace=sacct_file, policies=POLICIES, cluster=cluster_file)
    data = load_input(opts)
    cluster, _, _ = replay_cluster(opts, data.epoch)
    origin = data.epoch.timestamp()
    recorded = {j: s - origin for j, s in recorded_abs.items()}
    jobs, unplaceable = admit(sim_jobs(data.entries, cluster.slot_seconds), cluster)
    out: dict[str, Any] = {"jobs": len(jobs), "unplaceable": len(unplaceable), "policies": {}}
    for policy in POLICIES:
        result = simulate(jobs, cluster, policy, PlacementParams(seed=0))
        simulated = {
            d.job_id: (cluster.slot_start(d.start_slot) - cluster.epoch).total_seconds()
            for d in result.decisions
        }
        agreement = start_agreement(recorded, simulated, tie_s=0.5)
        out["policies"][policy] = agreement.as_dict()
    return out


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        "## Replay of a real Slurm log vs what Slurm did",
        "",
        "Written by `make bench-agreement` (`python -m bench.slurm_agreement`; needs the "
        "local cluster); raw numbers in `bench/out/agreement.json`, the sacct log in "
        "`bench/out/agreement-sacct.txt`.",
        f"Machine: {m['cpu']}, {m['cores']} cores; Slurm {res['slurm_version']} "
        "(`sched/backfill`, `select/cons_tres`). "
        f"Date: {m['date']}. One run.",
        "",
        f"{res['submitted']} plain `sbatch` jobs (seed {res['seed']}: 1–4 one-GPU tasks on "
        "one node, `sleep` 4–14 s, time limit 1 min) submitted 0.3 s apart to the 4-node, "
        "16-GPU lab cluster; their sacct log replayed on the same cluster with Δ = 1 s. "
        "*Pairwise* = share of job pairs started in the same order by the replay and by Slurm "
        "(pairs tied within 0.5 s in either left out); *same rank* = share of jobs at the same "
        "position in the start order; *|Δstart|* = mean absolute start difference.",
        "",
        "| policy | jobs | pairwise | tied pairs | same rank | mean abs start diff (s) |",
        "|---|---|---|---|---|---|",
    ]
    for policy, a in res["comparison"]["policies"].items():
        pairwise = "—" if a["pairwise_agreement"] is None else f"{a['pairwise_agreement']:.2f}"
        lines.append(
            f"| {policy} | {a['jobs']} | {pairwise} | {a['tied_pairs']} | "
            f"{a['same_rank_share']:.2f} | {a['mean_abs_start_diff_s']:.1f} |"
        )
    lines += [
        "",
        "Slurm here runs its main FIFO scheduler plus backfill with known time limits (1 "
        "min, longer than every job), so it may start a small job ahead of a big one that "
        "waits; `fifo-bf` models that (with exact run times), `fifo-ff` never lets a job "
        "overtake, and `yu-rr` places for completion time, not for Slurm's order.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--jobs", type=int, default=24)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--raw", default="bench/out/agreement.json")
    args = ap.parse_args()
    raw = Path(args.raw)
    raw.parent.mkdir(parents=True, exist_ok=True)
    ids = submit_burst(burst(args.jobs, args.seed), f"agree{args.seed}")
    log = raw.with_name("agreement-sacct.txt")
    log.write_text(wait_accounted(ids, timeout_s=600))
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Path(tmp) / "lab.yaml"
        cluster.write_text(LAB_CLUSTER)
        comparison = compare(log, cluster)
    res = {
        "machine": machine_facts(),
        "slurm_version": run(["sinfo", "--version"]).split()[-1],
        "submitted": args.jobs,
        "seed": args.seed,
        "job_ids": ids,
        "comparison": comparison,
        "date": datetime.now(UTC).isoformat(),
    }
    raw.write_text(json.dumps(res, indent=1))
    write_section(Path(args.out), "agreement", render(res))
    print(render(res))


if __name__ == "__main__":
    main()
