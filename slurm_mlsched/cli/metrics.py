"""``mlsub metrics``: the store's figures for Prometheus (issue 29; docs/admin-guide.md,
"Metrics").

Prints the text exposition format, writes it atomically to ``--out FILE`` (for
node_exporter's textfile collector), or serves it on ``--serve PORT``; ``--json`` prints
the same values as JSON. The values come from :mod:`..services.metrics` (pure, from the
store's report rows), the Prometheus families from :mod:`..services.metrics_export`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..api import StoreContext
from ..errors import InputError, MlschedError
from . import output
from .context import Commands, app_context
from .options import AsJson, DbUrl

if TYPE_CHECKING:
    from ..api import MetricValues, QueueBound

commands = Commands()

SERVE = "Scrape endpoint"


@commands.command()
def metrics(
    out: Annotated[
        Path | None,
        typer.Option(
            "--out",
            help="Write to this file (atomically: for node_exporter's textfile collector, "
            "e.g. /var/lib/prometheus/node-exporter/mlsub.prom).",
            show_default=False,
        ),
    ] = None,
    serve_port: Annotated[
        int | None,
        typer.Option(
            "--serve",
            metavar="PORT",
            min=0,
            max=65535,
            help="Serve /metrics on this port until stopped (SIGTERM, Ctrl-C); 0: a free "
            "port, said on standard error.",
            show_default=False,
            rich_help_panel=SERVE,
        ),
    ] = None,
    bind: Annotated[
        str, typer.Option("--bind", help="Address to serve on.", rich_help_panel=SERVE)
    ] = "127.0.0.1",
    serve_seconds: Annotated[
        float | None,
        typer.Option(
            "--serve-seconds",
            min=0,
            help="Stop serving after this long (default: until stopped).",
            show_default=False,
            rich_help_panel=SERVE,
        ),
    ] = None,
    min_interval: Annotated[
        float,
        typer.Option(
            "--min-interval",
            min=0,
            help="Seconds between two reads of the store and Slurm while serving (faster "
            "scrapes get the last values).",
            rich_help_panel=SERVE,
        ),
    ] = 15.0,
    live: Annotated[
        bool,
        typer.Option(
            "--live/--no-live",
            help="Read the live cluster for the queue's plan ÷ bound and the re-plan step "
            "time (without it, or when Slurm does not answer, those are left out).",
        ),
    ] = True,
    cluster_name: Annotated[
        str | None, typer.Option(help="The cluster whose decisions to count.")
    ] = None,
    db_url: DbUrl = None,
    as_json: AsJson = False,
) -> None:
    """Write the decision store's figures in Prometheus's text format.

    Queue length and oldest wait, decisions by state, runtime prediction error by model,
    GPU-seconds planned vs used, the queue's plan ÷ its lower bound and the re-plan step
    time. Admins see every user's decisions, others their own."""
    if serve_port is not None and (out is not None or as_json):
        raise InputError(
            "--serve runs a scrape endpoint; --out and --json write once",
            hint="give --serve PORT alone, or --out FILE / --json without it",
            context={"option": "--serve", "value": str(serve_port)},
        )
    if out is not None and not out.parent.is_dir():
        raise InputError(
            f"--out {out}: directory {out.parent} does not exist",
            hint="create it first, or give another --out",
            context={"option": "--out", "value": str(out)},
        )
    ctx = app_context().store_context(db_url=db_url, cluster_name=cluster_name)

    def compute() -> MetricValues:
        return _values(ctx, live=live)

    from ..api import exposition

    if serve_port is not None:
        _serve(compute, port=serve_port, address=bind, seconds=serve_seconds, every=min_interval)
        return
    values = compute()
    for line in values.notes:
        output.note(line)
    if as_json:
        output.show_json(values.to_json())
        return
    text = exposition(values)
    if out is None:
        output.show_lines(text.decode("utf-8").splitlines())
        return
    from ..files.atomic import write_atomically

    # 0644: node_exporter (its own user) reads it; it holds counts, no user's job details
    write_atomically(out, text, mode=0o644)


def _values(ctx: StoreContext, *, live: bool) -> MetricValues:
    """The store's rows (your own, or everyone's for an admin), and the queue now when
    ``live`` and Slurm answers."""
    from .. import api
    from ..api import metric_values
    from ..storage import HistoryFilter

    now = app_context().clock.now()
    where = HistoryFilter(user=api.own_user(ctx.viewer, None), cluster=ctx.config.cluster_name)
    with app_context().opened(ctx, reading=True) as store:
        rows = store.report_rows(where)
    queue, up, notes = None, False, []
    if live:
        try:
            queue = _queue_now(ctx, now)
            up = True
        except MlschedError as err:
            notes.append(f"the live cluster was not read ({err.message}): no queue-now figures")
    return metric_values(
        rows, now=now, cluster_name=ctx.config.cluster_name, queue=queue, live_up=up, notes=notes
    )


def _queue_now(ctx: StoreContext, now: datetime) -> QueueBound | None:
    from ..api import open_slurm as slurm_access
    from ..api import queue_bound_now, view_preemption
    from .highs_banner import silence_highs_banner

    silence_highs_banner()
    with slurm_access("") as access, app_context().opened(ctx, reading=True) as store:
        state = access.node_state_source().read(now)
        return queue_bound_now(
            store,
            state,
            now=now,
            cluster_name=ctx.config.cluster_name,
            slot_seconds=ctx.config.slot_seconds,
            timer=app_context().clock.monotonic,
            preempt=view_preemption(ctx.config, access.slurm, store),
            gpu_speed=ctx.config.gpu_speed,
        )


def _serve(
    compute: Callable[[], MetricValues],
    *,
    port: int,
    address: str,
    seconds: float | None,
    every: float,
) -> None:
    """Serve until SIGTERM, SIGINT or ``seconds`` (each scrape bounded by the store's and
    Slurm's own timeouts; reads at most once per ``every`` seconds)."""
    from ..api import CachedMetrics as Cached
    from ..api import serve_metrics as serve

    values = Cached(compute, every, app_context().clock.monotonic)
    try:
        serving = serve(values, port=port, address=address)
    except OSError as err:
        raise InputError(
            f"--serve {port}: cannot listen on {address}:{port} ({err.strerror or err})",
            hint="choose another port (0: any free one) or --bind address",
            context={"option": "--serve", "value": str(port)},
        ) from None
    stop = threading.Event()
    previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
    output.note(f"serving http://{serving.address}:{serving.port}/metrics")
    try:
        stop.wait(timeout=seconds)
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        serving.stop()
