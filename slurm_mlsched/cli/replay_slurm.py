"""``mlsub replay --on-slurm`` and ``mlsub replay --merge DIR``, and the hidden command
``mlsub replay-cell DIR K`` that each array task runs.

Wiring only (the services are :mod:`slurm_mlsched.services.replay.array` and
:mod:`~slurm_mlsched.services.replay.merge`): here the Slurm funnel is picked (the Slurm
commands of this machine), the tasks' interpreter (this one, ``sys.executable``), the
sleep between polls, and what a cell records of where it ran (host, Slurm ids).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..api import Clock
from ..errors import SlurmError
from . import output
from .context import Commands, app_context
from .highs_banner import silence_highs_banner

if TYPE_CHECKING:  # the replay services load when a command runs
    from ..api import ReplayOptions, SlurmReplayOptions

#: Environment variables a cell records (where it ran).
CELL_ENV = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURMD_NODENAME")


def run_on_slurm(
    opts: ReplayOptions,
    slurm_opts: SlurmReplayOptions,
    *,
    wait: bool,
    as_json: bool,
    clock: Clock,
) -> None:
    """Plan, submit, and (with ``wait``) wait for the cells and merge them."""
    from ..api import merge_dir, prepare_array, submit_array, wait_array
    from ..slurm.arrays import ArrayStatusReader
    from ..slurm.runner import LocalRunner, SlurmCommands

    prepared = prepare_array(opts, slurm_opts, sys.executable)
    slurm = SlurmCommands(LocalRunner())
    submission = submit_array(prepared, slurm, clock)
    job_id = submission.job_id
    if not wait:
        output.show_array_submitted(submission, as_json=as_json)
        return
    reader = ArrayStatusReader(slurm)
    try:
        with output.array_progress(job_id, enabled=not as_json) as progress:
            states = wait_array(
                prepared.tasks, lambda: reader.states(job_id, prepared.tasks), time.sleep, progress
            )
    except KeyboardInterrupt:
        output.show_stopped_waiting(submission)
        raise typer.Exit(130) from None
    except SlurmError as err:
        err.hint = (
            f"{err.hint}; the array job {job_id} goes on: merge it later with "
            + submission.merge_command
        )
        raise
    report = merge_dir(
        submission.out_dir, prepared=prepared.jobs, states=lambda: states, job_id=job_id
    )
    output.show_replay(report, as_json=as_json)


def run_merge(out_dir: Path, *, as_json: bool) -> None:
    """``mlsub replay --merge DIR``: merge the cells of an earlier ``--no-wait`` run."""
    from ..api import merge_submitted

    output.show_replay(merge_submitted(out_dir, _states), as_json=as_json)


def _states(job_id: str, tasks: int) -> Mapping[int, str]:
    """The tasks' states for a failure message: whatever Slurm still says, else nothing."""
    from ..slurm.arrays import ArrayStatusReader
    from ..slurm.runner import LocalRunner, SlurmCommands

    try:
        return ArrayStatusReader(SlurmCommands(LocalRunner())).states(job_id, tasks)
    except SlurmError:
        return {}


commands = Commands()


@commands.command("replay-cell", hidden=True, debug=True)
def replay_cell(
    out_dir: Annotated[Path, typer.Argument(help="The --out DIR of the replay.")],
    index: Annotated[int, typer.Argument(help="The cell (the array task's index).")],
) -> None:
    """Run one cell of `mlsub replay --on-slurm` (what each array task runs)."""
    # A cell's log is read by people chasing a failure: let tracebacks through.
    silence_highs_banner()
    from ..api import run_cell

    where = {k: os.environ[k] for k in CELL_ENV if k in os.environ}
    import socket

    where["host"] = socket.gethostname()
    ran = run_cell(out_dir, index, app_context().clock, where, started=output.show_line)
    output.show_cell(ran)
