"""What fuzzed input made the commands do (``make bench-fuzz``): the three hypothesis tests
of tests/cli/test_input_fuzz.py (``mlsub replay`` on cluster and job files, ``mlsub plan
--cluster`` on job options, ``mlsub plan SCRIPT`` on script headers) run with fresh random
examples, ``--scale`` times the examples a CI run draws, from a stored seed. Each run's
exit is counted (0 done, 3 bad input, 4 a job no node can ever hold; anything else, or an
internal error, fails the test) and the counts go to the ``fuzz-tally`` section of
docs/benchmarks.md and raw to bench/out/fuzz.json, so the figures the test's docstring
quotes come from a make target. Exits 1 when a test failed (its section says so).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .run import machine_facts, measured_on
from .sections import write_section

ROOT = Path(__file__).resolve().parents[1]
TESTS = "tests/cli/test_input_fuzz.py"
OUT = ROOT / "bench" / "out" / "fuzz.json"
#: The tests' kinds (tests/cli/test_input_fuzz.py, ``run_holds``) and what each fuzzes.
KINDS = {
    "replay": "`mlsub replay` on cluster and job files, policies and replay options",
    "plan options": "`mlsub plan --cluster` on job options",
    "plan script": "`mlsub plan SCRIPT --cluster` on `#SBATCH` and `# mlsub:` headers",
}


def measure(scale: float, seed: int) -> dict[str, Any]:
    """Run the fuzz tests once at ``scale`` from ``seed``; their tally and outcome."""
    with tempfile.TemporaryDirectory() as tmp:
        tally = Path(tmp) / "tally.json"
        env = {
            **os.environ,
            "HYPOTHESIS_PROFILE": "fuzz",
            "MLSUB_FUZZ_SCALE": str(scale),
            "MLSUB_FUZZ_TALLY": str(tally),
        }
        began = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", TESTS,
             f"--hypothesis-seed={seed}"],
            cwd=ROOT, env=env, capture_output=True, text=True, check=False,
        )  # fmt: skip
        wall = time.monotonic() - began
        counts = json.loads(tally.read_text()) if tally.exists() else {}
    return {
        "scale": scale,
        "seed": seed,
        "wall_s": round(wall, 1),
        "passed": proc.returncode == 0,
        "pytest": (proc.stdout.strip().splitlines() or [""])[-1],
        "counts": counts,
    }


def render(result: dict[str, Any]) -> str:
    r = result["run"]
    lines = [
        "## Fuzzed input: what the commands did (`make bench-fuzz`)",
        "",
        f"Written by `python -m bench.fuzz_tally` (raw counts in `bench/out/fuzz.json`). "
        f"{measured_on(result['machine'])} (the date: when the run ended). "
        f"The three hypothesis tests of `{TESTS}` with fresh random examples "
        f"(`--hypothesis-seed={r['seed']}`), {r['scale']:g} × the examples a CI run draws, "
        f"in {r['wall_s']:.0f} s. Each must end with a documented exit (0 done, 3 bad "
        "input, 4 a job no node can ever hold), never an internal error or another code. "
        "One job file in four, one option set in four and one script in four carry a "
        "flaw; one script in four has a line of any Unicode.",
        "",
        "| input fuzzed | runs | exit 0 | exit 3 (bad input) | exit 4 (never fits) "
        "| internal error | other exit |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, what in KINDS.items():
        c = r["counts"].get(kind, {})
        other = sum(n for code, n in c.items() if code not in {"0", "3", "4", "internal"})
        lines.append(
            f"| {what} | {sum(c.values()):,} | {c.get('0', 0):,} | {c.get('3', 0):,} "
            f"| {c.get('4', 0):,} | {c.get('internal', 0):,} | {other:,} |"
        )
    verdict = "every test passed" if r["passed"] else f"**a test failed**: {r['pytest']}"
    lines += ["", f"pytest: {verdict} ({r['pytest']})." if r["passed"] else f"pytest: {verdict}."]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=25.0, help="Examples × a CI run's.")
    ap.add_argument("--seed", type=int, default=None, help="Hypothesis seed (default: drawn).")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    run = measure(args.scale, seed)
    result = {"machine": machine_facts(), "run": run}  # the date: when the run ended
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    write_section(args.out, "fuzz-tally", render(result))
    print(render(result))
    if not result["run"]["passed"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
