"""Planning latency of the live path (``make bench-live``; part of ``make bench``).

Three measurements, one run, written to the ``live`` section of docs/benchmarks.md and
raw to bench/out/live.json:

1. ``mlsub plan SCRIPT --json`` end to end against the local real Slurm cluster (a new
   process each time: start-up, Slurm reads, planning, script rendering), and
   ``mlsub --version`` for the process start-up alone;
2. the same in-process (``submit_job(dry_run=True)``): Slurm reads (``sinfo``/``squeue``)
   + store + ``place()`` + rendering, without the interpreter's start-up;
3. ``mlsub plan --cluster FILE --json`` against a described cluster of 1,024 nodes
   (8 GPUs each) holding 200 reservations, end to end.

Needs the local cluster (root: ``make cluster-up``); section 3 runs anywhere.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from slurm_mlsched.files.job_options import merge_options, read_script_header
from slurm_mlsched.files.job_script import JobScript
from slurm_mlsched.services.clock import WallClock
from slurm_mlsched.services.live_queue import LiveWiring
from slurm_mlsched.services.submit import SbatchSubmitter, submit_job
from slurm_mlsched.services.viewer import Viewer
from slurm_mlsched.slurm.nodes import (
    NodeStateSource,
    PyslurmSource,
    SlurmCliSource,
    select_source,
)
from slurm_mlsched.slurm.runner import LocalRunner, SlurmCommands
from slurm_mlsched.storage import open_store

from .run import machine_facts, pct
from .sections import write_section

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "ps_train.py"
MLSUB = str(Path(sys.executable).parent / "mlsub")


def timed_runs(argv: list[str], n: int, env: dict[str, str]) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(argv, env=env, check=True, capture_output=True)
        out.append(time.perf_counter() - t)
    return out


def stats(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "p50_s": statistics.median(values),
        "p95_s": pct(values, 0.95),
        "max_s": max(values),
    }


def big_cluster_file(path: Path, nodes: int, reservations: int, seed: int) -> None:
    rng = random.Random(seed)
    lines = [
        "slot_seconds: 600",
        "groups:",
        f"  - {{prefix: n, count: {nodes}, gpus: 8, cpus: 32, mem_gb: 256}}",
        "reservations:",
    ]
    for k in range(reservations):
        start = rng.randrange(0, 20)
        lines.append(
            f"  - {{node: n{rng.randrange(1, nodes + 1)}, start: {start}, "
            f"end: {start + rng.randrange(1, 40)}, gpus: {rng.choice([2, 4, 8])}, cpus: 8, "
            f'mem_gb: 64, job_id: "r{k}"}}'
        )
    path.write_text("\n".join(lines) + "\n")


def pyslurm_module() -> Any:
    """The installed pyslurm when it matches this Slurm (make pyslurm), else None."""
    choice = select_source(SlurmCommands(LocalRunner()))
    return choice.source.module if isinstance(choice.source, PyslurmSource) else None


def in_process(n: int, db: Path, pyslurm: Any = None) -> dict[str, Any]:
    store = open_store(f"sqlite:///{db}", grace_s=600.0)
    slurm = SlurmCommands(LocalRunner())
    opts = merge_options(read_script_header(EXAMPLE), {})
    source: NodeStateSource = (
        PyslurmSource(pyslurm, str(slurm.version()), slurm)
        if pyslurm is not None
        else SlurmCliSource(slurm)
    )
    wiring = LiveWiring(
        source=source,
        store=store,
        clock=WallClock(),
        submitter=SbatchSubmitter(slurm),  # a dry run only asks where the program is
        cluster_name="bench",
        slot_seconds=60.0,
        viewer=Viewer("bench"),
        host="bench",
    )
    total, read, place = [], [], []
    for _ in range(n):
        t = time.perf_counter()
        out = submit_job(wiring, opts, JobScript(EXAMPLE), dry_run=True)
        total.append(time.perf_counter() - t)
        place.append(out.plan.decision_ms / 1000)
        t = time.perf_counter()
        wiring.source.read(wiring.clock.now())
        read.append(time.perf_counter() - t)
    store.close()
    return {"total": stats(total), "slurm_read": stats(read), "place": stats(place)}


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    big = res["big"]
    rows = [
        ("`python -c 'import typer'` (the floor: Python and Typer)", res["typer"]),
        ("`mlsub --version` (process start-up only)", res["startup"]),
        ("`mlsub --help`", res["help"]),
    ]
    names = {
        "commands": "the Slurm commands (`sinfo -N --json`, `squeue --all --json`)",
        "pyslurm": f"pyslurm {res.get('pyslurm_version', '')} (`Nodes.load`, `Jobs.load`)",
    }
    for kind, label in names.items():
        if kind not in res["live_cli"]:
            continue
        inproc = res["live_inproc"][kind]
        rows += [
            (f"`mlsub plan examples/ps_train.py --json`, live 4-node cluster, via {label}",
             res["live_cli"][kind]),
            (f"in-process dry run via {kind}: Slurm reads + store + `place()` + script",
             inproc["total"]),
            (f"  of which the node state read via {kind}", inproc["slurm_read"]),
            ("  of which `place()`", inproc["place"]),
        ]  # fmt: skip
    rows += [
        (
            f"`mlsub plan --cluster` {big['nodes']} nodes, {big['reservations']} reservations, "
            "end to end",
            res["big_cli"],
        ),
    ]
    lines = [
        "## Live planning latency",
        "",
        "Written by `make bench-live` (`python -m bench.live_latency`; needs the local "
        "cluster); raw numbers in `bench/out/live.json`.",
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}, "
        f"Slurm {res['slurm_version']}. Date: {m['date']}. One run.",
        "",
        "| what | runs | p50 (s) | p95 (s) | max (s) |",
        "|---|---|---|---|---|",
    ]
    for label, s in rows:
        lines.append(
            f"| {label} | {s['n']} | {s['p50_s']:.3f} | {s['p95_s']:.3f} | {s['max_s']:.3f} |"
        )
    reads = {k: v["slurm_read"]["p50_s"] for k, v in res["live_inproc"].items()}
    if "pyslurm" in reads:
        lines += [
            "",
            f"Node state read, p50: the commands {reads['commands'] * 1000:.1f} ms, pyslurm "
            f"{reads['pyslurm'] * 1000:.1f} ms (ratio {reads['commands'] / reads['pyslurm']:.1f}, "
            "measured in this run; the controller was pinged once before, as in a command).",
        ]
    lines += [
        "",
        "The job is the example's header (4 workers, 1 PS, no GPUs); the 1,024-node plan uses "
        f"a {res['big']['job']} job. The end-to-end figures include the Python process "
        "start-up; `mlsub --version` ÷ `import typer` (p50) = "
        f"{res['startup']['p50_s'] / res['typer']['p50_s']:.2f} (target ≤ 2, issue 16): the "
        "CLI imports the store, the solver and the renderers only in the commands that use "
        "them (`tests/cli/test_cli_startup.py`); modules byte-compiled first, as `pip install` "
        "does.",
    ]
    return "\n".join(lines) + "\n"


def startup_env(tmp: str) -> dict[str, str]:
    """Start-up as after `pip install`, which byte-compiles every module: a checkout run
    with PYTHONDONTWRITEBYTECODE set would compile them at every start."""
    compileall.compile_dir(str(ROOT / "slurm_mlsched"), quiet=1)
    return {
        **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        "MLSUB_DB_URL": f"sqlite:///{tmp}/bench.db",
        "MLSUB_CONFIG": f"{tmp}/none.toml",
    }


def startup_only(runs: int) -> dict[str, Any]:
    """The start-up rows of the section (``--startup-only``): ``import typer``, ``mlsub
    --version``, ``mlsub --help`` and their ratio."""
    with tempfile.TemporaryDirectory() as tmp:
        env = startup_env(tmp)
        res: dict[str, Any] = {"machine": machine_facts()}
        res["typer"] = stats(timed_runs([sys.executable, "-c", "import typer"], runs, env))
        res["startup"] = stats(timed_runs([MLSUB, "--version"], runs, env))
        res["help"] = stats(timed_runs([MLSUB, "--help"], runs, env))
    res["ratio_p50"] = res["startup"]["p50_s"] / res["typer"]["p50_s"]
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--raw", default="bench/out/live.json")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument(
        "--startup-only",
        action="store_true",
        help="measure the start-up rows alone (no Slurm needed); print them, write nothing",
    )
    args = ap.parse_args()
    if args.startup_only:
        print(json.dumps(startup_only(args.runs), indent=1))
        return
    res: dict[str, Any] = {"machine": machine_facts()}
    with tempfile.TemporaryDirectory() as tmp:
        env = startup_env(tmp)
        slurm = SlurmCommands(LocalRunner())
        slurm.ping()
        res["slurm_version"] = str(slurm.version())
        res["typer"] = stats(timed_runs([sys.executable, "-c", "import typer"], args.runs, env))
        res["startup"] = stats(timed_runs([MLSUB, "--version"], args.runs, env))
        res["help"] = stats(timed_runs([MLSUB, "--help"], args.runs, env))
        plan = [MLSUB, "plan", str(EXAMPLE), "--json"]
        cli_env = {**env, "MLSUB_SLURM_SOURCE": "cli"}
        res["live_cli"] = {"commands": stats(timed_runs(plan, args.runs, cli_env))}
        res["live_inproc"] = {"commands": in_process(args.runs * 2, Path(tmp) / "cli.db")}
        module = pyslurm_module()
        if module is not None:
            res["pyslurm_version"] = str(module.__version__)
            auto = {**env, "MLSUB_SLURM_SOURCE": "auto"}
            res["live_cli"]["pyslurm"] = stats(timed_runs(plan, args.runs, auto))
            res["live_inproc"]["pyslurm"] = in_process(args.runs * 2, Path(tmp) / "py.db", module)
        else:
            print("pyslurm is not installed for this Slurm (make pyslurm): commands only")
        big = Path(tmp) / "big.yaml"
        res["big"] = {"nodes": 1024, "reservations": 200, "job": "16-worker ResNet-50"}
        big_cluster_file(big, 1024, 200, args.seed)
        argv = [MLSUB, "plan", "--cluster", str(big), "--json", "--workers", "16", "--model",
                "resnet-50", "--batches-per-epoch", "5000", "--mem-per-worker", "16G"]  # fmt: skip
        res["big_cli"] = stats(timed_runs(argv, args.runs, env))
    Path(args.raw).parent.mkdir(parents=True, exist_ok=True)
    Path(args.raw).write_text(json.dumps(res, indent=1, default=str))
    write_section(Path(args.out), "live", render(res))
    print(render(res))


if __name__ == "__main__":
    main()
