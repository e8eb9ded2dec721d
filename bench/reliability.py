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
4. Crashes: ``mlsub submit`` killed with SIGKILL at each step of a submission (after its
   decision was committed and before sbatch; during sbatch, after Slurm took the job),
   then one ``mlsub reconcile``: decisions left inconsistent with Slurm (the crash tests
   of tests/integration/test_crash_reconcile.py, repeated).
5. Hostile job specs: every hostile string of tests/sbatch/test_sbatch_render.py as the
   job name and as a program argument, through the real renderer, ``bash -n`` and a run
   with a stand-in srun: refused as input, scripts that do not parse, commands injected.

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

from slurm_mlsched.services.live_queue import tag_of
from slurm_mlsched.storage import open_store
from tests.integration.mlsub_cli import probe_script
from tests.reliability_checks import node_capacity, overbookings, silent_server
from tests.storage.postgres import postgres_server
from tests.traces.test_trace_fuzz import FIXTURES, GENERIC_COLUMNS, SEEDS, mutate, mutate_json

from .run import machine_facts, measured_on
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


def crashes(runs: int = 4) -> dict[str, Any]:
    """Item 4 of the module docstring: per step, the decisions reconcile left other than
    the step's one right answer (before sbatch: submit-failed, no job; during sbatch: the
    Slurm job recorded, found by its tag)."""
    from tests.integration.mlsub_cli import SMALL_TASKS, Mlsub
    from tests.integration.test_crash_reconcile import (
        BEFORE,
        DURING,
        crash_while_submitting,
        wrapper,
    )

    out: dict[str, Any] = {}
    for step, template in (("before sbatch", BEFORE), ("during sbatch", DURING)):
        wrong = 0
        for _ in range(runs):
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                marker = work / "marker"
                crashed = Mlsub(work, extra_env=wrapper(work / "bin", template, marker))
                script = probe_script(
                    work / "probe.py", f"{SMALL_TASKS} --workers 1 --batches-per-epoch 10"
                )
                crash_while_submitting(crashed, script, marker, work)
                mlsub = Mlsub(work)
                (row,) = mlsub.json("reconcile")["decisions"]
                if template is BEFORE:
                    wrong += int(row["after"] != "submit-failed" or bool(row["slurm_job_id"]))
                else:
                    job = marker.read_text().strip().split(";")[0]
                    wrong += int(row["slurm_job_id"] != job)
                    subprocess.run(["scancel", job], check=False)
        out[step] = {"runs": runs, "inconsistent_after_reconcile": wrong}
    return out


def hostile_specs() -> dict[str, Any]:
    """Item 5 of the module docstring."""
    from slurm_mlsched.errors import InputError
    from slurm_mlsched.sbatch.render import render_sbatch
    from tests.sbatch.test_sbatch_render import COLOCATED, HOSTILE, JOB, run_script, spec

    tried = refused = unparsable = injected = 0
    for value in HOSTILE:
        for where in ("job name", "argument"):
            tried += 1
            command = ("sh", "-c", 'touch "$PROBE_DIR/$MLSCHED_ROLE-$MLSCHED_RANK.ran"', "x")
            kw: dict[str, Any] = {"command": (*command, value)}
            if where == "job name":
                kw = {"job_name": value, "command": command}
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    script = render_sbatch(COLOCATED, JOB, {}, spec(**kw))
                except InputError:
                    refused += 1
                    continue
                try:
                    run_script(script.text, Path(tmp))
                except AssertionError:
                    unparsable += 1
                injected += int((Path(tmp) / "MARKER").exists())
    return {
        "specs": tried,
        "refused_as_input": refused,
        "scripts_that_fail_bash_n_or_run": unparsable,
        "commands_injected": injected,
    }


def render(result: dict[str, Any]) -> str:
    m = result["machine"]
    lines = [
        "## Reliability (`make bench-reliability`)",
        "",
        f"{measured_on(m)}; "
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
        "PostgreSQL connect 2 s, SQLite busy timeout as set, `scontrol ping` 2 s):",
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
    lines += ["", "**Crashes**: `mlsub submit` killed with SIGKILL at each step, then one "
              "`mlsub reconcile`:", "", "| step | runs | decisions inconsistent with Slurm "
              "after reconcile |", "|---|---|---|"]  # fmt: skip
    for step, c in result.get("crashes", {}).items():
        lines.append(f"| killed {step} | {c['runs']} | {c['inconsistent_after_reconcile']} |")
    h = result.get("hostile")
    if h:
        lines += [
            "",
            f"**Hostile job specs**: {h['specs']} (each hostile string of tests/sbatch as the "
            f"job name and as a program argument): refused as input {h['refused_as_input']}, "
            f"rendered scripts that fail `bash -n` or their run "
            f"{h['scripts_that_fail_bash_n_or_run']}, commands injected "
            f"**{h['commands_injected']}**.",
        ]
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
        "crashes": crashes(),
        "hostile": hostile_specs(),
    }
    raw = ROOT / "bench" / "out" / "reliability.json"
    raw.parent.mkdir(exist_ok=True)
    raw.write_text(json.dumps(result, indent=2, default=str) + "\n")
    write_section(args.out, "reliability", render(result))
    print(render(result))


if __name__ == "__main__":
    main()
