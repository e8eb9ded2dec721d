"""``mlsub replay --on-slurm``: the replay's cells as one Slurm job array (issue 3, item 6).

1. **prepare** (:func:`prepare_array`): check the options, read the input once (the first
   seed) so that a bad trace fails here rather than in every task, plan the cells
   (policy × seed × slice, :mod:`.cells`), write ``DIR/plan.json`` and the array
   script ``DIR/replay-array.sbatch`` (:mod:`slurm_mlsched.sbatch.replay_array`);
2. **submit** (:func:`submit_array`): ``sbatch --parsable DIR/replay-array.sbatch``
   through the Slurm funnel; the job id goes to ``DIR/submission.json``;
3. **wait** (:func:`wait_array`): poll the tasks' states (squeue, then sacct for tasks that
   left the queue) until every task has ended;
4. **merge** (:func:`.merge.merge_dir`): the cells' results into the report files,
   or one loud error naming the cells that failed.

Cells run on the compute nodes and read and write ``DIR``, so ``DIR``, the trace and the
Python environment must be on a file system they share (on the lab cluster every node is
this machine). The Slurm commands run on this machine (no ``--remote``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from ...errors import InputError
from ...sbatch.replay_array import DEFAULT_MEM, ArrayScript, check_array_script, render_replay_array
from ...slurm.jobs import phase_of
from ...slurm.parse import parse_sbatch_parsable
from ...slurm.runner import SBATCH_TIMEOUT_S, SlurmCommands
from ...slurm.transient import Blips
from ..clock import Clock
from .cells import (
    CELLS_DIR,
    SCRIPT_FILE,
    SUBMISSION_FILE,
    ArrayPlan,
    absolute_options,
    plan_cells,
    plan_path,
    write_json_atomic,
)
from .merge import merge_command
from .run import _policies, prepare_jobs
from .types import ReplayJobs, ReplayOptions

#: Seconds between two polls of the tasks' states.
POLL_EVERY_S = 2.0

#: ``progress(done, total, running, pending)``: cells ended, cells, running, pending.
ArrayProgress = Callable[[int, int, int, int], None]


@dataclass(frozen=True)
class SlurmReplayOptions:
    """The Slurm side of ``--on-slurm``: seeds and slices (the cells), and the tasks'
    partition, time limit and memory."""

    seeds: tuple[int, ...] = (0,)
    slices: int = 1
    partition: str | None = None
    time_limit: str | None = None
    mem: str = DEFAULT_MEM


@dataclass(frozen=True)
class PreparedArray:
    """A planned array: its plan, its script, and the first seed's input (for the merge)."""

    plan: ArrayPlan
    script_path: Path
    jobs: ReplayJobs

    @property
    def tasks(self) -> int:
        return len(self.plan.cells)


def parse_seeds(text: str) -> tuple[int, ...]:
    """``--seeds 0,1,2`` -> (0, 1, 2)."""
    try:
        seeds = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        seeds = ()
    if not seeds:
        raise InputError(
            f"option --seeds must be a comma-separated list of whole numbers, got {text!r}",
            hint="e.g. --seeds 0,1,2",
            context={"option": "--seeds", "value": text},
        )
    return seeds


def prepare_array(
    opts: ReplayOptions,
    slurm_opts: SlurmReplayOptions,
    python: str,
    *,
    run_id: str | None = None,
) -> PreparedArray:
    """Plan the cells and write ``plan.json`` and the array script into ``opts.out_dir``
    (module docstring, step 1); nothing is submitted. ``python`` is the interpreter the
    tasks run (absolute; this one, ``sys.executable``, in the CLI)."""
    if opts.out_dir is None:
        raise InputError(
            "option --on-slurm needs --out DIR: the cells write their results there",
            hint="pass --out DIR on a file system the compute nodes share",
            context={"option": "--out"},
        )
    policies = _policies(opts.policies)
    opts = absolute_options(replace(opts, policies=policies, seed=slurm_opts.seeds[0]))
    cells = plan_cells(policies, slurm_opts.seeds, slurm_opts.slices)
    assert opts.out_dir is not None
    out_dir = opts.out_dir
    spec = ArrayScript(
        out_dir=str(out_dir),
        python=python,
        tasks=len(cells),
        partition=slurm_opts.partition,
        time_limit=slurm_opts.time_limit,
        mem=slurm_opts.mem,
    )
    check_array_script(spec)
    if (out_dir / SUBMISSION_FILE).exists():
        raise InputError(
            f"{out_dir} already holds a replay submitted to Slurm ({SUBMISSION_FILE})",
            hint=f"choose another --out DIR, or merge that one: mlsub replay --merge {out_dir}",
            context={"option": "--out", "value": str(out_dir)},
        )
    jobs = prepare_jobs(opts)
    if slurm_opts.slices > max(len(jobs.admitted), 1):
        raise InputError(
            f"option --slices {slurm_opts.slices} is more than the {len(jobs.admitted)} "
            "job(s) to replay",
            context={"option": "--slices", "value": slurm_opts.slices},
        )
    plan = ArrayPlan(
        run_id or uuid.uuid4().hex[:12], opts, slurm_opts.seeds, slurm_opts.slices, cells
    )
    try:
        (out_dir / CELLS_DIR).mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(
            f"cannot create {out_dir / CELLS_DIR}: {exc.strerror or exc}",
            hint="pass a writable --out DIR",
            context={"option": "--out", "value": str(out_dir)},
        ) from None
    write_json_atomic(plan_path(out_dir), plan.as_dict())
    script = out_dir / SCRIPT_FILE
    try:
        script.write_text(render_replay_array(spec), encoding="utf-8")
    except OSError as exc:
        raise InputError(
            f"cannot write {script}: {exc.strerror or exc}", context={"file": str(script)}
        ) from None
    return PreparedArray(plan, script, jobs)


@dataclass(frozen=True)
class ArraySubmission:
    """A submitted array (``mlsub replay --on-slurm``): its Slurm job id, its number of
    cells (one array task each), the output directory and the array script, and the
    command that merges the cells once they have ended."""

    job_id: str
    cells: int
    out_dir: Path
    script: Path
    merge_command: str

    def to_json(self) -> dict[str, object]:
        """What ``--on-slurm --no-wait --json`` prints."""
        return {
            "job_id": self.job_id,
            "cells": self.cells,
            "out_dir": str(self.out_dir),
            "script": str(self.script),
            "merge_command": self.merge_command,
        }


def submit_array(prepared: PreparedArray, slurm: SlurmCommands, clock: Clock) -> ArraySubmission:
    """``sbatch --parsable DIR/replay-array.sbatch``; record the job id (in
    ``DIR/submission.json``) and return the submission."""
    out = slurm.run(["sbatch", "--parsable", str(prepared.script_path)], timeout=SBATCH_TIMEOUT_S)
    job_id = str(parse_sbatch_parsable(out).job_id)
    write_json_atomic(
        prepared.plan.out_dir / SUBMISSION_FILE,
        {
            "job_id": job_id,
            "run_id": prepared.plan.run_id,
            "tasks": prepared.tasks,
            "script": str(prepared.script_path),
            "submitted_at": clock.now().isoformat(),
        },
    )
    out_dir = prepared.plan.out_dir
    return ArraySubmission(
        job_id=job_id,
        cells=prepared.tasks,
        out_dir=out_dir,
        script=prepared.script_path,
        merge_command=merge_command(out_dir),
    )


def wait_array(
    tasks: int,
    read_states: Callable[[], Mapping[int, str]],
    sleep: Callable[[float], None],
    progress: ArrayProgress | None = None,
    every_s: float = POLL_EVERY_S,
    blips: Blips | None = None,
) -> dict[int, str]:
    """Poll until every task 0 … ``tasks`` − 1 has ended; return their last states. A task
    Slurm no longer lists anywhere (squeue nor sacct) has ended too: ``UNKNOWN``. A
    transient Slurm failure of one read is tried again at the next turn, up to
    ``blips.limit`` in a row (``slurm/transient.py``)."""
    tolerant = blips or Blips()
    while True:
        known = tolerant.attempt(read_states)
        if known is None:
            sleep(every_s)
            continue
        states = {i: known.get(i, "UNKNOWN") for i in range(tasks)}
        phases = [phase_of(s) for s in states.values()]
        running, pending = phases.count("running"), phases.count("pending")
        done = tasks - running - pending
        if progress is not None:
            progress(done, tasks, running, pending)
        if done == tasks:
            return states
        sleep(every_s)
