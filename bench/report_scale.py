"""``mlsub report`` at scale (``make bench-report``): a synthetic store of 100,000
decisions (tests/report/synthetic.py), the report command end to end, and the page in
headless Chromium (load, draw, one filter through the page's control). Written to the
``report`` section of docs/benchmarks.md and raw to bench/out/report.json."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.report.chromium import body_data, dump_dom, ensure_chromium
from tests.report.synthetic import synthetic_store

from .run import machine_facts
from .sections import write_section

ROOT = Path(__file__).resolve().parents[1]
MLSUB = str(Path(sys.executable).parent / "mlsub")


def measure(n: int) -> dict[str, float | int]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        t = time.monotonic()
        url = synthetic_store(work / "d.db", n)
        build_s = time.monotonic() - t
        out = work / "out"
        out.mkdir()
        env = {**os.environ, "MLSUB_DB_URL": url, "MLSUB_CLUSTER_NAME": "lab"}
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        t = time.monotonic()
        subprocess.run([MLSUB, "report", "--out", str(out)], env=env, check=True,
                       capture_output=True, timeout=600)  # fmt: skip
        report_s = time.monotonic() - t
        rss_mb = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        page = out / "report.html"
        chromium = ensure_chromium()
        t = time.monotonic()
        tested = body_data(dump_dom(chromium, page, "selftest=node:node7", budget_ms=30000))
        browser_s = time.monotonic() - t
        assert tested.get("selftest") == "done", tested
        return {
            "decisions": n,
            "store_build_s": round(build_s, 1),
            "report_s": round(report_s, 1),
            "report_peak_rss_mb": round(rss_mb),
            "page_mib": round(page.stat().st_size / 2**20, 1),
            "chromium_s": round(browser_s, 1),
            "bars_before": int(tested["bars-before"]),
            "bars_after": int(tested["bars-after"]),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    parser.add_argument("--sizes", default="10000,100000")
    args = parser.parse_args()
    facts = machine_facts()
    rows = [measure(int(n)) for n in args.sizes.split(",")]
    (ROOT / "bench" / "out").mkdir(parents=True, exist_ok=True)
    (ROOT / "bench" / "out" / "report.json").write_text(
        json.dumps({"machine": facts, "rows": rows}, indent=2)
    )
    lines = [
        "## `mlsub report` at scale",
        "",
        "Written by `make bench-report` (`python -m bench.report_scale`); raw numbers in "
        "`bench/out/report.json`.",
        f"Machine: {facts['cpu']}, {facts['cores']} cores, Python {facts['python']}. "
        f"Date: {facts['date']}. One run per size.",
        "",
        "A synthetic SQLite store (tests/report/synthetic.py: one real decision's solver "
        "inputs copied into N rows over 30 days, 8 users, 64 nodes, every state, with state "
        "histories). *Report* = `mlsub report --out DIR` end to end (start-up, three queries, "
        "every row decoded, aggregates, the page written); *Chromium* = headless Chromium "
        "loading the page, drawing it, and applying one node filter through the page's own "
        "control (`--dump-dom` of `#selftest=node:node7`). The page draws at most 2,000 "
        "timeline bars and 5,000 scatter points of the filtered decisions (the newest); "
        "the tables and the queue series cover all of them. Target (issue 20): 100,000 "
        "decisions within a minute.",
        "",
        "| decisions | store build (s) | report (s) | report peak RSS (MB) | page (MiB) "
        "| Chromium load + filter (s) | bars drawn before / after the filter | met |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        total = float(r["report_s"]) + float(r["chromium_s"])
        met = "yes" if total <= 60 else "no"
        lines.append(
            f"| {r['decisions']:,} | {r['store_build_s']} | {r['report_s']} | "
            f"{r['report_peak_rss_mb']} | {r['page_mib']} | {r['chromium_s']} | "
            f"{r['bars_before']} / {r['bars_after']} | {met} |"
        )
    write_section(args.out, "report", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
