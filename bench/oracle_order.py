"""How far a better queue order alone takes ``yu-rr`` on one cell: an offline probe
(issue 28, "the sweep's worst cell ÷ bound ≤ 1.15, stated with its cause";
``make bench-oracle``).

The sweep's worst cells sit 1.2–1.25 × the lower bound while the bound's own relaxation
has a schedule within 1.06 × of it there (docs/formulation.md §15.10). Two readings were
open: the policy family cannot do better on real machines (integral shapes, a restart per
change), or it can and its online rules do not find how. The clairvoyant reference
``srtf`` did worse (§14.5), which favours the first. This probe tests the second directly:
it keeps every rule of ``yu-rr`` (placement, late binding, look-ahead, pauses, resize) and
searches offline, with the whole trace known, for a better **queue order**: job j's key
k_j (docs/formulation.md §14.2; every order ``yu-rr`` reads — the re-plan's, the pause
rule's, the look-ahead's) becomes k_j · e^{z_j}, and a seeded local search over z
replays the cell under each candidate and keeps a change only when Σ_i T_i falls
(:func:`search`: at each step 1, 2 or 4 jobs drawn at random, each z moved by a normal
step of σ = :data:`SIGMA`).

What it finds is an upper bound on what a better order can give on that cell — the
schedule is one ``yu-rr``'s own machinery runs, so it is feasible under the simulator's
rules and above the lower bound — and a lower bound on the cell's optimum's distance from
nothing: it says the distance of ``yu-rr`` from the bound is at least partly the order's,
not only the bound's or the machines'. It is not a policy: the multipliers are fitted to
the cell's future. ``by width`` says which jobs the better order serves sooner.

``python -m bench.oracle_order --cell KEY … --evals N`` (defaults: the sweep's worst
cells, :data:`DEFAULT_CELLS`) writes the section ``oracle-order`` of docs/benchmarks.md,
raw results in ``bench/out/oracle-order.json`` (the rows of cells not re-run are kept).
:func:`scaled_keys` replaces the key function in the modules that read it for the
duration of a replay (the probe's one intrusion; the core is not changed).
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from slurm_mlsched.model import ClusterSnapshot, JobRequest, Machine
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.yu_rr import late_binding, lookahead, preemption, queue_order
from slurm_mlsched.services.replay import prepare_jobs
from slurm_mlsched.services.replay.run import replay_params
from slurm_mlsched.sim import SimJob, simulate
from slurm_mlsched.sim.bounds import scalable_bound

from .run import machine_facts
from .sections import write_section
from .sweep import avg_jct_s_of, cells

#: The sweep's cells above 1.15 × the bound but Philly's (docs/benchmarks.md, "Robustness
#: sweep", 2026-12-06; a Philly cell of 2,000 jobs replays in about a minute, too long for
#: hundreds of replays), worst first, and Pollux 8 on 6 × 8 (1.149).
DEFAULT_CELLS = (
    "Pollux 2|6x8|load 1|seed 0",
    "Pollux 7|6x8|load 1|seed 0",
    "Pollux 8|16x4|load 1.5|seed 0",
    "Pollux 5|16x4|load 1.5|seed 0",
    "Pollux 2|16x4|load 1.5|seed 0",
    "Sia 9|mixed|load 1|seed 0",
    "Pollux 6|6x8|load 1|seed 0",
    "Pollux 8|6x8|load 1|seed 0",
)
#: The standard deviation of one step of a job's log-multiplier z_j.
SIGMA = 1.5
#: How many jobs one step moves, drawn uniformly.
STEP_SIZES = (1, 2, 4)
#: The key noise the search's gain is read against: every job's key times e^{N(0, σ²)}
#: with this σ (5 %), in this many seeded replays (:func:`noise`).
NOISE_SIGMA = 0.05
NOISE_DRAWS = 60
#: The modules whose queue orders read ``queue_order.keyer`` (each imported it by name).
KEY_READERS = (queue_order, late_binding, preemption, lookahead)

Key = tuple[float, int, str]


@contextmanager
def scaled_keys(scale: Mapping[str, float]) -> Iterator[None]:
    """Within the block, every queue order ``yu-rr`` reads keys job j by k_j · scale[j]
    (1 for a job not named; a resumed or forecast request keeps or lacks its id as the
    rules give it). The original key function is back afterwards, also on an error."""
    original = queue_order.keyer

    def keyer(
        machines: Sequence[Machine], slot_seconds: float, aging: float, unit: str
    ) -> Callable[[JobRequest], Key]:
        key = original(machines, slot_seconds, aging, unit)

        def scaled(job: JobRequest) -> Key:
            k, arrival, job_id = key(job)
            return (k * scale.get(job.job_id, 1.0), arrival, job_id)

        return scaled

    for module in KEY_READERS:
        module.keyer = keyer  # type: ignore[attr-defined]
    try:
        yield
    finally:
        for module in KEY_READERS:
            module.keyer = original  # type: ignore[attr-defined]


def replay_total(
    jobs: Sequence[SimJob],
    cluster: ClusterSnapshot,
    params: PlacementParams,
    scale: Mapping[str, float],
) -> tuple[int, dict[str, int], dict[str, int]]:
    """Σ_i T_i of ``yu-rr`` on the jobs with the keys scaled, each placed job's T_i
    (``Decision.completion_slots``) and its restarts (pauses and resizes)."""
    with scaled_keys(scale):
        result = simulate(jobs, cluster, "yu-rr", params)
    per_job: dict[str, int] = {}
    restarts: dict[str, int] = {}
    for o in result.outcomes:
        if o.decision is not None:
            per_job[o.job.request.job_id] = o.decision.completion_slots
            restarts[o.job.request.job_id] = int(dict(o.decision.stats).get("restarts", 0))
    return sum(per_job.values()), per_job, restarts


@dataclass(frozen=True)
class Search:
    """One search: Σ T_i at the start (the defaults' order) and at the best order found,
    the best order's multipliers (jobs moved from 1 only), the improving steps
    ((evaluation, Σ T_i)), and each job's T_i and restarts under both orders."""

    start: int
    best: int
    scale: dict[str, float]
    steps: list[tuple[int, int]]
    before: dict[str, int]
    after: dict[str, int]
    restarts_before: dict[str, int]
    restarts_after: dict[str, int]


def search(
    jobs: Sequence[SimJob],
    cluster: ClusterSnapshot,
    params: PlacementParams,
    evals: int,
    seed: int = 0,
    sigma: float = SIGMA,
) -> Search:
    """The local search of the module docstring: ``evals`` replays after the first, a
    step kept only when Σ_i T_i falls strictly with the same jobs placed (no total falls by
    a job left out). Deterministic for a seed (the replay is)."""
    rng = random.Random(seed)
    ids = sorted(j.request.job_id for j in jobs)
    log_scale: dict[str, float] = {}
    start, before, r_before = replay_total(jobs, cluster, params, {})
    best, after, r_after = start, before, r_before
    steps: list[tuple[int, int]] = []
    for e in range(1, evals + 1):
        picks = rng.sample(ids, min(len(ids), rng.choice(STEP_SIZES)))
        trial = dict(log_scale)
        for job_id in picks:
            trial[job_id] = trial.get(job_id, 0.0) + rng.gauss(0.0, sigma)
        total, per_job, restarts = replay_total(
            jobs, cluster, params, {k: math.exp(z) for k, z in trial.items()}
        )
        if total < best and per_job.keys() == before.keys():  # every job placed, as before
            best, after, r_after, log_scale = total, per_job, restarts, trial
            steps.append((e, total))
    return Search(
        start,
        best,
        {k: math.exp(z) for k, z in sorted(log_scale.items()) if z != 0.0},
        steps,
        before,
        after,
        r_before,
        r_after,
    )


def noise(
    jobs: Sequence[SimJob],
    cluster: ClusterSnapshot,
    params: PlacementParams,
    draws: int = NOISE_DRAWS,
    sigma: float = NOISE_SIGMA,
    seed: int = 0,
) -> list[int]:
    """Σ_i T_i under ``draws`` small random perturbations of the whole order (every job's
    key times e^{N(0, σ²)}, seeded): how much the cell's outcome moves when the order
    moves a little, the spread the search's gain is read against."""
    return [
        replay_total(jobs, cluster, params, scale)[0]
        for scale in noise_scales(jobs, draws, sigma, seed)
    ]


def noise_scales(
    jobs: Sequence[SimJob], draws: int, sigma: float = NOISE_SIGMA, seed: int = 0
) -> Iterator[dict[str, float]]:
    """The key noise's multipliers, ``draws`` times: every job's key times e^{N(0, σ²)},
    drawn in job-id order from one generator seeded by ``seed`` (what :func:`noise` and
    ``bench.clause_noise`` replay under)."""
    rng = random.Random(seed)
    ids = sorted(j.request.job_id for j in jobs)
    for _ in range(draws):
        yield {job_id: math.exp(rng.gauss(0.0, sigma)) for job_id in ids}


def by_width(found: Search, jobs: Sequence[SimJob]) -> list[dict[str, int]]:
    """Per requested width: the jobs, Σ T_i and restarts under both orders."""
    rows: dict[int, dict[str, int]] = {}
    for j in jobs:
        r = j.request
        row = rows.setdefault(
            r.max_workers,
            {"width": r.max_workers, "jobs": 0, "before": 0, "after": 0,
             "restarts_before": 0, "restarts_after": 0},
        )  # fmt: skip
        row["jobs"] += 1
        row["before"] += found.before.get(r.job_id, 0)
        row["after"] += found.after.get(r.job_id, 0)
        row["restarts_before"] += found.restarts_before.get(r.job_id, 0)
        row["restarts_after"] += found.restarts_after.get(r.job_id, 0)
    return [rows[w] for w in sorted(rows)]


def run_cell(key: str, evals: int, seed: int) -> dict[str, Any]:
    """The search on one sweep cell (its jobs, cluster, Δ and restart cost exactly as the
    sweep replays them), with its bound, in slots and as the sweep's avg-JCT ratios."""
    cell = {c.key: c for c in cells()}[key]
    opts = replace(cell.options(), policies=("yu-rr",))
    prepared = prepare_jobs(opts)
    jobs, cluster = prepared.admitted, prepared.cluster
    params = replay_params(opts, opts.seed)
    began = time.perf_counter()
    bound, _ = scalable_bound([j.request for j in jobs], cluster.at_slot(0))
    found = search(jobs, cluster, params, evals, seed)
    spread = sorted(noise(jobs, cluster, params, seed=seed))
    bound_s = avg_jct_s_of(bound, jobs, cluster)
    return {
        "cell": key,
        "jobs": len(jobs),
        "evals": evals,
        "seed": seed,
        "sigma": SIGMA,
        "bound_slots": bound,
        "bound_avg_jct_s": bound_s,
        "start_slots": found.start,
        "best_slots": found.best,
        "start_ratio": avg_jct_s_of(found.start, jobs, cluster) / bound_s,
        "best_ratio": avg_jct_s_of(found.best, jobs, cluster) / bound_s,
        "noise_slots": {
            "min": spread[0],
            "median": float(statistics.median(spread)),
            "max": spread[-1],
            "draws": len(spread),
            "sigma": NOISE_SIGMA,
        },
        "noise_ratio_median": avg_jct_s_of(statistics.median(spread), jobs, cluster) / bound_s,
        "steps": found.steps,
        "moved": len(found.scale),
        "by_width": by_width(found, jobs),
        "scale": found.scale,
        "wall_s": round(time.perf_counter() - began, 1),
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def _label(key: str) -> str:
    """A cell's key as a table cell (its fields apart by ``·``: a ``|`` would split it)."""
    return key.replace("|", " · ")


def render(rows: Sequence[dict[str, Any]], facts: Mapping[str, str]) -> str:
    """The section ``oracle-order`` of docs/benchmarks.md."""
    out = [
        "## An oracle order: how far a better queue order alone takes `yu-rr` "
        "(`make bench-oracle`)",
        "",
        "Written by `python -m bench.oracle_order` (raw results in "
        f"`bench/out/oracle-order.json`). Machine: {facts['cpu']}, {facts['cores']} cores, "
        f"Python {facts['python']}; last cell {max(r['measured'] for r in rows)}. Every rule of "
        "`yu-rr` at the replay's defaults; job j's queue key k_j becomes k_j · e^{z_j}, "
        "and a seeded local search over z (each step moves 1, 2 or 4 random jobs by "
        f"N(0, {SIGMA}²), kept only when Σ T_i falls) replays the cell once per step. "
        "The multipliers are fitted to the cell's future: this is a probe of what a "
        "better order could give there, not a policy (docs/formulation.md §15.10). "
        f"*Key noise*: {NOISE_DRAWS} replays with every job's key times e^{{N(0, "
        f"{NOISE_SIGMA}²)}} (seeded): how far the outcome moves when the order moves a "
        "little, the spread the search's gain is read against. "
        "Ratios are the sweep's: avg JCT ÷ the bound's avg JCT.",
        "",
        "| cell | jobs | bound (h) | `yu-rr` ÷ bound | key noise: median ÷ bound | "
        "oracle order ÷ bound | Σ T_i (slots): defaults · key noise min / median / max · "
        "oracle | steps kept / replays | jobs moved |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        n = r["noise_slots"]
        out.append(
            f"| {_label(r['cell'])} | {r['jobs']} | {r['bound_avg_jct_s'] / 3600:.2f} | "
            f"{r['start_ratio']:.3f} | {r['noise_ratio_median']:.3f} | {r['best_ratio']:.3f} | "
            f"{r['start_slots']} · {n['min']} / {n['median']:g} / {n['max']} · "
            f"{r['best_slots']} | {len(r['steps'])} / {r['evals']} | {r['moved']} |"
        )
    for r in rows:
        out += [
            "",
            f"*{_label(r['cell'])}, by requested width* (Σ T_i in slots and restarts, defaults → "
            "oracle order):",
            "",
            "| width | jobs | Σ T_i | restarts |",
            "|---|---|---|---|",
        ]
        out += [
            f"| {w['width']} | {w['jobs']} | {w['before']} → {w['after']} | "
            f"{w['restarts_before']} → {w['restarts_after']} |"
            for w in r["by_width"]
        ]
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", action="append", help="a sweep cell's key (repeatable)")
    ap.add_argument("--evals", type=int, default=400, help="replays per cell after the first")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--out", type=Path, default=None, help="docs/benchmarks.md to write the section into"
    )
    ap.add_argument("--raw", type=Path, default=Path("bench/out/oracle-order.json"))
    ap.add_argument(
        "--render-only", action="store_true", help="write the section from --raw, no replay"
    )
    args = ap.parse_args(argv)
    if args.render_only:
        saved = json.loads(args.raw.read_text(encoding="utf-8"))
        write_section(args.out, "oracle-order", render(saved, machine_facts()))
        return
    rows = []
    for key in args.cell or DEFAULT_CELLS:
        row = run_cell(key, args.evals, args.seed)
        print(
            f"{key}: {row['start_slots']} → {row['best_slots']} slots, ÷ bound "
            f"{row['start_ratio']:.3f} → {row['best_ratio']:.3f} ({row['wall_s']} s)",
            flush=True,
        )
        rows.append(row)
    rows = merged(args.raw, rows)
    args.raw.parent.mkdir(parents=True, exist_ok=True)
    args.raw.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    if args.out is not None:
        write_section(args.out, "oracle-order", render(rows, machine_facts()))


def merged(raw: Path, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with the rows of ``raw`` (an earlier run's) for the cells not re-run, the
    cells of :data:`DEFAULT_CELLS` first in its order, then the others as they came."""
    by_cell = {}
    if raw.exists():
        by_cell = {r["cell"]: r for r in json.loads(raw.read_text(encoding="utf-8"))}
    by_cell.update({r["cell"]: r for r in rows})
    first = [by_cell.pop(c) for c in DEFAULT_CELLS if c in by_cell]
    return first + list(by_cell.values())


if __name__ == "__main__":
    main()
