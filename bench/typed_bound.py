"""The lower bound's GPU-type rows on workloads whose jobs name GPU types (issue 28 items 2
and 5; ``make bench-typed``).

No public trace here says which GPU types a job asked for (docs/formulation.md §17), so
the jobs of this benchmark name them by a stated, seeded rule, :func:`gpu_types_of`, on
the typed cluster of ``bench/clusters/typed.yaml`` (Alibaba's 2026 spot GPU inventory
scaled to 26 nodes and 68 GPUs: 1-GPU A10 and GPU-series-1 nodes, 8-GPU A100, H800 and
GPU-series nodes):

* a job of at least 8 GPUs names the data-centre types {A100-SXM4-80GB, H800} (32 GPUs)
  with probability ½, else any type; one of more than 32 GPUs names, instead, every type
  of the 8-GPU nodes (53 GPUs, GPU-series-1's one-GPU nodes among them), so that a policy
  that runs a job with every worker it asks for (``qssf``, ``fifo-bf``) can run it too;
* a smaller job names {A10} (15 one-GPU nodes) with probability ¼, {A100-SXM4-80GB}
  (three 8-GPU nodes) with probability 0.15, else any type.

Every type runs at the same speed (no ``gpu_speed`` table): what changes is where a job
may run, which is what the type rows of the bound (Lemma 2‴: per named set U, the jobs
naming a subset of U share the GPUs of U; and each typed job's widths, fewest slots and
resource curve on its own types) account for. Each cell replays one Pollux or Sia/Helios
workload at offered load 1 and Δ = 600 s (``mlsub replay --load``) with every policy of
the sweep at its defaults, and reports:

* the bound with the type rows and the bound of the same jobs with their types removed
  (valid for the typed jobs too, since every schedule of them is one of the untyped jobs:
  the bound as it was before the rows), and their ratio;
* every policy's average JCT ÷ the typed bound, and a failure if any is below it.

Raw results: ``bench/out/typed/all.json``; the section ``typed-bound`` of
docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from slurm_mlsched.model import ClusterSnapshot
from slurm_mlsched.placement.params import derive_seed
from slurm_mlsched.services.replay import ReplayOptions, prepare_jobs
from slurm_mlsched.services.replay.run import replay_params
from slurm_mlsched.sim import SimJob, simulate
from slurm_mlsched.sim.engine import admit

from .run import machine_facts
from .sections import write_section
from .sweep import BEST_OF, CLUSTERS, DELTA, POLICIES, TRACES, bound_avg_jct_of

OUT = Path("bench/out/typed")
CLUSTER = CLUSTERS / "typed.yaml"
#: The 8-GPU data-centre types a wide job may name (32 GPUs), and every type of the 8-GPU
#: nodes, which a job too wide for those names instead (53 GPUs).
DATACENTRE = frozenset({"A100-SXM4-80GB", "H800"})
DATACENTRE_GPUS = 32
EIGHT_GPU_TYPES = frozenset({"A100-SXM4-80GB", "H800", "GPU-series-1", "GPU-series-2"})
WIDE_GPUS = 8
WIDE_TYPED = 0.5
NARROW_RULES = ((0.25, frozenset({"A10"})), (0.40, frozenset({"A100-SXM4-80GB"})))


def workloads() -> list[tuple[str, str]]:
    """(trace under ../shared/traces, label) of every cell: Pollux 1-8, Sia/Helios 1-10."""
    pollux = [
        (f"philly-pollux/pollux-workloads/workload-{i}.csv", f"Pollux {i}") for i in range(1, 9)
    ]
    sia = [(f"helios-saturn-sia/workload-{i}.csv", f"Sia {i}") for i in range(1, 11)]
    return [*pollux, *sia]


def options(trace: str, seed: int = 0) -> ReplayOptions:
    return ReplayOptions(
        trace=TRACES / trace,
        policies=POLICIES,
        cluster=CLUSTER,
        seed=seed,
        slot_seconds=DELTA,
        load=1.0,
        preempt=True,
    )


def gpu_types_of(job: SimJob, seed: int) -> frozenset[str] | None:
    """The GPU types the benchmark's rule names for ``job`` (module docstring): one draw
    per job from ``seed`` and its id, so the same job names the same types in every run."""
    u = random.Random(derive_seed(seed, f"gpu-types:{job.job_id}")).random()
    gpus = job.request.max_workers * job.request.worker.gpu
    if gpus >= WIDE_GPUS:
        if u >= WIDE_TYPED:
            return None
        return DATACENTRE if gpus <= DATACENTRE_GPUS else EIGHT_GPU_TYPES
    for below, kinds in NARROW_RULES:
        if u < below:
            return kinds
    return None


def typed(jobs: Sequence[SimJob], seed: int) -> list[SimJob]:
    return [replace(j, request=replace(j.request, gpu_types=gpu_types_of(j, seed))) for j in jobs]


def typed_cell(
    trace: str, label: str, seed: int = 0
) -> tuple[ReplayOptions, list[SimJob], ClusterSnapshot]:
    """A cell's replay options, its admitted jobs with the GPU types they name, and its
    cluster."""
    opts = options(trace, seed)
    prepared = prepare_jobs(opts)
    jobs, unplaceable = admit(typed(prepared.admitted, seed), prepared.cluster)
    if unplaceable:
        raise RuntimeError(f"{label}: {len(unplaceable)} typed job(s) fit nowhere")
    return opts, jobs, prepared.cluster


def bounds_of(jobs: Sequence[SimJob], cluster: ClusterSnapshot) -> tuple[float, float, float]:
    """The avg-JCT bound (s) of ``jobs`` with their type rows and with their types
    removed (the bound before the rows), and the seconds both took."""
    plain = [replace(j, request=replace(j.request, gpu_types=None)) for j in jobs]
    began = time.perf_counter()
    bound = bound_avg_jct_of(jobs, cluster)
    untyped = bound_avg_jct_of(plain, cluster)
    return bound, untyped, time.perf_counter() - began


def check_not_below(label: str, policy: str, avg_s: float, bound_s: float) -> None:
    """Fail loudly when a policy's avg JCT is below the typed bound."""
    if avg_s < bound_s * (1 - 1e-9):
        raise AssertionError(
            f"{label}: {policy}'s avg JCT {avg_s:.1f} s is below the typed bound {bound_s:.1f} s"
        )


def rebound(cell: dict[str, Any]) -> dict[str, Any]:
    """A saved cell with both bounds recomputed by the code as it is now (its jobs are
    rebuilt as :func:`run_cell` built them; no policy is replayed), every policy checked
    against the new typed bound."""
    _, jobs, cluster = typed_cell(cell["trace"], cell["label"], cell["seed"])
    bound, untyped, took = bounds_of(jobs, cluster)
    for policy, row in cell["policies"].items():
        check_not_below(cell["label"], policy, row["avg_h"] * 3600, bound)
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return {
        **cell,
        "bound_h": bound / 3600,
        "untyped_bound_h": untyped / 3600,
        "bound_s": took,
        "bounded": now,
    }


def run_cell(trace: str, label: str, seed: int = 0) -> dict[str, Any]:
    """One cell (module docstring): the bounds with and without the type rows, and every
    policy's average, p50 and p99 JCT (h)."""
    opts, jobs, cluster = typed_cell(trace, label, seed)
    bound, untyped, bound_s = bounds_of(jobs, cluster)
    params = replay_params(opts, seed)
    delta = cluster.slot_seconds
    policies: dict[str, dict[str, float]] = {}
    for policy in POLICIES:
        result = simulate(jobs, cluster, policy, params)
        jct = np.array(
            [
                (o.decision.end_slot + 1) * delta - o.job.submit_s
                for o in result.outcomes
                if o.decision
            ]
        )
        if len(jct) != len(jobs):
            raise RuntimeError(f"{label}: {policy} placed {len(jct)} of {len(jobs)} jobs")
        avg = float(jct.mean())
        check_not_below(label, policy, avg, bound)
        policies[policy] = {
            "avg_h": avg / 3600,
            "p50_h": float(np.percentile(jct, 50)) / 3600,
            "p99_h": float(np.percentile(jct, 99)) / 3600,
        }
    named = sum(1 for j in jobs if j.request.gpu_types is not None)
    return {
        "label": label,
        "trace": trace,
        "seed": seed,
        "jobs": len(jobs),
        "typed_jobs": named,
        "bound_h": bound / 3600,
        "untyped_bound_h": untyped / 3600,
        "bound_s": bound_s,
        "policies": policies,
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def render(cells: Sequence[dict[str, Any]], facts: dict[str, str]) -> str:
    rows = []
    ratios: dict[str, list[float]] = {"rows": [], "yu": [], "best": [], "yu_best": []}
    for c in cells:
        pol = c["policies"]
        best = min(BEST_OF, key=lambda p: pol[p]["avg_h"])
        yu, b = pol["yu-rr"]["avg_h"], c["bound_h"]
        ratios["rows"].append(b / c["untyped_bound_h"])
        ratios["yu"].append(yu / b)
        ratios["best"].append(pol[best]["avg_h"] / b)
        ratios["yu_best"].append(yu / pol[best]["avg_h"])
        others = " · ".join(f"{p} {pol[p]['avg_h'] / b:.2f}" for p in POLICIES if p != "yu-rr")
        rows.append(
            f"| {c['label']} | {c['typed_jobs']} of {c['jobs']} | {c['untyped_bound_h']:.3f} | "
            f"{b:.3f} | {b / c['untyped_bound_h']:.3f} | {yu:.3f} | {yu / b:.3f} | {best} | "
            f"{pol[best]['avg_h'] / b:.3f} | {yu / pol[best]['avg_h']:.3f} | {others} |"
        )

    def spread(xs: list[float]) -> str:
        return f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f}"

    last = max(c["date"] for c in cells)
    # "rebound": the field's name in files written before 2026-12-06
    rebounds = [
        c.get("bounded") or c["rebound"] for c in cells if {"bounded", "rebound"} & c.keys()
    ]
    if rebounds:  # the bounds recomputed since (``--rebound``), the replays kept
        last += f" (bounds recomputed {max(rebounds)} by `--rebound`)"
    return "\n".join(
        [
            "## The bound's GPU-type rows on typed workloads (`make bench-typed`)",
            "",
            f"Written by `make bench-typed` (`python -m bench.typed_bound`); raw results in "
            f"`{OUT}/all.json`. Machine: {facts['cpu']}, {facts['cores']} cores; date of the "
            f"last cell: {last}. {len(cells)} cells: the Pollux and Sia/Helios workloads at "
            "offered load 1, Δ = 600 s, seed 0, on `bench/clusters/typed.yaml` (Alibaba's "
            "2026 spot GPU inventory at 0.006 of its nodes: 26 nodes, 68 GPUs of five "
            "types), every policy at the replay's defaults. The jobs name GPU types by the "
            "rule of `bench/typed_bound.py` (no public trace here says which types a job "
            "asked for): a job of ≥ 8 GPUs names {A100-SXM4-80GB, H800} with probability "
            "½ (one of more than their 32 GPUs every type of the 8-GPU nodes), a smaller "
            "one {A10} with ¼ and {A100-SXM4-80GB} with 0.15, the rest any "
            "type; every type at the same speed. *untyped bound*: the bound of the same "
            "jobs with their types removed (the bound before the type rows, docs/"
            "formulation.md §15.3 Lemma 2‴); *typed bound*: with them. Every policy's "
            "avg JCT ÷ the typed bound is ≥ 1 in every cell (the run fails otherwise).",
            "",
            "| cells | typed ÷ untyped bound | yu-rr ÷ typed bound | best baseline ÷ typed "
            "bound | yu-rr ÷ best |",
            "|---|---|---|---|---|",
            f"| all ({len(cells)}), min / median / max | {spread(ratios['rows'])} | "
            f"{spread(ratios['yu'])} | {spread(ratios['best'])} | {spread(ratios['yu_best'])} |",
            "",
            "| workload | jobs naming types | untyped bound (h) | typed bound (h) | typed ÷ "
            "untyped | yu-rr (h) | ÷ typed bound | best baseline | its ÷ typed bound | "
            "yu-rr ÷ best | the others ÷ typed bound |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
        ]
    )


def _load() -> dict[str, dict[str, Any]]:
    path = OUT / "all.json"
    if not path.exists():
        return {}
    data: dict[str, dict[str, Any]] = json.loads(path.read_text())
    return data


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", default="", help="cells whose label contains this")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks.md"))
    parser.add_argument("--render-only", action="store_true")
    parser.add_argument(
        "--rebound",
        action="store_true",
        help="Recompute both bounds of every saved cell and check every policy against the "
        "new one (no policy is replayed); with --render-only, then rewrite the section.",
    )
    args = parser.parse_args(argv)
    if not CLUSTER.exists() or not TRACES.exists():
        raise SystemExit(f"needs {TRACES} (../shared/traces) and {CLUSTER}")
    done = _load()
    if args.rebound:
        done = {label: rebound(cell) for label, cell in done.items() if args.only in label}
        (OUT / "all.json").write_text(json.dumps(done, indent=1, sort_keys=True))
    if not args.render_only:
        todo = [(t, lab) for t, lab in workloads() if args.only in lab]
        OUT.mkdir(parents=True, exist_ok=True)
        with ProcessPoolExecutor(max_workers=max(1, args.workers)) as pool:
            futures = {pool.submit(run_cell, t, lab): lab for t, lab in todo}
            for future in as_completed(futures):
                cell = future.result()
                done[cell["label"]] = cell
                (OUT / "all.json").write_text(json.dumps(done, indent=1, sort_keys=True))
                yu = cell["policies"]["yu-rr"]["avg_h"]
                print(
                    f"{cell['label']}: bound {cell['untyped_bound_h']:.3f} → "
                    f"{cell['bound_h']:.3f} h typed, yu-rr {yu:.3f} h",
                    flush=True,
                )
    order = [lab for _, lab in workloads()]
    cells = [done[lab] for lab in order if lab in done]
    if cells:
        write_section(args.out, "typed-bound", render(cells, machine_facts()))


if __name__ == "__main__":
    main()
