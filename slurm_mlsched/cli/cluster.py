"""``mlsub cluster``: the live cluster as the placement sees it (nodes, free capacity now,
running jobs, excluded nodes).

Wiring: the Slurm commands run here or, with ``--remote`` (or the config's ``remote``), on
a login node over SSH (:mod:`.slurm_access`, which also picks the node state source:
pyslurm when it matches the cluster's Slurm, else the Slurm commands; over SSH always the
commands; ``MLSUB_SLURM_SOURCE`` overrides it).
"""

from __future__ import annotations

from typing import Annotated

import typer

from . import output
from .context import Commands, app_context
from .options import AsJson, DbUrl, RemoteOption

commands = Commands()


@commands.command()
def cluster(
    slot_seconds: Annotated[
        float | None,
        typer.Option(
            help="Δ, seconds per slot, for the reservations' slots (default: the "
            "config's slot_seconds, 60).",
            min=1,
        ),
    ] = None,
    as_json: AsJson = False,
    remote: RemoteOption = None,
    slurm_only: Annotated[
        bool,
        typer.Option(
            "--slurm-only",
            help="Leave out the decision store's reservations (Slurm's jobs only).",
        ),
    ] = False,
    cluster_name: Annotated[
        str | None, typer.Option(help="Cluster name the decisions are kept under.")
    ] = None,
    db_url: DbUrl = None,
) -> None:
    """Show the live cluster: free resources per node, running jobs, reservations.

    Capacity and free resources per node, the jobs Slurm runs, and the decision store's
    reservations."""
    from ..api import open_slurm as slurm_access

    ctx = app_context().store_context(db_url=db_url, cluster_name=cluster_name, remote=remote)
    config = ctx.config
    slot = slot_seconds or config.slot_seconds
    with slurm_access(config.remote, remote_dir=config.remote_dir) as access:
        from ..api import cluster_view, read_cluster_state

        source = access.node_state_source()
        if slurm_only:
            state = read_cluster_state(source, clock=app_context().clock, slot_seconds=slot)
        else:
            with app_context().opened(ctx) as store:
                state = cluster_view(
                    source,
                    store,
                    clock=app_context().clock,
                    cluster_name=config.cluster_name,
                    slot_seconds=slot,
                )
    output.show_cluster(state, as_json=as_json)
