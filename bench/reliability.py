"""Reliability figures (``make bench-reliability``): what issue 15 asks to be measured, in
one run, written to the ``reliability`` section of docs/benchmarks.md and raw to
bench/out/reliability.json.

1. Concurrency against the real cluster: 16 ``mlsub submit`` at once, 3 runs, on SQLite
   and on PostgreSQL; then 6 ``mlsub reconcile`` at once. Counted: exits other than 0,
   failed exits for jobs Slurm queued (a job carrying the decision's tag exists),
   double bookings (a node over capacity at some moment, from the stored reservations),
   decisions whose Slurm job does not carry their tag.
2. Input: 1,000 mutated traces over every format (the generator of
   tests/traces/test_trace_fuzz.py, another seed): exit codes, and ``error[internal]``.
3. Waits: a PostgreSQL server that accepts and never answers; a held SQLite lock with a
   3 s busy timeout; a read while the lock is held; slurmctld stopped (SIGSTOP) and down.

Needs root and the local cluster (started here if it is not up) and a PostgreSQL server
binary (tests/storage/postgres.py installs one if missing).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from slurm_mlsched.services.submit import tag_of
from slurm_mlsched.storage import open_store
from tests.integration.mlsub_cli import probe_script
from tests.reliability_checks import node_capacity, overbookings, silent_server
from tests.storage.postgres import postgres_server
from tests.traces.test_trace_fuzz import FIXTURES, GENERIC_COLUMNS, SEEDS, mutate, mutate_json

from .run import machine_facts
from .sections import write_section

ROOT = Path(__file__).resolve().parents[1]
MLSUB = str(Path(sys.executable).parent / "mlsub")
SUBMITS, RUNS, RECONCILES = 16, 3, 6
SHAPE = (
    "--workers 1 --gpus-per-worker 1 --cpus-per-worker 1 --mem-per-worker 1G "
    "--cpus-per-ps 1 --mem-per-ps 512M --step-time 0.05 --model-size 1 "
    "--batches-per-epoch 1800"
)


def env_for(work: Path, url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLSUB_")}
    env.update(
        MLSUB_DB_URL=url,
        MLSUB_CONFIG=str(work / "none.toml"),
        MLSUB_SLOT_SECONDS="10",
        MLSUB_CLUSTER_NAME="bench-rel",
        COLUMNS="200",
        **extra,
    )
    return env


def mlsub(
    env: dict[str, str], *args: str, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """One mlsub process, run in the bench's work directory (where ``env_for`` put its
    config): the jobs' ``mlsub-*.out`` files land where sbatch runs, not in the checkout."""
    return subprocess.run(
        [MLSUB, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=Path(env["MLSUB_CONFIG"]).parent,
    )


def squeue_comments() -> dict[str, str]:
    out = subprocess.run(["squeue", "--all", "--json"], capture_output=True, text=True, check=True)
    return {str(j["job_id"]): j.get("comment") or "" for j in json.loads(out.stdout)["jobs"]}


def one_run(work: Path, url: str) -> dict[str, Any]:
    env = env_for(work, url)
    script = probe_script(work / "probe.py", SHAPE)
    tasks = work / "tasks"

    def submit(k: int) -> subprocess.CompletedProcess[str]:
        (tasks / str(k)).mkdir(parents=True)
        return mlsub(env, str(script), "--interpreter", sys.executable, "--json", "--",
                     str(tasks / str(k)), "90")  # fmt: skip

    t = time.perf_counter()
    with ThreadPoolExecutor(SUBMITS) as pool:
        done = list(pool.map(submit, range(SUBMITS)))
    wall = time.perf_counter() - t
    comments = squeue_comments()
    words = {c: set(text.split()) for c, text in comments.items()}
    queued = 0
    without_job = 0
    store = open_store(url, grace_s=0)
    try:
        rows = store.history()
    finally:
        store.close()
    for row in rows:
        tag = str(tag_of("bench-rel", row))
        if any(tag in w for w in words.values()):
            queued += 1
        if row.slurm_job_id and tag not in words.get(row.slurm_job_id, set()):
            without_job += 1
    succeeded = sum(1 for p in done if p.returncode == 0)
    with ThreadPoolExecutor(RECONCILES) as pool:
        rec = list(pool.map(lambda _: mlsub(env, "reconcile", "--json"), range(RECONCILES)))
    ids = [row.slurm_job_id for row in rows if row.slurm_job_id]
    if ids:
        subprocess.run(["scancel", *ids], check=False)
    return {
        "wall_s": wall,
        "exits": dict(Counter(p.returncode for p in done)),
        "failed_exit_for_queued_job": max(0, queued - succeeded),
        "double_bookings": double_bookings(url, env),
        "decisions": len(rows),
        "decision_without_its_job": without_job,
        "reconcile_exits": dict(Counter(p.returncode for p in rec)),
        "stderr_of_failures": [p.stderr[-300:] for p in done if p.returncode][:3],
    }


def double_bookings(url: str, env: dict[str, str]) -> int:
    capacity = node_capacity(json.loads(mlsub(env, "cluster", "--json").stdout))
    return len(overbookings(url, capacity))


def concurrency() -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mlsub-rel-") as tmp:
        for k in range(RUNS):
            work = Path(tmp) / f"sqlite-{k}"
            work.mkdir()
            out.setdefault("sqlite", []).append(one_run(work, f"sqlite:///{work / 'd.db'}"))
        with postgres_server() as server:
            for k in range(RUNS):
                work = Path(tmp) / f"pg-{k}"
                work.mkdir()
                url = server.create_database(f"rel{k}")
                out.setdefault("postgresql", []).append(one_run(work, url))
    return out


def fuzz(cases: int = 1000, seed: int = 15) -> dict[str, Any]:
    """In-process (``CliRunner``: the same command code, without 1,000 interpreter
    start-ups)."""
    from typer.testing import CliRunner

    from slurm_mlsched.cli.app import app

    runner = CliRunner()
    rng = random.Random(seed)
    sacct_json = (FIXTURES / "22.05" / "sacct.json").read_text()
    codes: Counter[int] = Counter()
    internal = 0
    with tempfile.TemporaryDirectory(prefix="mlsub-fuzz-") as tmp:
        env = {"MLSUB_DB_URL": f"sqlite:///{tmp}/d.db", "COLUMNS": "120", "MLSUB_DEBUG": ""}
        for k in range(cases):
            name = rng.choice([*SEEDS, "sacct.json"])
            text = mutate_json(rng, sacct_json) if name == "sacct.json" else mutate(rng, name)
            path = Path(tmp) / f"{k}-{name}"
            path.write_text(text)
            extra = ["--columns", GENERIC_COLUMNS] if name == "generic.csv" else []
            if rng.random() < 0.5:
                extra.append("--skip-bad")
            args = ["replay", str(path), "-p", "fifo-ff", "--nodes", "4x8", "--lp-max-jobs", "0"]
            done = runner.invoke(app, [*args, *extra], env=env)
            codes[done.exit_code] += 1
            internal += "error[internal]" in done.stdout + done.stderr
    return {"cases": cases, "exit_codes": dict(codes), "internal_errors": internal}


def timed(env: dict[str, str], *args: str) -> tuple[float, int]:
    t = time.perf_counter()
    done = mlsub(env, *args, timeout=120)
    return time.perf_counter() - t, done.returncode


def waits() -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mlsub-waits-") as tmp:
        work = Path(tmp)
        base = env_for(work, f"sqlite:///{work / 'v.db'}")
        out["startup"] = [timed(base, "--version") for _ in range(3)]
        # a PostgreSQL server that accepts and never answers
        with silent_server() as port:
            env = env_for(work, f"postgresql+psycopg://mlsub:pw@127.0.0.1:{port}/mlsub")
            out["postgresql_silent_s"], out["postgresql_silent_exit"] = timed(env, "history")
        # a held SQLite lock, busy timeout 3 s; a read meanwhile
        url = f"sqlite:///{work / 'd.db'}"
        env = env_for(work, url, MLSUB_DB_BUSY_TIMEOUT_S="3")
        mlsub(env, "history")  # creates the store
        holder = sqlite3.connect(work / "d.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        try:
            out["read_under_lock_s"], out["read_under_lock_exit"] = timed(env, "history")
            out["write_under_lock_s"], out["write_under_lock_exit"] = timed(
                env, "plan", str(ROOT / "examples" / "train_resnet.py"), "--cluster",
                str(ROOT / "examples" / "cluster.yaml"), "--reserve",
            )  # fmt: skip
        finally:
            holder.rollback()
            holder.close()
        # slurmctld stopped, then down (a controller port nobody listens on)
        pids = [int(p) for p in subprocess.run(["pgrep", "-x", "slurmctld"], capture_output=True,
                                               text=True, check=False).stdout.split()]  # fmt: skip
        stopped = []
        for _ in range(3):
            for pid in pids:
                os.kill(pid, signal.SIGSTOP)
            try:
                stopped.append(timed(env, "cluster"))
            finally:
                for pid in pids:
                    os.kill(pid, signal.SIGCONT)
            time.sleep(1)
        out["slurmctld_stopped"] = stopped
        conf = work / "slurm.conf"
        conf.write_text(
            "ClusterName=bogus\nSlurmctldHost=localhost\nSlurmctldPort=6999\n"
            "AuthType=auth/munge\nNodeName=node1 CPUs=1\nPartitionName=debug Nodes=ALL\n"
        )
        down_env = {**env, "SLURM_CONF": str(conf)}
        out["slurmctld_down"] = [timed(down_env, "cluster") for _ in range(3)]
    return out


def render(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        "## Reliability (`make bench-reliability`)",
        "",
        f"Measured {m['date']} on {m['cpu']} ({m['cores']} cores), Python {m['python']}; "
        "the local 4-node Slurm cluster, SQLite files and a local PostgreSQL server.",
        "",
        f"**Concurrency**: {SUBMITS} `mlsub submit` at once (one GPU worker + one PS each; "
        f"the cluster has 16 GPUs), {RUNS} runs per store, then {RECONCILES} `mlsub "
        "reconcile` at once.",
        "",
        "| store | run | wall | exits | failed exit, job queued | double bookings | "
        "decision without its job | reconcile exits |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for store, runs in result["concurrency"].items():
        for k, r in enumerate(runs, 1):
            lines.append(
                f"| {store} | {k} | {r['wall_s']:.1f} s | {_counts(r['exits'])} | "
                f"{r['failed_exit_for_queued_job']} | {r['double_bookings']} | "
                f"{r['decision_without_its_job']} | {_counts(r['reconcile_exits'])} |"
            )
    f = result["fuzz"]
    w = result["waits"]
    lines += [
        "",
        f"**Input**: {f['cases']} mutated traces over 7 formats (tests/traces/"
        f"test_trace_fuzz.py's generator, seed 15): exit codes {_counts(f['exit_codes'])}; "
        f"`error[internal]`: **{f['internal_errors']}**.",
        "",
        "**Waits** (whole `mlsub` processes, start-up included; the bounds themselves: "
        "PostgreSQL connect 3 s, SQLite busy timeout as set, `scontrol ping` 2 s):",
        "",
        "| situation | took | exit |",
        "|---|---|---|",
        f"| PostgreSQL accepts and never answers (`history`) | {w['postgresql_silent_s']:.1f} s "
        f"| {w['postgresql_silent_exit']} |",
        f"| SQLite lock held, busy timeout 3 s: a read (`history`) | "
        f"{w['read_under_lock_s']:.1f} s | {w['read_under_lock_exit']} |",
        f"| SQLite lock held, busy timeout 3 s: a write (`plan --reserve`) | "
        f"{w['write_under_lock_s']:.1f} s | {w['write_under_lock_exit']} |",
    ]
    for label, key in (("mlsub's start-up alone (`--version`)", "startup"),
                       ("slurmctld stopped (SIGSTOP), `cluster`", "slurmctld_stopped"),
                       ("slurmctld down (closed port), `cluster`", "slurmctld_down")):  # fmt: skip
        times = ", ".join(f"{t:.1f}" for t, _ in w[key])
        exits = ",".join(str(c) for _, c in w[key])
        lines.append(f"| {label} ×3 | {times} s | {exits} |")
    return "\n".join(lines)


def _counts(counter: dict[Any, int]) -> str:
    return ", ".join(f"{k}: {v}" for k, v in sorted(counter.items(), key=lambda kv: str(kv[0])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--fuzz-cases", type=int, default=1000)
    args = parser.parse_args()
    result = {
        "machine": machine_facts(),
        "concurrency": concurrency(),
        "fuzz": fuzz(args.fuzz_cases),
        "waits": waits(),
    }
    raw = ROOT / "bench" / "out" / "reliability.json"
    raw.parent.mkdir(exist_ok=True)
    raw.write_text(json.dumps(result, indent=2, default=str) + "\n")
    write_section(args.out, "reliability", render(result))
    print(render(result))


if __name__ == "__main__":
    main()
