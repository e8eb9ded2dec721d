"""The cells of a replay on Slurm (``mlsub replay --on-slurm``): the plan, one cell's
run, and the cell's result file.

A **cell** is one (policy, seed, slice) of the replay; one Slurm array task runs one cell
(``mlsub replay-cell DIR K``, :func:`run_cell`). Files under the output directory DIR,
every JSON file written atomically (a temporary file in the same directory, renamed):

* ``plan.json`` (:class:`ArrayPlan`): the replay options with absolute paths, the seeds,
  the number of slices, the cells and a run id; written before the array is submitted;
* ``cells/K.json``: cell K's result (:func:`cell_document`), written only when the cell
  succeeded (so a missing file is a failed, lost or unfinished cell);
* ``cells/K.log``: the array task's output.

**Slices.** For each seed, the admitted jobs in submission order (what a local replay
replays) are cut into ``slices`` contiguous chunks; chunk i holds jobs
[⌊i·n/K⌋, ⌊(i+1)·n/K⌋) (:func:`slice_range`). Each chunk is replayed alone, from an empty
cluster, with its jobs' own arrival slots: the jobs of one chunk never see the
reservations of another's, so K > 1 is an approximation of the whole replay (a chunk's
first jobs find the cluster emptier than they would). ``--slices 1`` is the local replay.

**What one cell does**: the same steps as :func:`~.replay.run_replay` for one policy and
one seed (:func:`~.replay.prepare_jobs`: input, synthesis with the seed, cluster,
admission), then :func:`~slurm_mlsched.sim.simulate` on its chunk. The first policy's cell
of each (seed, slice) also computes the LP lower bound of its chunk (``sim.lower_bound``),
which the merge needs once per (seed, slice).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any, TypedDict

from ... import __version__
from ...errors import InputError
from ...model import Form, Mode
from ...placement import Binding
from ...sim import LowerBound, SimResult, draw_utilities, lower_bound, simulate, total_utility
from ...sim.metrics import algorithm_stats
from ..clock import Clock
from .run import _prepared, prepare_jobs, replay_params
from .types import ReplayJobs, ReplayOptions

PLAN_FILE = "plan.json"
CELLS_DIR = "cells"
SCRIPT_FILE = "replay-array.sbatch"
SUBMISSION_FILE = "submission.json"
PLAN_SCHEMA = 1
CELL_SCHEMA = 1
CELL_KIND = "mlsub-replay-cell"


# --- the documents of the files (file formats: their keys must not change) ------------------


class CellEntry(TypedDict):
    """A cell in ``plan.json``."""

    index: int
    policy: str
    seed: int
    slice: int
    bound: bool


class PlanDocument(TypedDict):
    """``plan.json``."""

    schema: int
    kind: str
    run_id: str
    mlsub_version: str
    options: dict[str, object]
    seeds: list[int]
    slices: int
    cells: list[CellEntry]


class CellInput(TypedDict):
    """What a cell saw of the input: every cell of a seed must agree on it."""

    trace: str
    source: str
    jobs: int
    skipped: int
    unplaceable: int
    epoch: str
    slot_seconds: float


class PlacedColumns(TypedDict):
    """A cell's placed jobs as columns (:data:`PLACED_COLUMNS`), in outcome order."""

    job_id: list[str]
    submit_s: list[float]
    arrival: list[int]
    start: list[int]
    end: list[int]
    jct_s: list[float]
    wait_s: list[float]
    run_slots: list[int]
    colocated_slots: list[int]
    decision_ms: list[float]
    gpu_runs: list[list[list[float]]]  # per job: [first slot, stop, GPUs held]


#: The per-job columns of a cell's placed jobs, in the simulator's outcome order (the keys
#: of :class:`PlacedColumns`, declared there once).
PLACED_COLUMNS: tuple[str, ...] = tuple(PlacedColumns.__annotations__)


class RejectedJob(TypedDict):
    job_id: str
    submit_s: float
    arrival: int
    error: str


class CellSpan(TypedDict):
    first_submit_s: float | None
    last_finish_s: float | None


class BoundEntry(TypedDict):
    value: float | None
    note: str


class CellDocument(TypedDict):
    """``cells/K.json`` (schema 1): one cell's result (:func:`cell_document`)."""

    schema: int
    kind: str
    run_id: str
    mlsub_version: str
    index: int
    policy: str
    seed: int
    slice: int
    slices: int
    range: list[int]
    input: CellInput
    placed: PlacedColumns
    rejected: list[RejectedJob]
    latencies_ms: list[float]
    span: CellSpan
    gpu_slots: float
    utility: float
    peak_active_reservations: int
    algorithm: dict[str, float | None]
    events: int
    params: dict[str, object]
    bound: BoundEntry | None
    wall_s: float
    where: dict[str, str]
    notes: list[str]


@dataclass(frozen=True)
class Cell:
    """One array task's share: a policy, a seed and a slice (0-based) of the jobs."""

    index: int
    policy: str
    seed: int
    slice: int
    bound: bool  # computes the LP bound of its (seed, slice): the first policy's cell

    def describe(self, slices: int) -> str:
        return (
            f"cell {self.index} ({self.policy}, seed {self.seed}, slice {self.slice + 1}/{slices})"
        )


def plan_cells(policies: Sequence[str], seeds: Sequence[int], slices: int) -> tuple[Cell, ...]:
    """The cells of a replay: policy × seed × slice, numbered from 0 in that order."""
    if not policies:
        raise InputError("no policy to replay", hint="pass --policy")
    if not seeds:
        raise InputError("no seed to replay", hint="pass --seeds 0,1,2 or --seed N")
    if len(set(seeds)) != len(seeds):
        raise InputError(
            f"option --seeds repeats a seed: {','.join(map(str, seeds))}",
            context={"option": "--seeds"},
        )
    if slices < 1:
        raise InputError(
            f"option --slices must be >= 1, got {slices}",
            context={"option": "--slices", "value": slices},
        )
    cells: list[Cell] = []
    for policy in policies:
        for seed in seeds:
            for part in range(slices):
                cells.append(Cell(len(cells), policy, seed, part, policy == policies[0]))
    return tuple(cells)


def slice_range(jobs: int, slices: int, index: int) -> tuple[int, int]:
    """[lo, hi) of chunk ``index`` of ``jobs`` jobs cut into ``slices`` contiguous chunks
    whose sizes differ by at most one."""
    if not 0 <= index < slices:
        raise ValueError(f"slice {index} out of range 0..{slices - 1}")
    return index * jobs // slices, (index + 1) * jobs // slices


@dataclass(frozen=True)
class ArrayPlan:
    """``plan.json``: everything a cell needs to run, and the merge to check results."""

    run_id: str
    options: ReplayOptions  # absolute paths; out_dir = DIR; seed = seeds[0]
    seeds: tuple[int, ...]
    slices: int
    cells: tuple[Cell, ...]
    mlsub_version: str = __version__

    @property
    def out_dir(self) -> Path:
        assert self.options.out_dir is not None
        return self.options.out_dir

    @property
    def policies(self) -> tuple[str, ...]:
        return self.options.policies

    def options_for(self, seed: int) -> ReplayOptions:
        return replace(self.options, seed=seed)

    def cell(self, index: int) -> Cell:
        if not 0 <= index < len(self.cells):
            raise InputError(
                f"no cell {index} in {self.out_dir / PLAN_FILE}: it has cells 0.."
                f"{len(self.cells) - 1}",
                context={"cell": index},
            )
        return self.cells[index]

    def as_dict(self) -> PlanDocument:
        """The ``plan.json`` document."""
        return {
            "schema": PLAN_SCHEMA,
            "kind": "mlsub-replay-plan",
            "run_id": self.run_id,
            "mlsub_version": self.mlsub_version,
            "options": options_as_dict(self.options),
            "seeds": list(self.seeds),
            "slices": self.slices,
            "cells": [
                {"index": c.index, "policy": c.policy, "seed": c.seed, "slice": c.slice,
                 "bound": c.bound}
                for c in self.cells
            ],
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], origin: str) -> ArrayPlan:
        """Read a ``plan.json`` document; InputError naming ``origin`` when it is not one."""
        if data.get("kind") != "mlsub-replay-plan" or data.get("schema") != PLAN_SCHEMA:
            raise InputError(
                f"{origin} is not a plan of `mlsub replay --on-slurm` (schema {PLAN_SCHEMA})",
                context={"file": origin},
            )
        try:
            return cls(
                run_id=str(data["run_id"]),
                options=options_from_dict(data["options"]),
                seeds=tuple(int(s) for s in data["seeds"]),
                slices=int(data["slices"]),
                cells=tuple(_cell(c) for c in data["cells"]),
                mlsub_version=str(data.get("mlsub_version", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(
                f"{origin}: unreadable plan ({type(exc).__name__}: {exc})",
                context={"file": origin},
            ) from None


def _cell(data: Mapping[str, Any]) -> Cell:
    return Cell(
        int(data["index"]),
        str(data["policy"]),
        int(data["seed"]),
        int(data["slice"]),
        bool(data["bound"]),
    )


#: Options added after the plan's schema 1 was fixed: written only when set, so a plan of
#: the defaults (and its golden file) reads as before; read back at their defaults.
LATER_OPTIONS = (
    "gpu_speed",
    "preempt_max",
    "since",
    "until",
    "preempt_shrink",
    "preempt_regather",
    "lookahead_pausable",
)


def options_as_dict(opts: ReplayOptions) -> dict[str, object]:
    """:class:`ReplayOptions` as JSON data (paths as strings, the form by value)."""
    out: dict[str, object] = {}
    for f in fields(opts):
        value: object = getattr(opts, f.name)
        if f.name in LATER_OPTIONS and value == f.default:
            continue
        if isinstance(value, Path):
            value = str(value)
        elif isinstance(value, Form | Binding):
            value = value.value
        elif isinstance(value, tuple):
            value = list(value)
        out[f.name] = value
    return out


def options_from_dict(data: Mapping[str, Any]) -> ReplayOptions:
    """The inverse of :func:`options_as_dict`."""
    kw = dict(data)
    kw["trace"] = Path(kw["trace"])
    for key in ("out_dir", "cluster"):
        kw[key] = None if kw.get(key) is None else Path(kw[key])
    kw["policies"] = tuple(kw["policies"])
    kw["form"] = Form(kw["form"])
    kw["binding"] = Binding(kw.get("binding", Binding.LATE))
    kw.setdefault("preempt", False)  # plans written before preemption was the default
    return ReplayOptions(**kw)


def absolute_options(opts: ReplayOptions) -> ReplayOptions:
    """``opts`` with every path absolute (cells run in DIR, maybe on another node): the
    trace, the cluster file, DIR and a ``--columns`` file. Symlinks are kept (the trace's
    name is the report's)."""

    def absolute(path: Path | None) -> Path | None:
        return None if path is None else Path(os.path.abspath(path))

    columns = opts.columns
    if columns is not None and "=" not in columns:
        columns = os.path.abspath(columns)
    trace = absolute(opts.trace)
    assert trace is not None
    return replace(
        opts,
        trace=trace,
        cluster=absolute(opts.cluster),
        out_dir=absolute(opts.out_dir),
        columns=columns,
    )


# --- files ---------------------------------------------------------------------------------


def plan_path(out_dir: Path) -> Path:
    return out_dir / PLAN_FILE


def cell_path(out_dir: Path, index: int) -> Path:
    return out_dir / CELLS_DIR / f"{index}.json"


def log_path(out_dir: Path, index: int) -> Path:
    return out_dir / CELLS_DIR / f"{index}.log"


def write_json_atomic(
    path: Path, data: object, *, indent: int | None = 2, allow_nan: bool = False
) -> None:
    """Write ``data`` as JSON to a temporary file beside ``path``, then rename it over
    ``path``: a reader sees the whole old file or the whole new one, never a part."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    text = json.dumps(data, sort_keys=True, indent=indent, allow_nan=allow_nan) + "\n"
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(
            f"cannot write {path}: {exc.strerror or exc}",
            hint="pass a writable --out DIR on a file system the compute nodes share",
            context={"file": str(path)},
        ) from None


def read_json(path: Path, what: str) -> Any:
    """A JSON file; InputError saying what it should have been when it cannot be read."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path} does not exist ({what})", context={"file": str(path)}) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(
            f"cannot read {path} ({what}): {exc}", context={"file": str(path)}
        ) from None


def read_plan(out_dir: Path) -> ArrayPlan:
    path = plan_path(out_dir)
    if not path.is_file():
        raise InputError(
            f"{out_dir} holds no {PLAN_FILE}: it is not the output directory of "
            "`mlsub replay --on-slurm`",
            hint="give the --out DIR of the replay that was submitted",
            context={"file": str(path)},
        )
    data = read_json(path, "the plan of a replay on Slurm")
    if not isinstance(data, Mapping):
        raise InputError(f"{path}: not a plan", context={"file": str(path)})
    return ArrayPlan.from_dict(data, str(path))


# --- one cell ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CellRun:
    """One cell that ran (``mlsub replay-cell DIR K``): the cell, the number of slices,
    the jobs ``[lo, hi)`` of the ``jobs`` admitted it replayed, how many it placed and
    rejected, the simulation's wall time (s) and the result file it wrote."""

    cell: Cell
    slices: int
    lo: int
    hi: int
    jobs: int
    placed: int
    rejected: int
    wall_s: float
    path: Path

    def to_json(self) -> dict[str, object]:
        """The cell's run in brief (its whole result is the file at ``file``)."""
        return {
            "index": self.cell.index,
            "policy": self.cell.policy,
            "seed": self.cell.seed,
            "slice": self.cell.slice,
            "slices": self.slices,
            "range": [self.lo, self.hi],
            "jobs": self.jobs,
            "placed": self.placed,
            "rejected": self.rejected,
            "wall_s": self.wall_s,
            "file": str(self.path),
        }


def run_cell(
    out_dir: Path,
    index: int,
    clock: Clock,
    where: Mapping[str, str] | None = None,
    started: Callable[[str], None] | None = None,
) -> CellRun:
    """Run cell ``index`` of the plan in ``out_dir`` and write ``cells/INDEX.json``
    (:func:`cell_document`); return what ran. ``where`` says where it ran (host, Slurm
    ids), for the record; ``started`` is told what the cell replays once its input is
    read."""
    plan = read_plan(out_dir)
    cell = plan.cell(index)
    opts = plan.options_for(cell.seed)
    prepared = prepare_jobs(opts)
    lo, hi = slice_range(len(prepared.admitted), plan.slices, cell.slice)
    part = prepared.admitted[lo:hi]
    if started is not None:
        started(
            f"{cell.describe(plan.slices)} starts: jobs [{lo}, {hi}) of "
            f"{len(prepared.admitted)} admitted"
        )
    bound = lower_bound(part, prepared.cluster, max_jobs=opts.lp_max_jobs) if cell.bound else None
    params = replay_params(opts, cell.seed)
    began = clock.monotonic()
    result = simulate(part, prepared.cluster, cell.policy, params)
    wall = round(clock.monotonic() - began, 3)
    doc = cell_document(
        plan.run_id, cell, plan.slices, prepared, (lo, hi), result, bound, wall, where or {}
    )
    doc["notes"] = _prepared(cell.policy, params, result.params)
    path = cell_path(out_dir, index)
    write_json_atomic(path, doc, indent=None)
    return CellRun(
        cell=cell,
        slices=plan.slices,
        lo=lo,
        hi=hi,
        jobs=len(prepared.admitted),
        placed=len(doc["placed"]["job_id"]),
        rejected=len(doc["rejected"]),
        wall_s=wall,
        path=path,
    )


def cell_document(
    run_id: str,
    cell: Cell,
    slices: int,
    prepared: ReplayJobs,
    span: tuple[int, int],
    result: SimResult,
    bound: LowerBound | None,
    wall_s: float,
    where: Mapping[str, str],
) -> CellDocument:
    """A cell's result (``cells/K.json``, schema 1; pure). Per placed job, in the
    simulator's outcome order, the columns of :data:`PLACED_COLUMNS`: submit (s), arrival,
    start and end slots, JCT and wait (s), running and co-located job-slots, decision
    latency (ms) and the GPU runs ``[first slot, stop, GPUs held]``; per rejected job its
    error; the decision latency samples (``SimResult.decision_latencies_ms``); the cell's
    span (first submit, last finish), GPU-slots and utility; the LP bound of its slice
    when it computed one; the input's counts, which every cell of a seed must agree on."""
    delta = result.cluster.slot_seconds
    cols: PlacedColumns = {
        "job_id": [], "submit_s": [], "arrival": [], "start": [], "end": [], "jct_s": [],
        "wait_s": [], "run_slots": [], "colocated_slots": [], "decision_ms": [], "gpu_runs": [],
    }  # fmt: skip
    rejected: list[RejectedJob] = []
    terms: dict[str, int] = {}
    gpu_slots = 0.0
    for o in result.outcomes:
        job, d = o.job, o.decision
        if d is None:
            rejected.append(
                {"job_id": job.job_id, "submit_s": job.submit_s,
                 "arrival": job.request.arrival_slot, "error": o.error}
            )  # fmt: skip
            continue
        per_worker, per_ps = job.request.worker.gpu, job.request.ps.gpu
        runs = [
            [p.slot, p.stop, p.total_workers * per_worker + p.total_ps * per_ps] for p in d.slots
        ]
        gpu_slots += sum(held * (stop - first) for first, stop, held in runs)
        terms[job.job_id] = int(d.end_slot - job.request.arrival_slot + 1)
        cols["job_id"].append(job.job_id)
        cols["submit_s"].append(job.submit_s)
        cols["arrival"].append(job.request.arrival_slot)
        cols["start"].append(d.start_slot)
        cols["end"].append(d.end_slot)
        cols["jct_s"].append((d.end_slot + 1) * delta - job.submit_s)
        cols["wait_s"].append(d.start_slot * delta - job.submit_s)
        cols["run_slots"].append(sum(p.length for p in d.slots))
        cols["colocated_slots"].append(sum(p.length for p in d.slots if p.mode == Mode.COLOCATED))
        cols["decision_ms"].append(d.decision_ms())
        cols["gpu_runs"].append(runs)
    utilities = draw_utilities(terms, cell.seed)
    data = prepared.data
    return {
        "schema": CELL_SCHEMA,
        "kind": CELL_KIND,
        "run_id": run_id,
        "mlsub_version": __version__,
        "index": cell.index,
        "policy": cell.policy,
        "seed": cell.seed,
        "slice": cell.slice,
        "slices": slices,
        "range": list(span),
        "input": {
            "trace": data.name,
            "source": data.source,
            "jobs": len(prepared.admitted),
            "skipped": data.skipped,
            "unplaceable": len(prepared.unplaceable),
            "epoch": prepared.cluster.epoch.isoformat(),
            "slot_seconds": delta,
        },
        "placed": cols,
        "rejected": rejected,
        "latencies_ms": result.decision_latencies_ms(),
        "span": {
            "first_submit_s": min(cols["submit_s"], default=None),
            "last_finish_s": (max(cols["end"]) + 1) * delta if cols["end"] else None,
        },
        "gpu_slots": gpu_slots,
        "utility": total_utility(terms, utilities),
        "peak_active_reservations": result.peak_active_reservations,
        "algorithm": dict(algorithm_stats(result)),
        "events": result.events,
        "params": dict(result.params.as_dict()),
        "bound": None if bound is None else {"value": bound.value, "note": bound.note},
        "wall_s": wall_s,
        "where": dict(where),
        "notes": [],
    }
