"""Merging the cells of a replay on Slurm into one report (``mlsub replay --on-slurm``,
``mlsub replay --merge DIR``).

1. **Read** ``plan.json`` and every ``cells/K.json``. A missing, unreadable or foreign
   result (another run's id, another cell) fails the merge with
   :class:`~slurm_mlsched.errors.ReplayCellsFailed` naming each such cell, its Slurm state
   when known and the end of its log; nothing is written then: never a partial report.
2. **Check** the cells agree: every cell of a seed saw the same input, and for each
   (policy, seed) the slices' ranges tile [0, n) with one row per job.
3. **Per (policy, seed)**: the slices' rows, concatenated in slice order, give the metrics
   of MODEL.md §8 (:func:`metrics_from_cells`), computed by the function a local replay
   uses (``sim.metrics.metrics_of_rows``, per-job columns): with one
   slice, the numbers of a local replay, except the measured times (``wall_s``, the
   decision latencies). ``wall_s`` is the sum of the slices' simulation times; the
   decision latencies are pooled. The LP bound is the slice's bound (one slice) or the sum
   of the slices' bounds, each over its slice alone (given only when every slice has one).
4. **Per policy**: the mean over seeds of each summary metric (:func:`mean_over_seeds`;
   ``None`` unless every seed has a value); the counts (placed, rejected) are summed;
   the JCT CDF and the time series plotted are the first seed's.
5. **The report**: counts, cluster and notes from the first seed's input, read again here
   (or handed over by the caller) and checked against the cells; the files of
   :mod:`.report`; ``metrics.json`` gets an ``on_slurm`` section (the job, the
   cells, per-seed metrics and counts).
"""

from __future__ import annotations

import shlex
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from ...errors import InputError, ReplayCellsFailed
from ...sim import SUMMARY_KEYS, LowerBound, PolicyMetrics, draw_utilities
from ...sim.metrics import JobRows, combine_algorithm, metrics_of_rows
from ...slurm.jobs import phase_of
from .cells import (
    CELL_KIND,
    CELL_SCHEMA,
    PLACED_COLUMNS,
    SCRIPT_FILE,
    SUBMISSION_FILE,
    ArrayPlan,
    BoundEntry,
    Cell,
    CellDocument,
    cell_path,
    log_path,
    read_json,
    read_plan,
    write_json_atomic,
)
from .run import prepare_jobs, replay_params
from .types import ReplayJobs, ReplayReport

#: Cells described in full in a failure message; the others are listed by index.
SHOWN_FAILURES = 5
#: Lines of a failed cell's log quoted in the message.
LOG_TAIL_LINES = 8

#: What the merge reads from a cell's result, besides the columns.
REQUIRED_KEYS = (
    "input", "placed", "rejected", "latencies_ms", "range", "wall_s",
    "peak_active_reservations", "bound",
)  # fmt: skip

Doc = CellDocument
"""A cell's result as read back from ``cells/K.json`` (checked by :func:`check_cell`)."""
StatesFn = Callable[[], Mapping[int, str]]


class CellRecord(TypedDict):
    """A cell in ``metrics.json`` ``on_slurm.cells``."""

    index: int
    policy: str
    seed: int
    slice: int
    range: list[int]
    wall_s: float
    where: dict[str, str]


class OnSlurm(TypedDict):
    """The ``on_slurm`` section of a merged ``metrics.json`` (a file format)."""

    job_id: str | None
    run_id: str
    seeds: list[int]
    slices: int
    cells: list[CellRecord]
    per_seed: dict[str, dict[str, dict[str, float | int | None]]]
    per_seed_counts: dict[str, dict[str, int]]
    lp_bound_per_seed: dict[str, BoundEntry]


@dataclass(frozen=True)
class CellProblem:
    """Why a cell cannot be merged."""

    cell: Cell
    problem: str


# --- reading and checking ----------------------------------------------------------------------


def read_cells(plan: ArrayPlan) -> tuple[dict[int, Doc], list[CellProblem]]:
    """Every cell's result that exists and belongs to this run, and the problems."""
    docs: dict[int, Doc] = {}
    problems: list[CellProblem] = []
    for cell in plan.cells:
        path = cell_path(plan.out_dir, cell.index)
        if not path.exists():
            problems.append(CellProblem(cell, "no result file"))
            continue
        try:
            doc = read_json(path, "a replay cell's result")
        except InputError as err:
            problems.append(CellProblem(cell, err.message))
            continue
        problem = check_cell(plan, cell, doc)
        if problem:
            problems.append(CellProblem(cell, f"{path.name}: {problem}"))
        else:
            docs[cell.index] = doc
    return docs, problems


def check_cell(plan: ArrayPlan, cell: Cell, doc: object) -> str:
    """What is wrong with a cell's result document ('' when nothing)."""
    if not isinstance(doc, dict) or doc.get("kind") != CELL_KIND:
        return "not a replay cell's result"
    if doc.get("schema") != CELL_SCHEMA:
        return f"schema {doc.get('schema')!r}, expected {CELL_SCHEMA}"
    if doc.get("run_id") != plan.run_id:
        return f"written by another run (run id {doc.get('run_id')!r}, this one {plan.run_id!r})"
    mine = (cell.index, cell.policy, cell.seed, cell.slice)
    theirs = tuple(doc.get(k) for k in ("index", "policy", "seed", "slice"))
    if theirs != mine:
        return f"holds cell {theirs!r}, expected {mine!r}"
    missing = [key for key in REQUIRED_KEYS if key not in doc]
    if missing:
        return f"incomplete: no {', '.join(missing)}"
    try:
        placed = doc["placed"]
        lengths = {len(placed[name]) for name in PLACED_COLUMNS}
        lo, hi = (int(x) for x in doc["range"])
        rows = len(placed["job_id"]) + len(doc["rejected"])
        int(doc["input"]["jobs"])
    except (KeyError, TypeError, ValueError) as exc:
        return f"incomplete ({type(exc).__name__}: {exc})"
    if len(lengths) != 1:
        return "its columns have different lengths"
    if rows != hi - lo:
        return f"{rows} job rows for the range [{lo}, {hi})"
    return ""


def consistency_problems(plan: ArrayPlan, docs: Mapping[int, Doc]) -> list[CellProblem]:
    """Cells of a seed that saw another input, and slices that do not tile [0, n)."""
    problems: list[CellProblem] = []
    for seed in plan.seeds:
        cells = [c for c in plan.cells if c.seed == seed]
        first = docs[cells[0].index]["input"]
        for c in cells[1:]:
            if docs[c.index]["input"] != first:
                problems.append(
                    CellProblem(
                        c,
                        f"saw another input than cell {cells[0].index} "
                        f"({docs[c.index]['input']} vs {first}): the trace or an option "
                        "file changed while the cells ran",
                    )
                )
        for policy in plan.policies:
            parts = sorted((c for c in cells if c.policy == policy), key=lambda c: c.slice)
            edge = 0
            for c in parts:
                lo, hi = docs[c.index]["range"]
                if lo != edge:
                    problems.append(CellProblem(c, f"range [{lo}, {hi}) does not start at {edge}"))
                edge = hi
            if edge != first["jobs"]:
                problems.append(
                    CellProblem(parts[-1], f"slices end at job {edge}, not {first['jobs']}")
                )
    return problems


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last non-empty lines of a cell's log, or why there are none."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return "(no log: the task did not start)"
    except OSError as exc:
        return f"(log unreadable: {exc.strerror or exc})"
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return "\n".join(kept[-lines:]) or "(empty log)"


def cells_failed_error(
    plan: ArrayPlan,
    problems: Sequence[CellProblem],
    states: Mapping[int, str],
    tails: Mapping[int, str],
    job_id: str | None,
) -> ReplayCellsFailed:
    """The one loud error of a merge that cannot be done (pure)."""
    out_dir = plan.out_dir
    by_cell = {p.cell.index: p for p in problems}
    job = f"Slurm array job {job_id}" if job_id else "the array job"
    lines = [
        f"{len(by_cell)} of {len(plan.cells)} replay cell(s) cannot be merged ({job}, "
        f"{out_dir}); nothing was merged:"
    ]
    for index in sorted(by_cell)[:SHOWN_FAILURES]:
        p = by_cell[index]
        state = _state_text(states.get(index))
        lines.append(f"  {p.cell.describe(plan.slices)}: {p.problem}{state}")
        lines.append(f"    {log_path(out_dir, index)} ends with:")
        lines.extend(f"      {line}" for line in tails.get(index, "").splitlines())
    rest = sorted(by_cell)[SHOWN_FAILURES:]
    if rest:
        lines.append(f"  … and {len(rest)} more: cells {', '.join(map(str, rest))}")
    merge = merge_command(out_dir)
    running = [i for i in by_cell if phase_of(states.get(i, "UNKNOWN")) in ("pending", "running")]
    if running:
        hint = (
            f"cells {', '.join(map(str, sorted(running)))} have not finished: wait for "
            f"{job} to end (squeue -j {job_id or 'JOBID'}), then run: {merge}"
        )
    else:
        array = ",".join(map(str, sorted(by_cell)))
        script = out_dir / SCRIPT_FILE
        hint = (
            f"fix the cause, rerun those cells: sbatch --array={array} "
            f"{_shell(str(script))}; then: {merge}"
        )
    return ReplayCellsFailed(
        "\n".join(lines),
        hint=hint,
        context={"out_dir": str(out_dir), "job_id": job_id or "", "cells": len(by_cell)},
    )


def _state_text(state: str | None) -> str:
    if state is None:
        return ""
    if state == "UNKNOWN":
        return "; Slurm no longer lists it (cancelled before it started?)"
    return f"; Slurm state {state}"


def merge_command(out_dir: Path) -> str:
    """The command that merges the cells in ``out_dir`` later."""
    return f"mlsub replay --merge {_shell(str(out_dir))}"


def _shell(text: str) -> str:
    return shlex.quote(text)


# --- metrics from the cells' rows (pure) --------------------------------------------------------


def metrics_from_cells(
    policy: str,
    docs: Sequence[Doc],
    slot_seconds: float,
    total_gpus: float,
    seed: int,
    bound: float | None,
    wall_s: float | None,
) -> PolicyMetrics:
    """One policy's metrics for one seed from its slices' documents, in slice order
    (module docstring, step 3; the formulas of ``sim.metrics``)."""

    placed = [d["placed"] for d in docs]
    ids = [v for p in placed for v in p["job_id"]]
    rows = JobRows(
        ids=ids,
        submit_s=np.array([v for p in placed for v in p["submit_s"]], dtype=np.float64),
        arrival=np.array([v for p in placed for v in p["arrival"]], dtype=np.int64),
        start=np.array([v for p in placed for v in p["start"]], dtype=np.int64),
        end=np.array([v for p in placed for v in p["end"]], dtype=np.int64),
        gpu_runs=[
            (int(r[0]), int(r[1]), float(r[2]))
            for p in placed
            for job in p["gpu_runs"]
            for r in job
        ],
        run_slots=int(sum(v for p in placed for v in p["run_slots"])),
        colocated_slots=int(sum(v for p in placed for v in p["colocated_slots"])),
        decision_ms=np.array([v for d in docs for v in d["latencies_ms"]], dtype=np.float64),
        rejected=tuple((str(r["job_id"]), str(r["error"])) for d in docs for r in d["rejected"]),
        peak_active_reservations=max((int(d["peak_active_reservations"]) for d in docs), default=0),
        algorithm=combine_algorithm([d.get("algorithm", {}) for d in docs]),
    )
    utilities = draw_utilities(ids, seed)
    return metrics_of_rows(policy, rows, slot_seconds, total_gpus, utilities, bound, wall_s)


def mean_over_seeds(per_seed: Mapping[int, PolicyMetrics]) -> PolicyMetrics:
    """One policy over several seeds (module docstring, step 4): the first seed's metrics
    with each summary value replaced by the mean over seeds (None unless every seed has
    one), placed and rejected summed, rejected jobs tagged with their seed."""
    seeds = list(per_seed)
    first = per_seed[seeds[0]]
    if len(seeds) == 1:
        return first
    means: dict[str, Any] = {}  # keyword arguments of replace(): 13 fields, all float | None
    for key in SUMMARY_KEYS:
        values = [getattr(per_seed[s], key) for s in seeds]
        means[key] = None if any(v is None for v in values) else statistics.fmean(values)
    return replace(
        first,
        **means,
        placed=sum(m.placed for m in per_seed.values()),
        rejected=sum(m.rejected for m in per_seed.values()),
        total_completion_slots=sum(m.total_completion_slots for m in per_seed.values()),
        rejected_jobs=tuple(
            (f"{job} (seed {s})", error) for s in seeds for job, error in per_seed[s].rejected_jobs
        ),
        peak_active_reservations=max(m.peak_active_reservations for m in per_seed.values()),
    )


def seed_bound(plan: ArrayPlan, docs: Mapping[int, Doc], seed: int) -> LowerBound:
    """The LP bound of one seed from its bound cells (one per slice)."""
    parts = sorted((c for c in plan.cells if c.seed == seed and c.bound), key=lambda c: c.slice)
    none: BoundEntry = {"value": None, "note": "no bound"}
    bounds = [docs[c.index]["bound"] or none for c in parts]
    if len(bounds) == 1:
        return LowerBound(bounds[0]["value"], str(bounds[0]["note"]))
    missing = [(c, b) for c, b in zip(parts, bounds, strict=True) if b["value"] is None]
    if missing:
        c, b = missing[0]
        why = str(b["note"]).removeprefix("LP bound not computed: ")
        return LowerBound(
            None, f"LP bound not computed for slice {c.slice + 1}/{plan.slices}: {why}"
        )
    return LowerBound(
        float(sum(b["value"] or 0.0 for b in bounds)),
        f"sum of the LP relaxations of the {plan.slices} slices, each slice alone "
        f"({'; '.join(str(b['note']) for b in bounds)})",
    )


# --- the report ---------------------------------------------------------------------------


def merge_report(
    plan: ArrayPlan, docs: Mapping[int, Doc], prepared: ReplayJobs, job_id: str | None
) -> tuple[ReplayReport, OnSlurm]:
    """The merged report and the ``on_slurm`` section of ``metrics.json`` (pure).
    ``prepared`` is the first seed's input, checked against its cells."""
    first_seed = plan.seeds[0]
    _check_input(plan, docs, prepared)
    cluster = prepared.cluster
    total_gpus = cluster.total_capacity().gpu
    bounds = {s: seed_bound(plan, docs, s) for s in plan.seeds}
    per_seed: dict[str, dict[int, PolicyMetrics]] = {}
    hook_notes: list[str] = []
    several = len(plan.seeds) > 1 or plan.slices > 1
    for policy in plan.policies:
        per_seed[policy] = {}
        for seed in plan.seeds:
            parts = sorted(
                (c for c in plan.cells if c.policy == policy and c.seed == seed),
                key=lambda c: c.slice,
            )
            cell_docs = [docs[c.index] for c in parts]
            wall = round(sum(float(d["wall_s"]) for d in cell_docs), 3)
            per_seed[policy][seed] = metrics_from_cells(
                policy, cell_docs, cluster.slot_seconds, total_gpus, seed, bounds[seed].value, wall
            )
            for c, d in zip(parts, cell_docs, strict=True):
                where = f" (seed {seed}, slice {c.slice + 1}/{plan.slices})" if several else ""
                hook_notes.extend(f"{note}{where}" for note in d.get("notes", []))
    metrics = {p: mean_over_seeds(per_seed[p]) for p in plan.policies}
    data = prepared.data
    report = ReplayReport(
        trace=data.name,
        source=data.source,
        cluster=cluster,
        cluster_label=prepared.cluster_label,
        params=replay_params(plan.options, first_seed),
        jobs=len(prepared.admitted),
        skipped=data.skipped,
        unplaceable=prepared.unplaceable,
        bound=bounds[first_seed],
        metrics=metrics,
        notes=(
            *data.notes,
            *prepared.cluster_notes,
            *dict.fromkeys(hook_notes),
            bounds[first_seed].note,
            *_slurm_notes(plan, docs, job_id),
        ),
        skipped_by_reason=dict(data.skipped_by_reason),
        input_rows=data.rows,
    )
    return report, _on_slurm(plan, docs, job_id, per_seed, bounds)


def _check_input(plan: ArrayPlan, docs: Mapping[int, Doc], prepared: ReplayJobs) -> None:
    seen = docs[next(c.index for c in plan.cells if c.seed == plan.seeds[0])]["input"]
    here = {
        "trace": prepared.data.name,
        "jobs": len(prepared.admitted),
        "skipped": prepared.data.skipped,
        "unplaceable": len(prepared.unplaceable),
        "epoch": prepared.cluster.epoch.isoformat(),
        "slot_seconds": prepared.cluster.slot_seconds,
    }
    differ = {k: (seen.get(k), v) for k, v in here.items() if seen.get(k) != v}
    if differ:
        raise InputError(
            f"the input changed since the cells ran: {differ} (cells, here)",
            hint="rerun the whole replay: its trace, job list or cluster file was changed",
            context={"out_dir": str(plan.out_dir)},
        )


def _slurm_notes(plan: ArrayPlan, docs: Mapping[int, Doc], job_id: str | None) -> list[str]:
    n_pol, n_seeds = len(plan.policies), len(plan.seeds)
    notes = [
        f"replayed on Slurm: array job {job_id or '?'}, {len(plan.cells)} cells "
        f"({n_pol} polic{'y' if n_pol == 1 else 'ies'} × {n_seeds} seed(s) × "
        f"{plan.slices} slice(s)); wall_s = the sum of a policy's cells' simulation times"
    ]
    if plan.slices > 1:
        notes.append(
            f"the jobs were cut into {plan.slices} contiguous slices by submission order, "
            "each replayed alone from an empty cluster: an approximation of the whole replay "
            "(docs/replay-guide.md, 'Replaying on Slurm')"
        )
    if n_seeds > 1:
        seeds = ", ".join(map(str, plan.seeds))
        notes.append(
            f"seeds {seeds}: the results are means over the seeds (metrics.json on_slurm."
            f"per_seed has each); placed and rejected are summed; jobs, skipped, unplaceable "
            f"and the plots are seed {plan.seeds[0]}'s"
        )
        counts = {s: _counts(docs, plan, s) for s in plan.seeds}
        if len({tuple(c.values()) for c in counts.values()}) > 1:
            notes.append(f"the seeds' synthesis gave different job counts: {counts}")
    return notes


def _counts(docs: Mapping[int, Doc], plan: ArrayPlan, seed: int) -> dict[str, int]:
    facts = docs[next(c.index for c in plan.cells if c.seed == seed)]["input"]
    return {k: int(facts[k]) for k in ("jobs", "skipped", "unplaceable")}


def _on_slurm(
    plan: ArrayPlan,
    docs: Mapping[int, Doc],
    job_id: str | None,
    per_seed: Mapping[str, Mapping[int, PolicyMetrics]],
    bounds: Mapping[int, LowerBound],
) -> OnSlurm:
    return {
        "job_id": job_id,
        "run_id": plan.run_id,
        "seeds": list(plan.seeds),
        "slices": plan.slices,
        "cells": [
            {
                "index": c.index,
                "policy": c.policy,
                "seed": c.seed,
                "slice": c.slice,
                "range": docs[c.index]["range"],
                "wall_s": docs[c.index]["wall_s"],
                "where": docs[c.index].get("where", {}),
            }
            for c in plan.cells
        ],
        "per_seed": {
            policy: {
                str(seed): {
                    **m.summary(),
                    "placed": m.placed,
                    "rejected": m.rejected,
                    "total_completion_slots": m.total_completion_slots,
                }
                for seed, m in seeds.items()
            }
            for policy, seeds in per_seed.items()
        },
        "per_seed_counts": {str(s): _counts(docs, plan, s) for s in plan.seeds},
        "lp_bound_per_seed": {
            str(s): {"value": b.value, "note": b.note} for s, b in bounds.items()
        },
    }


def merge_dir(
    out_dir: Path,
    *,
    prepared: ReplayJobs | None = None,
    states: StatesFn | None = None,
    job_id: str | None = None,
) -> ReplayReport:
    """Merge the cells in ``out_dir`` and write the report there (module docstring).

    ``prepared``: the first seed's input when the caller has it (else read again);
    ``states``: the array tasks' Slurm states, asked only when a cell cannot be merged;
    ``job_id``: the array job (default: ``submission.json``'s)."""
    plan = read_plan(out_dir)
    if job_id is None:
        job_id = submitted_job_id(out_dir)
    docs, problems = read_cells(plan)
    if not problems:
        problems = consistency_problems(plan, docs)
    if problems:
        known = dict(states()) if states is not None else {}
        tails = {p.cell.index: log_tail(log_path(out_dir, p.cell.index)) for p in problems}
        raise cells_failed_error(plan, problems, known, tails, job_id)
    if prepared is None:
        prepared = prepare_jobs(plan.options_for(plan.seeds[0]))
    report, on_slurm = merge_report(plan, docs, prepared, job_id)
    from .report import write_outputs

    files = write_outputs(report, out_dir)
    metrics_path = Path(files.metrics)
    details = read_json(metrics_path, "the merged metrics")
    write_json_atomic(metrics_path, {**details, "on_slurm": on_slurm}, allow_nan=True)
    return replace(report, files=files)


def merge_submitted(
    out_dir: Path, read_states: Callable[[str, int], Mapping[int, str]]
) -> ReplayReport:
    """``mlsub replay --merge DIR``: merge the cells of an earlier ``--no-wait`` run
    (:func:`merge_dir`, the array job's id from ``submission.json``). ``read_states(job
    id, tasks)`` gives the array tasks' Slurm states, asked only when a cell cannot be
    merged and the array was submitted."""
    plan = read_plan(out_dir)
    job_id = submitted_job_id(out_dir)

    def states() -> Mapping[int, str]:
        return read_states(job_id, len(plan.cells)) if job_id else {}

    return merge_dir(out_dir, states=states, job_id=job_id)


def submitted_job_id(out_dir: Path) -> str | None:
    """The array job's id in ``submission.json``, or None when the array was not
    submitted (or the record has none)."""
    path = out_dir / SUBMISSION_FILE
    if not path.is_file():
        return None
    data = read_json(path, "the submission record")
    job_id = data.get("job_id") if isinstance(data, Mapping) else None
    return None if job_id is None else str(job_id)
