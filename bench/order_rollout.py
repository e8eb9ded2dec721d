"""Can ``yu-rr``'s queue order be chosen online by rollout? A probe (issue 28, the sweep's
worst cell; ``make bench-order-rollout``).

The oracle order (:mod:`bench.oracle_order`, docs/formulation.md §15.10) showed that on the
sweep's worst cells an order exists under which ``yu-rr``'s own rules end 5–10 % lower, and
that the outcome is chaotic in the order. What it fits is the cell's future. The classic
online way to improve on a base order is **rollout** (Bertsekas, Tsitsiklis and Wu, 1997):
at each decision, try each candidate for the next position, complete the schedule with the
base rule, and keep the candidate whose completion costs least. Here, at every re-plan:

* the base order is the queue key's (§14.2), q_1, q_2, …;
* for position p = 1 … ``positions``: each of the next ``candidates`` jobs in it is tried
  at position p (the positions before p fixed, the rest in key order), and the first
  ``depth`` jobs of that order are list-scheduled at their requested widths on the room
  the running jobs leave (:func:`.list_schedule.list_schedule`, the estimate the
  look-ahead and the pause rule use), with, if ``forecast_s`` > 0, the arrivals the
  look-ahead's forecast expects over that many seconds after them
  (:func:`.lookahead.forecast`);
* the candidate of the least total Σ (end − arrival + 1) takes position p (ties: key
  order).

The re-plan then decides the jobs in that order; every other rule (the pause rule's own
order among them) stays as it is. It is a probe, not a policy: :func:`rolled_out` swaps
``late_binding.ordered`` (and, for the forecast, wraps the per-job queue form to see its
recent arrivals) for the duration of a replay and restores both, also on an error. It
changes the overtaking bound of §14.2 (a job can now be passed by one of the next
``candidates`` jobs as well), which a policy would have to state again.

``python -m bench.order_rollout`` replays ``yu-rr`` on every sweep cell but the Philly ones
(a Philly cell of 2,000 jobs replays in about a minute) once at the defaults and once per
configuration of :data:`CONFIGS`, and writes the section ``order-rollout`` of
docs/benchmarks.md (raw rows in ``bench/out/order-rollout.jsonl``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from slurm_mlsched.model import ClusterSnapshot, JobRequest
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.placement.program.residual import residual_from
from slurm_mlsched.placement.yu_rr import joint, late_binding
from slurm_mlsched.placement.yu_rr.arrival import Arrival
from slurm_mlsched.placement.yu_rr.late_binding import PendingJob
from slurm_mlsched.placement.yu_rr.list_schedule import arrival_of, list_schedule
from slurm_mlsched.placement.yu_rr.lookahead import forecast
from slurm_mlsched.services.replay import prepare_jobs
from slurm_mlsched.services.replay.run import replay_params
from slurm_mlsched.sim import SimJob, simulate
from slurm_mlsched.sim.bounds import scalable_bound

from .run import machine_facts
from .sections import write_section
from .sweep import avg_jct_s_of, cells


@dataclass(frozen=True)
class RolloutOrder:
    """One configuration of the rollout (module docstring)."""

    positions: int = 1
    candidates: int = 4
    depth: int = 24
    forecast_s: float = 0.0

    @property
    def label(self) -> str:
        fc = f", forecast {self.forecast_s / 3600:g} h" if self.forecast_s > 0 else ""
        positions = "the head" if self.positions == 1 else f"the first {self.positions}"
        return f"{positions}, {self.candidates} candidates, depth {self.depth}{fc}"


#: The configurations ``make bench-order-rollout`` measures: the cheapest (the head
#: only, four candidates), more positions, more candidates over a deeper list, and the
#: cheapest with the look-ahead's forecast of arrivals (its default horizon, 6 h).
CONFIGS = (
    RolloutOrder(1, 4, 24),
    RolloutOrder(3, 4, 24),
    RolloutOrder(1, 8, 48),
    RolloutOrder(1, 4, 24, 6 * 3600.0),
)


def rolled_order(
    queue: Sequence[PendingJob],
    snapshot: ClusterSnapshot,
    params: PlacementParams,
    cfg: RolloutOrder,
    recent: Sequence[JobRequest] = (),
) -> list[PendingJob]:
    """``queue`` (in key order) with its first ``cfg.positions`` positions chosen by
    rollout (module docstring)."""
    if len(queue) < 2 or cfg.candidates < 2:
        return list(queue)
    now, delta = snapshot.now_slot, snapshot.slot_seconds
    res = residual_from(snapshot, now)
    expected = forecast(recent, now, int(cfg.forecast_s / delta)) if cfg.forecast_s > 0 else ()
    after = [arrival_of(j, delta, res, params, max(j.arrival_slot, now)) for j in expected]
    arrival: dict[str, Arrival] = {}  # built for the jobs a rollout lists, once each

    def arrival_for(p: PendingJob) -> Arrival:
        j = p.request
        if j.job_id not in arrival:
            arrival[j.job_id] = arrival_of(j, delta, res, params, max(j.arrival_slot, now))
        return arrival[j.job_id]

    fixed: list[PendingJob] = []
    rest = list(queue)
    for _ in range(cfg.positions):
        if len(rest) < 2:
            break
        best: tuple[int, int] | None = None
        for at in range(min(cfg.candidates, len(rest))):
            order = [*fixed, rest[at], *rest[:at], *rest[at + 1 :]][: cfg.depth]
            listed, _ = list_schedule([*(arrival_for(p) for p in order), *after], res)
            total = sum(x.term for x in listed)
            if best is None or total < best[0]:
                best = (total, at)
        assert best is not None
        fixed.append(rest.pop(best[1]))
    return [*fixed, *rest]


#: The module attributes :func:`rolled_out` swaps: the re-plan's order, and the per-job
#: queue form's call of the re-plan (whose ``recent`` arrivals the forecast reads).
SWAPPED = ((late_binding, "ordered"), (joint, "replan_queue"))


@contextmanager
def rolled_out(cfg: RolloutOrder) -> Iterator[None]:
    """Within the block the re-plan's queue order is :func:`rolled_order`'s; both swapped
    functions (:data:`SWAPPED`) are back afterwards, also on an error."""
    original = {name: getattr(module, name) for module, name in SWAPPED}
    seen: list[Sequence[JobRequest]] = [()]

    def ordered(
        pending: Sequence[PendingJob], snapshot: ClusterSnapshot, params: PlacementParams
    ) -> list[PendingJob]:
        base = original["ordered"](pending, snapshot, params)
        return rolled_order(base, snapshot, params, cfg, seen[0])

    def replan_queue(*args: Any, **kwargs: Any) -> Any:
        seen[0] = kwargs.get("recent", args[4] if len(args) > 4 else ())
        return original["replan_queue"](*args, **kwargs)

    swapped = {"ordered": ordered, "replan_queue": replan_queue}
    for module, name in SWAPPED:
        setattr(module, name, swapped[name])
    try:
        yield
    finally:
        for module, name in SWAPPED:
            setattr(module, name, original[name])


def replay_total(
    jobs: Sequence[SimJob],
    cluster: ClusterSnapshot,
    params: PlacementParams,
    cfg: RolloutOrder | None,
) -> tuple[int, int, float]:
    """Σ_i T_i of ``yu-rr`` (with the rollout order when ``cfg``), the jobs placed, and
    the replay's seconds."""
    began = time.perf_counter()
    if cfg is None:
        result = simulate(jobs, cluster, "yu-rr", params)
    else:
        with rolled_out(cfg):
            result = simulate(jobs, cluster, "yu-rr", params)
    placed = [o.decision.completion_slots for o in result.outcomes if o.decision is not None]
    return sum(placed), len(placed), time.perf_counter() - began


def run_cell(key: str, configs: Sequence[RolloutOrder]) -> dict[str, Any]:
    """One sweep cell (its jobs, cluster, Δ and restart cost as the sweep replays them):
    the defaults and every configuration, in slots and ÷ the bound's avg JCT."""
    cell = {c.key: c for c in cells()}[key]
    opts = replace(cell.options(), policies=("yu-rr",))
    prepared = prepare_jobs(opts)
    jobs, cluster = prepared.admitted, prepared.cluster
    params = replay_params(opts, opts.seed)
    bound, _ = scalable_bound([j.request for j in jobs], cluster.at_slot(0))
    bound_s = avg_jct_s_of(bound, jobs, cluster)
    base, placed, wall = replay_total(jobs, cluster, params, None)
    runs = []
    for cfg in configs:
        total, n, secs = replay_total(jobs, cluster, params, cfg)
        runs.append(
            {
                "config": asdict(cfg),
                "slots": total,
                "placed": n,
                "ratio": avg_jct_s_of(total, jobs, cluster) / bound_s,
                "wall_s": round(secs, 2),
            }
        )
    return {
        "cell": key,
        "jobs": len(jobs),
        "bound_slots": bound,
        "base_slots": base,
        "base_placed": placed,
        "base_ratio": avg_jct_s_of(base, jobs, cluster) / bound_s,
        "base_wall_s": round(wall, 2),
        "runs": runs,
        "measured": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def default_cells() -> list[str]:
    """Every sweep cell but Philly's (module docstring)."""
    return [c.key for c in cells() if not c.key.startswith("Philly")]


def summary(rows: Sequence[Mapping[str, Any]], cfg: Mapping[str, Any]) -> dict[str, Any]:
    """One configuration over the rows: the mean of its Σ T_i ÷ the defaults', the cells
    better and worse by more than 0.1 %, the worst cell ÷ bound on each side and how many
    cells are above 1.15 × the bound, and its replay time ÷ the defaults'."""
    pairs = [(r, next(x for x in r["runs"] if x["config"] == dict(cfg))) for r in rows]
    ratio = [x["slots"] / r["base_slots"] for r, x in pairs]
    return {
        "config": dict(cfg),
        "cells": len(pairs),
        "mean": statistics.mean(ratio),
        "better": sum(v < 0.999 for v in ratio),
        "worse": sum(v > 1.001 for v in ratio),
        "worst_base": max(r["base_ratio"] for r, _ in pairs),
        "worst": max(x["ratio"] for _, x in pairs),
        "above_base": sum(r["base_ratio"] > 1.15 for r, _ in pairs),
        "above": sum(x["ratio"] > 1.15 for _, x in pairs),
        "placed_same": all(x["placed"] == r["base_placed"] for r, x in pairs),
        "time": sum(x["wall_s"] for _, x in pairs) / sum(r["base_wall_s"] for r, _ in pairs),
        "worst_cells": sorted(
            ((r["cell"], r["base_ratio"], x["ratio"]) for r, x in pairs), key=lambda t: -t[2]
        )[:3],
    }


def render(rows: Sequence[Mapping[str, Any]], facts: Mapping[str, str]) -> str:
    """The section ``order-rollout`` of docs/benchmarks.md."""
    configs = [r["config"] for r in rows[0]["runs"]] if rows else []
    out = [
        "## Choosing the queue order online by rollout (`make bench-order-rollout`; a probe, "
        "not kept)",
        "",
        "Written by `python -m bench.order_rollout` (raw rows in "
        f"`bench/out/order-rollout.jsonl`). Machine: {facts['cpu']}, {facts['cores']} cores, "
        f"Python {facts['python']}; last cell {max((r['measured'] for r in rows), default='-')}. "
        "`yu-rr` at the replay's defaults on every sweep cell but Philly's, and again with the "
        "re-plan's queue order chosen by rollout: at each re-plan, each of the next "
        "*candidates* jobs of the key order is tried at the next of the first *positions*, "
        "the first *depth* jobs of that order are list-scheduled at their requested widths "
        "(with the forecast arrivals where named), and the least total wins "
        "(docs/formulation.md §15.10). Ratio: Σ T_i with it ÷ at the defaults, same jobs; "
        "better / worse: cells moved by more than 0.1 %.",
        "",
        "| rollout | cells | mean ratio | better / worse | worst cell ÷ bound, defaults → "
        "with it | cells above 1.15 × the bound | replay time ratio |",
        "|---|---|---|---|---|---|---|",
    ]
    for cfg in configs:
        s = summary(rows, cfg)
        label = RolloutOrder(**cfg).label
        out.append(
            f"| {label} | {s['cells']} | {s['mean']:.4f} | {s['better']} / {s['worse']} | "
            f"{s['worst_base']:.3f} → {s['worst']:.3f} | {s['above_base']} → {s['above']} | "
            f"{s['time']:.2f} |"
        )
    return "\n".join(out)


def merged(raw: Path, rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with the rows of ``raw`` (an earlier run's) for the cells not re-run."""
    by_cell: dict[str, dict[str, Any]] = {}
    if raw.exists():
        for line in raw.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                by_cell[row["cell"]] = row
    by_cell.update({r["cell"]: r for r in rows})
    return list(by_cell.values())


def main(argv: Sequence[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cell", action="append", help="a sweep cell's key (repeatable)")
    ap.add_argument(
        "--out", type=Path, default=None, help="docs/benchmarks.md to write the section into"
    )
    ap.add_argument("--raw", type=Path, default=Path("bench/out/order-rollout.jsonl"))
    ap.add_argument(
        "--render-only", action="store_true", help="write the section from --raw, no replay"
    )
    args = ap.parse_args(argv)
    rows: list[dict[str, Any]] = []
    if not args.render_only:
        for key in args.cell or default_cells():
            row = run_cell(key, CONFIGS)
            print(
                f"{key}: {row['base_slots']} → "
                + ", ".join(str(x["slots"]) for x in row["runs"])
                + " slots",
                flush=True,
            )
            rows.append(row)
    rows = merged(args.raw, rows)
    args.raw.parent.mkdir(parents=True, exist_ok=True)
    args.raw.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    if args.out is not None:
        write_section(args.out, "order-rollout", render(rows, machine_facts()))


if __name__ == "__main__":
    main()
