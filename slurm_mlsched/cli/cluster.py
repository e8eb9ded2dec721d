"""``mlsub cluster``: the live cluster as the placement sees it (nodes, free capacity now,
running jobs, excluded nodes).

Wiring: the node state source is picked by
:func:`~slurm_mlsched.slurm.nodes.select_source` over a
:class:`~slurm_mlsched.slurm.runner.LocalRunner` (pyslurm when it matches the cluster's
Slurm, else the Slurm commands). ``MLSUB_SLURM_SOURCE`` overrides it: ``cli`` (the Slurm
commands, JSON where the version has it), ``json`` or ``text`` (those formats only).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Annotated

import typer

from ..errors import InputError
from ..files.cluster_file import DEFAULT_SLOT_SECONDS
from ..services.clock import Clock
from ..services.cluster_state import read_cluster_state
from ..slurm.nodes import Mode, NodeStateSource, SlurmCliSource, select_source
from ..slurm.runner import LocalRunner
from . import output
from .errors import handle_errors

SOURCE_ENV = "MLSUB_SLURM_SOURCE"
_CLI_MODES: dict[str, Mode] = {"cli": "auto", "json": "json", "text": "text"}


def node_state_source() -> NodeStateSource:
    """The one place the live node state source is chosen."""
    runner = LocalRunner()
    forced = os.environ.get(SOURCE_ENV, "").strip().lower()
    if forced in _CLI_MODES:
        return SlurmCliSource(runner, mode=_CLI_MODES[forced])
    if forced not in ("", "auto"):
        raise InputError(
            f"environment variable {SOURCE_ENV} must be auto, cli, json or text, got {forced!r}",
            hint=f"unset {SOURCE_ENV} to pick the source automatically",
            context={"variable": SOURCE_ENV, "value": forced},
        )
    return select_source(runner).source


def register(app: typer.Typer, *, clock: Callable[[], Clock], debug: Callable[[], bool]) -> None:
    """Add ``cluster`` to ``app``."""

    @app.command()
    def cluster(
        slot_seconds: Annotated[
            float,
            typer.Option(help="Δ, seconds per slot, for the reservations' slots.", min=1),
        ] = DEFAULT_SLOT_SECONDS,
        as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
    ) -> None:
        """Show the live cluster: capacity and free resources per node, running jobs."""
        with handle_errors(debug=debug()):
            state = read_cluster_state(
                node_state_source(), clock=clock(), slot_seconds=slot_seconds
            )
            output.show_cluster(state.as_dict(), as_json=as_json)
