"""``mlsub replay``: a trace (or a job list) through the simulator under several policies.

Thin: declares the options and calls :func:`~slurm_mlsched.services.replay.run_replay`
with the wall clock (for ``wall_s``) and a progress bar on stderr; prints the results.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from ..model import Form
from ..services.clock import Clock
from ..services.replay import DEFAULT_NODES, ReplayOptions, run_replay
from ..sim.metrics import LP_MAX_JOBS
from . import output
from .errors import handle_errors

CLUSTER = "Cluster"
TRACE = "Trace"


def _form(value: str) -> Form:
    try:
        return Form(value.strip().lower())
    except ValueError:
        raise InputError(
            f"option --form must be elastic or non-elastic, got {value!r}",
            context={"option": "--form", "value": value},
        ) from None


def register(app: typer.Typer, *, clock: Callable[[], Clock], debug: Callable[[], bool]) -> None:
    """Add ``replay`` to ``app``."""

    @app.command()
    def replay(
        trace: Annotated[
            Path,
            typer.Argument(
                help="Trace file (sacct, Philly, Pollux/Sia, Mustang, SWF, CSV with --columns) "
                "or a job list (.json/.yaml).",
                show_default=False,
            ),
        ],
        policy: Annotated[
            list[str],
            typer.Option("--policy", "-p", help="Policy to replay (repeat for several)."),
        ],
        out: Annotated[
            Path | None,
            typer.Option("--out", "-o", help="Directory for summary.json, plots and report."),
        ] = None,
        nodes: Annotated[
            str | None,
            typer.Option(
                help=f"NODESxGPUS identical nodes (default {DEFAULT_NODES}; 8 CPUs and 64 GiB "
                "per GPU).",
                rich_help_panel=CLUSTER,
            ),
        ] = None,
        cluster: Annotated[
            Path | None,
            typer.Option("--cluster", "-c", help="Cluster file (YAML).", rich_help_panel=CLUSTER),
        ] = None,
        slot_seconds: Annotated[
            float | None,
            typer.Option(
                help="Δ, seconds per slot (default: the cluster file's, else 600).",
                rich_help_panel=CLUSTER,
            ),
        ] = None,
        seed: Annotated[int, typer.Option(help="Seed of rounding, synthesis, utility.")] = 0,
        form: Annotated[
            str, typer.Option(help="elastic | non-elastic (yu-rr; fifo-* are non-elastic).")
        ] = "non-elastic",
        limit: Annotated[
            int | None, typer.Option(help="Replay only the N earliest-submitted jobs.")
        ] = None,
        lp_max_jobs: Annotated[
            int, typer.Option(help="Compute the LP lower bound up to this many jobs.")
        ] = LP_MAX_JOBS,
        trace_format: Annotated[
            str,
            typer.Option("--format", help="Trace format (auto detects).", rich_help_panel=TRACE),
        ] = "auto",
        columns: Annotated[
            str | None,
            typer.Option(
                help="Column map of a generic CSV (submit=COL,…) or a file with it.",
                rich_help_panel=TRACE,
            ),
        ] = None,
        skip_bad: Annotated[
            bool,
            typer.Option(
                "--skip-bad", help="Skip malformed lines (counted).", rich_help_panel=TRACE
            ),
        ] = False,
        tz: Annotated[
            str | None,
            typer.Option(
                help="Zone of trace times written without one (default UTC; Philly: "
                "America/Los_Angeles).",
                rich_help_panel=TRACE,
            ),
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print summary.json to stdout.")
        ] = False,
    ) -> None:
        """Replay a trace under one or more placement policies and report the metrics."""
        with handle_errors(debug=debug()):
            opts = ReplayOptions(
                trace=trace,
                policies=tuple(policy),
                out_dir=out,
                nodes=nodes,
                cluster=cluster,
                seed=seed,
                form=_form(form),
                slot_seconds=slot_seconds,
                limit=limit,
                lp_max_jobs=lp_max_jobs,
                trace_format=trace_format,
                columns=columns,
                skip_bad=skip_bad,
                tz=tz,
            )
            with output.replay_progress(enabled=not as_json) as progress:
                report = run_replay(opts, clock(), progress=progress)
            output.show_replay({**report.details(), "files": report.files}, as_json=as_json)
