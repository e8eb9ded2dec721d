"""The whole Philly trace under every policy: wall time and peak memory of the real command
(``make bench-scale``; the "Replay scale" section of docs/benchmarks.md).

For each policy, one ``mlsub replay philly.csv -p POLICY --nodes 250x8 --out DIR --json``
in its own process, one after the other (the machine otherwise idle): the whole command's
wall time (start-up, reading and synthesizing 82,247 jobs, the LP bound, the replay, the
metrics, the plots and the HTML report), its peak RSS (``wait4``), and from its summary the
replay's own wall time (``wall_s``) and the per-decision p50/p99. Targets (issue 3): on
this 2-core machine ``yu-rr`` ≤ 15 min, every baseline ≤ 3 min, peak RSS ≤ 4 GB.

    .venv/bin/python -m bench.philly_scale [--policy P …] [--render-only]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .run import machine_facts
from .sections import write_section

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT.parent / "shared" / "traces" / "philly-pollux" / "philly.csv"
MLSUB = str(Path(sys.executable).parent / "mlsub")
NODES = "250x8"
#: policy -> whole-command target in seconds
TARGETS = {
    "yu-rr": 15 * 60,
    "fifo-ff": 180,
    "fifo-bf": 180,
    "oasis": 180,
    "oasis-x0.5": 180,
    "oasis-x2": 180,
    "optimus": 180,
    "drf": 180,
    "tiresias": 180,
    "qssf": 180,
}
RSS_TARGET_MB = 4096


def measure(policy: str) -> dict[str, Any]:
    """One whole-trace replay of ``policy``: its wall time, peak RSS and summary."""
    with tempfile.TemporaryDirectory(prefix="mlsched-scale-") as tmp:
        argv = [MLSUB, "replay", str(TRACE), "-p", policy, "--nodes", NODES]
        argv += ["--out", str(Path(tmp) / "out"), "--json"]
        with open(Path(tmp) / "stdout", "w+b") as out, open(Path(tmp) / "stderr", "w+b") as err:
            began = time.monotonic()
            proc = subprocess.Popen(argv, stdout=out, stderr=err)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.monotonic() - began
            proc.returncode = os.waitstatus_to_exitcode(status)
            if proc.returncode != 0:
                err.seek(0)
                raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}:\n{err.read()!r}")
            out.seek(0)
            summary = json.loads(out.read())
    metrics = summary["policies"][policy]
    return {
        "command_s": round(wall, 1),
        "peak_rss_mb": round(usage.ru_maxrss / 1024.0, 1),  # Linux: KiB
        "replay_s": metrics["wall_s"],
        "decision_p50_ms": metrics["decision_p50_ms"],
        "decision_p99_ms": metrics["decision_p99_ms"],
        "jobs": summary["jobs"],
    }


def _mss(seconds: float) -> str:
    whole = round(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


def render(res: dict[str, Any]) -> str:
    m = res["machine"]
    lines = [
        "## Replay scale: the whole Philly trace, every policy",
        "",
        "Written by `make bench-scale` (`python -m bench.philly_scale`); raw numbers in "
        "`bench/out/scale.json`.",
        f"Machine: {m['cpu']}, {m['cores']} cores, Python {m['python']}. Date: {m['date']} "
        "(of the last row measured; a row re-measured alone keeps the others' dates, in "
        "`bench/out/scale.json`). One run per policy, one at a time on an otherwise idle "
        "machine.",
        "",
        f"Each row is one `mlsub replay philly.csv -p POLICY --nodes {NODES} --out DIR --json`: "
        "the whole Philly trace (82,247 jobs) on 250 nodes × 8 GPUs (2,000 GPUs). *Command* "
        "is the whole command (start-up, reading and synthesizing the trace, the LP bound, "
        "the replay, the metrics, plots and report); *replay* is the simulation alone "
        "(`wall_s`); decisions are per arrival (per re-allocation call for `optimus`, `drf`).",
        "",
        "| policy | command (m:ss) | replay (s) | peak RSS (MB) | decision p50 / p99 (ms) "
        "| target | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for policy, r in res["policies"].items():
        target = TARGETS.get(policy, 180)
        met = r["command_s"] <= target and r["peak_rss_mb"] <= RSS_TARGET_MB
        lines.append(
            f"| {policy} | {_mss(r['command_s'])} | {r['replay_s']:.0f} | {r['peak_rss_mb']:.0f} "
            f"| {r['decision_p50_ms']:.2f} / {r['decision_p99_ms']:.2f} "
            f"| ≤ {_mss(target)}, ≤ {RSS_TARGET_MB // 1024} GB | {'yes' if met else '**no**'} |"
        )
    lines += [
        "",
        "Philly barely queues on 2,000 GPUs, so these runs measure scale; the policies' "
        'standing on a busy cluster is the table "All policies on public traces". How the '
        "baselines reach this speed (the engine's reservation book, `oasis`'s kept usage): "
        'docs/replay-guide.md, "Scale".',
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default="docs/benchmarks.md")
    ap.add_argument("--raw", default="bench/out/scale.json")
    ap.add_argument(
        "--policy", action="append", help="Only these (default: all); the raw file keeps the rest."
    )
    ap.add_argument(
        "--render-only", action="store_true", help="Rewrite the section from the raw file."
    )
    args = ap.parse_args()
    raw = Path(args.raw)
    if args.render_only:
        write_section(Path(args.out), "replay-scale", render(json.loads(raw.read_text())))
        return
    res: dict[str, Any] = {"machine": machine_facts(), "policies": {}}
    if args.policy and raw.exists():  # re-measure some: keep the others' rows
        res["policies"] = json.loads(raw.read_text())["policies"]
    for policy in args.policy or list(TARGETS):
        res["policies"][policy] = measure(policy)
        print(f"{policy}: {res['policies'][policy]}", flush=True)
    res["policies"] = {p: res["policies"][p] for p in TARGETS if p in res["policies"]}
    raw.parent.mkdir(parents=True, exist_ok=True)
    raw.write_text(json.dumps(res, indent=1))
    write_section(Path(args.out), "replay-scale", render(res))
    print(render(res))


if __name__ == "__main__":
    main()
