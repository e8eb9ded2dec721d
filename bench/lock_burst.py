"""A burst on the store's lock (``make bench-burst``): sixteen ``mlsub plan --reserve`` at
once on one store, each a whole process that records a decision under the planning lock,
written to the ``lock-burst`` section of docs/benchmarks.md and raw to
bench/out/lock-burst.json.

The last of a burst waits for the sum of the others' turns. A wait fails only when the
lock stops changing hands for ``db_busy_timeout_s`` or reaches 10 × that
(storage/database.py, "Waiting in line"); a busy timeout of 1 s, shorter than the burst,
shows it: every process must exit 0. Counted per run: exit codes, the wall time of the
burst, the longest process, and the decisions stored (16 expected). SQLite files and a
local PostgreSQL server (tests/storage/postgres.py installs one if missing); no Slurm.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from slurm_mlsched.storage import open_store
from tests.storage.postgres import postgres_server

from .reliability import ROOT, env_for, mlsub
from .run import machine_facts, measured_on
from .sections import write_section

BURST, RUNS = 16, 3
TIMEOUTS_S = (1.0, 30.0)


def one_burst(work: Path, url: str, timeout_s: float) -> dict[str, Any]:
    env = env_for(work, url, MLSUB_DB_BUSY_TIMEOUT_S=str(timeout_s))
    args = (
        "plan", str(ROOT / "examples" / "train_resnet.py"),
        "--cluster", str(ROOT / "examples" / "cluster.yaml"), "--reserve", "--json",
    )  # fmt: skip
    mlsub(env, "history")  # the store exists before the burst (its creation is not timed)

    def one(_: int) -> tuple[int, float, str]:
        began = time.monotonic()
        proc = mlsub(env, *args)
        said = proc.stderr.strip().splitlines()[0] if proc.returncode else ""
        return proc.returncode, time.monotonic() - began, said

    began = time.monotonic()
    with ThreadPoolExecutor(BURST) as pool:
        done = list(pool.map(one, range(BURST)))
    wall = time.monotonic() - began
    store = open_store(url, grace_s=0)
    try:
        stored = len(store.history())
    finally:
        store.close()
    return {
        "timeout_s": timeout_s,
        "wall_s": round(wall, 2),
        "longest_s": round(max(t for _, t, _ in done), 2),
        "exits": dict(Counter(rc for rc, _, _ in done)),
        "errors": sorted({said for _, _, said in done if said}),
        "stored": stored,
    }


def measure() -> dict[str, Any]:
    out: dict[str, list[dict[str, Any]]] = {"sqlite": [], "postgresql": []}
    with tempfile.TemporaryDirectory(prefix="mlsub-burst-") as tmp:
        for timeout_s in TIMEOUTS_S:
            for k in range(RUNS):
                work = Path(tmp) / f"sqlite-{timeout_s:g}-{k}"
                work.mkdir()
                url = f"sqlite:///{work / 'd.db'}"
                out["sqlite"].append(one_burst(work, url, timeout_s))
        with postgres_server() as server:
            for timeout_s in TIMEOUTS_S:
                for k in range(RUNS):
                    work = Path(tmp) / f"pg-{timeout_s:g}-{k}"
                    work.mkdir()
                    url = server.create_database(f"burst{int(timeout_s)}x{k}")
                    out["postgresql"].append(one_burst(work, url, timeout_s))
    return out


def render(result: dict[str, Any]) -> str:
    lines = [
        "## A burst on the store's lock (`make bench-burst`)",
        "",
        f"{measured_on(result['machine'])}. "
        f"{BURST} `mlsub plan examples/train_resnet.py --cluster examples/cluster.yaml "
        "--reserve` at once on one store (each a whole process recording a decision under "
        f"the planning lock), {RUNS} runs per store and busy timeout. A wait goes on while "
        'the lock changes hands (docs/admin-guide.md, "Every wait on the store is '
        'bounded"), so with a busy timeout shorter than the burst every process must '
        "still exit 0. Before that rule (2026-12-07, by hand, SQLite, busy timeout 1 s, "
        "the cores shared with a test run) 4, 4 and 5 of 16 exited 7.",
        "",
        "| store | busy timeout | run | wall | longest process | exits | decisions stored |",
        "|---|---|---|---|---|---|---|",
    ]
    for store, runs in result["bursts"].items():
        for k, run in enumerate(runs):
            exits = ", ".join(f"{rc}: {n}" for rc, n in sorted(run["exits"].items()))
            lines.append(
                f"| {store} | {run['timeout_s']:g} s | {k % RUNS + 1} | {run['wall_s']:.1f} s "
                f"| {run['longest_s']:.1f} s | {exits} | {run['stored']} |"
            )
    errors = sorted({e for runs in result["bursts"].values() for r in runs for e in r["errors"]})
    if errors:
        lines += ["", "Errors seen:", "", *[f"* `{e}`" for e in errors]]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--raw", type=Path, default=ROOT / "bench" / "out" / "lock-burst.json")
    args = parser.parse_args()
    result = {"machine": machine_facts(), "bursts": measure()}
    args.raw.parent.mkdir(parents=True, exist_ok=True)
    args.raw.write_text(json.dumps(result, indent=1))
    write_section(args.out, "lock-burst", render(result))
    print(render(result))


if __name__ == "__main__":
    main()
