"""``mlsub``: the Typer commands. Each one declares its options and calls one service.

Wiring (the only place adapters are picked):

* clock: :class:`~slurm_mlsched.services.clock.WallClock`, or a
  :class:`~slurm_mlsched.services.clock.FixedClock` at ``MLSUB_FIXED_NOW`` (an ISO 8601
  time) when that variable is set: for tests and reproducible output;
* ``MLSUB_DEBUG=1`` lets unexpected exceptions through with their traceback;
* before any command runs, HiGHS's once-per-process start-up banner is used up with
  stdout pointed at /dev/null (:mod:`.highs_banner`), so ``--json`` stays pure JSON.
"""

from __future__ import annotations

import os
from dataclasses import asdict
from pathlib import Path
from typing import Annotated

import typer

from .. import __version__
from ..errors import InputError
from ..services.clock import Clock, FixedClock, WallClock
from ..services.plan import plan_from_files
from ..services.policies import list_policies
from . import cluster as cluster_cli
from . import output
from . import replay as replay_cli
from .decisions import plan_reserved, register
from .errors import handle_errors
from .highs_banner import silence_highs_banner

FIXED_NOW_ENV = "MLSUB_FIXED_NOW"
DEBUG_ENV = "MLSUB_DEBUG"

app = typer.Typer(
    name="mlsub",
    help="Place distributed ML training jobs (workers + parameter servers) on Slurm.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)

JOB = "Job options (override the script's '# mlsub:' header)"
POLICY = "Placement"
STORE = "Decision store"


def _clock() -> Clock:
    fixed = os.environ.get(FIXED_NOW_ENV)
    if not fixed:
        return WallClock()
    try:
        return FixedClock.from_iso(fixed)
    except ValueError:
        raise InputError(
            f"environment variable {FIXED_NOW_ENV} is not an ISO 8601 time, got {fixed!r}",
            hint=f"e.g. {FIXED_NOW_ENV}=2026-01-01T00:00:00Z, or unset it",
            context={"variable": FIXED_NOW_ENV, "value": fixed},
        ) from None


def _debug() -> bool:
    return os.environ.get(DEBUG_ENV, "") not in ("", "0")


def _show_version(value: bool) -> None:
    if value:
        output.show_version(__version__)
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_show_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Place distributed ML training jobs (workers + parameter servers) on Slurm."""
    silence_highs_banner()


@app.command()
def plan(
    cluster: Annotated[
        Path,
        typer.Option("--cluster", "-c", help="Cluster file (YAML).", show_default=False),
    ],
    script: Annotated[
        Path | None,
        typer.Argument(help="Job script; its '# mlsub:' header lines are read."),
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Workers (N, at most).", rich_help_panel=JOB)
    ] = None,
    ps: Annotated[
        str | None, typer.Option(help="PSs: 'auto' or a count.", rich_help_panel=JOB)
    ] = None,
    gpus_per_worker: Annotated[
        int | None, typer.Option(help="GPUs per worker (default 1).", rich_help_panel=JOB)
    ] = None,
    cpus_per_worker: Annotated[
        int | None, typer.Option(help="CPUs per worker (default 4).", rich_help_panel=JOB)
    ] = None,
    mem_per_worker: Annotated[
        str | None,
        typer.Option(
            help="Memory per worker, Slurm-style (8G; bare = MiB) (default 16G).",
            rich_help_panel=JOB,
        ),
    ] = None,
    cpus_per_ps: Annotated[
        int | None, typer.Option(help="CPUs per PS (default 2).", rich_help_panel=JOB)
    ] = None,
    mem_per_ps: Annotated[
        str | None,
        typer.Option(help="Memory per PS, Slurm-style (default 8G).", rich_help_panel=JOB),
    ] = None,
    epochs: Annotated[
        int | None, typer.Option(help="Epochs (default 1).", rich_help_panel=JOB)
    ] = None,
    batches_per_epoch: Annotated[
        int | None, typer.Option(help="Mini-batches per epoch.", rich_help_panel=JOB)
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Profiled model (see the user guide).", rich_help_panel=JOB)
    ] = None,
    step_time: Annotated[
        float | None, typer.Option(help="Seconds per mini-batch (τ).", rich_help_panel=JOB)
    ] = None,
    model_size: Annotated[
        float | None, typer.Option(help="Model size in MB (g).", rich_help_panel=JOB)
    ] = None,
    bw_ex: Annotated[
        float | None,
        typer.Option(
            help="Network MB/s per worker (default: the model's, else 100).", rich_help_panel=JOB
        ),
    ] = None,
    bw_in: Annotated[
        float | None,
        typer.Option(
            help="Internal MB/s per worker (default: the model's, else 1000).", rich_help_panel=JOB
        ),
    ] = None,
    name: Annotated[str | None, typer.Option(help="Job name.", rich_help_panel=JOB)] = None,
    partition: Annotated[
        str | None,
        typer.Option(help="Slurm partition (used when submitting).", rich_help_panel=JOB),
    ] = None,
    policy: Annotated[
        str | None, typer.Option(help="Placement policy (default yu-rr).", rich_help_panel=POLICY)
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Rounding seed (default 0).", rich_help_panel=POLICY)
    ] = None,
    form: Annotated[
        str | None,
        typer.Option(help="elastic | non-elastic (default non-elastic).", rich_help_panel=POLICY),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the plan as JSON.")] = False,
    reserve: Annotated[
        bool,
        typer.Option(
            "--reserve",
            help="Plan around the decision store's reservations and record this decision "
            "as 'planned' (its JSON then carries decision_id).",
            rich_help_panel=STORE,
        ),
    ] = False,
    cluster_name: Annotated[
        str | None,
        typer.Option(help="Cluster the reservation is kept under.", rich_help_panel=STORE),
    ] = None,
    db_url: Annotated[
        str | None, typer.Option(help="Decision store URL.", rich_help_panel=STORE)
    ] = None,
) -> None:
    """Plan where and when a job would run on the cluster described by --cluster."""
    overrides: dict[str, object] = {
        "workers": workers,
        "ps": ps,
        "gpus_per_worker": gpus_per_worker,
        "cpus_per_worker": cpus_per_worker,
        "mem_per_worker": mem_per_worker,
        "cpus_per_ps": cpus_per_ps,
        "mem_per_ps": mem_per_ps,
        "epochs": epochs,
        "batches_per_epoch": batches_per_epoch,
        "model": model,
        "step_time": step_time,
        "model_size": model_size,
        "bw_ex": bw_ex,
        "bw_in": bw_in,
        "name": name,
        "partition": partition,
        "policy": policy,
        "seed": seed,
        "form": form,
    }
    with handle_errors(debug=_debug()):
        if reserve:
            reserved = plan_reserved(
                script=script,
                cluster=cluster,
                overrides=overrides,
                clock=_clock(),
                cluster_name=cluster_name,
                db_url=db_url,
            )
            output.show_reserved(reserved, as_json=as_json)
            return
        result = plan_from_files(
            script=script, cluster=cluster, overrides=overrides, clock=_clock()
        )
        output.show_plan(result.as_dict(), as_json=as_json)


@app.command()
def policies(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List the placement policies."""
    with handle_errors(debug=_debug()):
        output.show_policies([asdict(p) for p in list_policies()], as_json=as_json)


register(app, clock=_clock, debug=_debug)
cluster_cli.register(app, clock=_clock, debug=_debug)
replay_cli.register(app, clock=_clock, debug=_debug)


def main() -> None:
    app()
