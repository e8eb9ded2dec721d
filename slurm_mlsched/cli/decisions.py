"""The decision-store commands: ``release``, ``history``, ``show``, ``explain``, ``export``
and ``db upgrade`` / ``db current``; plus the ``--reserve`` path of ``plan``.

Each command declares its options and calls one service; ``app.py`` adds :data:`commands`
and :data:`db_commands` to the app. The clock, configuration and store come from the root
context object (:func:`~.context.app_context`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..api import Clock, FixedClock, StoreContext
from ..errors import InputError
from . import completion, output
from .context import Commands, app_context
from .highs_banner import silence_highs_banner
from .options import AsJson, DbUrl

if TYPE_CHECKING:  # the services and the store load when a command runs
    from ..api import Explanation, ReservedPlan
    from ..storage import DecisionState, HistoryFilter


DecisionId = Annotated[
    int,
    typer.Argument(help="Decision id (see mlsub history).", autocompletion=completion.decision_ids),
]


commands = Commands()
db_commands = Commands("db", help="The decision store's schema.")


def _package_versions() -> tuple[tuple[str, str], ...]:
    from ..api import package_versions

    return package_versions()


def _ctx(db_url: str | None, **flags: object) -> StoreContext:
    return app_context().store_context(db_url=db_url, **flags)


# --- plan --reserve -------------------------------------------------------------------------


def plan_reserved(
    *,
    script: Path | None,
    cluster: Path,
    overrides: Mapping[str, object],
    clock: Clock,
    cluster_name: str | None,
    db_url: str | None,
) -> ReservedPlan:
    """``mlsub plan --reserve``: plan under the cluster's lock and record the decision."""
    from .. import api

    ctx = _ctx(db_url, cluster_name=cluster_name)
    with app_context().opened(ctx) as store:
        reserved = api.plan_and_reserve(
            script=script,
            cluster=cluster,
            overrides=overrides,
            clock=clock,
            store=store,
            cluster_name=ctx.config.cluster_name,
            viewer=ctx.viewer,
            host=ctx.host,
            packages=_package_versions(),
            config_defaults=dict(ctx.config.job),
        )
    return reserved


# --- commands ----------------------------------------------------------------------------------


@commands.command()
def release(decision_id: DecisionId, db_url: DbUrl = None, as_json: AsJson = False) -> None:
    """Give a planned reservation back (its state becomes 'released')."""
    from .. import api

    ctx = _ctx(db_url)
    with app_context().opened(ctx) as store:
        row = api.release(store, ctx.viewer, decision_id, app_context().clock.now())
        waiting = api.has_queued(store, ctx.config.cluster_name)
    output.show_released(row, as_json=as_json)
    if waiting:  # the capacity given back may start a queued job (issue 19)
        _replan_after_release(db_url)


def _replan_after_release(db_url: str | None) -> None:
    from ..api import ReplanRequest
    from ..api import replan as run_replan
    from ..errors import MlschedError

    try:
        run_replan(ReplanRequest(None, db_url), clock=app_context().clock)
    except MlschedError as err:
        output.note(f"the queue was not re-planned ({err.message}); `mlsub replan` does it")


@commands.command()
def history(
    user: Annotated[str | None, typer.Option(help="Only this user's decisions.")] = None,
    since: Annotated[
        str | None, typer.Option(help="Created at or after: ISO 8601 time, or 30m, 12h, 7d ago.")
    ] = None,
    state: Annotated[str | None, typer.Option(help="Only decisions in this state.")] = None,
    limit: Annotated[int | None, typer.Option(min=1, help="Only the newest N.")] = None,
    db_url: DbUrl = None,
    as_json: AsJson = False,
) -> None:
    """List stored decisions, oldest first (your own; admins see everyone's)."""
    from .. import api

    where = _filter(user, since, state, limit)
    ctx = _ctx(db_url)
    with app_context().opened(ctx, reading=True) as store:
        rows = api.history(store, ctx.viewer, where)
    output.show_history(rows, as_json=as_json)


@commands.command()
def show(decision_id: DecisionId, db_url: DbUrl = None, as_json: AsJson = False) -> None:
    """Show one stored decision: placement, times, solver, state history."""
    from .. import api

    ctx = _ctx(db_url)
    with app_context().opened(ctx, reading=True) as store:
        data = api.show(store, ctx.viewer, decision_id)
    output.show_decision(data, as_json=as_json)


@commands.command()
def explain(
    decision_id: DecisionId,
    db_url: DbUrl = None,
    as_json: AsJson = False,
    trials: Annotated[
        bool, typer.Option("--trials", help="Every rounding trial (default: each outcome once).")
    ] = False,
) -> None:
    """Why a decision is what it is, and a re-solve from its stored inputs.

    A queued job: its place in the queue now and its estimated start. A running job where
    the site preempts: whether the next re-plan would pause it."""
    from .. import api

    silence_highs_banner()
    ctx = _ctx(db_url)
    with app_context().opened(ctx, reading=True) as store:
        data = api.explain(store, ctx.viewer, decision_id)
        state = store.get(decision_id).state.value
    if state == "queued":
        data = _why_it_waits(data, decision_id, db_url, ctx.viewer.is_admin)
    elif state in ("submitted", "running") and ctx.config.preempt:
        data = _pause_ahead(data, decision_id, db_url, ctx.viewer.is_admin)
    output.show_explanation(data, as_json=as_json, all_trials=trials)


def _pause_ahead(
    data: Explanation, decision_id: int, db_url: str | None, admin: bool
) -> Explanation:
    """A running decision where the site preempts (``preempt = true``): whether the next
    re-plan would checkpoint and requeue it, from the same view as ``mlsub queue``
    (nothing is paused)."""
    from dataclasses import replace

    from ..api import ReplanRequest
    from ..api import queue as run_queue
    from ..errors import MlschedError

    try:
        view = run_queue(ReplanRequest(None, db_url), clock=app_context().clock, everyone=admin)
    except MlschedError as err:
        line = f"running; the site preempts, and the live cluster could not be read ({err.message})"
        return replace(data, why=(line, *data.why))
    p = next((p for p in view.would_pause if p.decision_id == decision_id), None)
    if p is None:
        line = "running; the site preempts, and a re-plan now would not pause it"
        return replace(data, why=(line, *data.why))
    restart = (
        ""
        if p.estimated_restart is None
        else f"; estimated restart {p.estimated_restart:%m-%d %H:%M} UTC"
    )
    line = (
        f"running: the next re-plan would {p.kind} it (checkpoint signal, requeue held): "
        f"{p.reason}{restart} (mlsub queue)"
    )
    return replace(data, why=(line, *data.why), would_pause=p.to_json())


def _why_it_waits(
    data: Explanation, decision_id: int, db_url: str | None, admin: bool
) -> Explanation:
    """A queued decision (late binding): its place in the queue now and what it waits for,
    from a re-plan step over the live cluster (nothing is started); the plan shown below
    is its tentative plan at submission."""
    from dataclasses import replace

    from ..api import QueuePlace, ReplanRequest
    from ..api import queue as run_queue
    from ..errors import MlschedError

    try:
        view = run_queue(ReplanRequest(None, db_url), clock=app_context().clock, everyone=admin)
    except MlschedError as err:
        line = (
            "queued: it waits held in Slurm and holds nothing; where it stands needs the "
            f"live cluster ({err.message})"
        )
        return replace(data, why=(line, *data.why), queue=None, queue_unknown=True)
    rows = [w for w in (*view.would_start, *view.waiting) if w.decision_id == decision_id]
    if not rows:
        return data
    w = rows[0]
    where = (
        "can start now (the next re-plan starts it)"
        if w.position == 0
        else (f"position {w.position} in the queue: {w.reason}")
    )
    line = f"queued (held Slurm job {w.slurm_job_id}, holding nothing): {where}"
    lines = (
        line,
        output.estimate_line(w.estimate),
        output.bound_line(view.bound, view.bound_reason),
    )
    place = QueuePlace(
        w.position, w.reason, w.estimated_start, w.estimate, view.bound, view.bound_reason
    )
    return replace(data, why=(*lines, *data.why), queue=place)


@commands.command()
def export(
    fmt: Annotated[str, typer.Option("--format", help="csv or json.")] = "json",
    user: Annotated[str | None, typer.Option(help="Only this user's decisions.")] = None,
    since: Annotated[str | None, typer.Option(help="As for history.")] = None,
    state: Annotated[str | None, typer.Option(help="As for history.")] = None,
    db_url: DbUrl = None,
) -> None:
    """Export decisions: JSON (everything, solver inputs included) or CSV (one row each)."""
    from .. import api

    if fmt not in ("csv", "json"):
        raise InputError(
            f"option --format must be csv or json, got {fmt!r}",
            hint="write --format csv or --format json",
            context={"option": "--format", "value": fmt},
        )
    where = _filter(user, since, state, None)
    ctx = _ctx(db_url)
    with app_context().opened(ctx, reading=True) as store:
        use_case = api.export if fmt == "json" else api.history
        rows = use_case(store, ctx.viewer, where)
    output.show_export(rows, fmt=fmt)


@commands.command()
def calibrate(
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            help="Only this model (repeat for several; default: all).",
            autocompletion=completion.models,
        ),
    ] = None,
    min_samples: Annotated[
        int, typer.Option(help="Fewest completed runs a model's fit is made from.", min=1)
    ] = 5,
    reset: Annotated[
        bool, typer.Option("--reset", help="Go back to the shipped profiles (factor 1).")
    ] = False,
    cluster_name: Annotated[
        str | None, typer.Option(help="The cluster whose decisions to fit from.")
    ] = None,
    db_url: DbUrl = None,
    as_json: AsJson = False,
) -> None:
    """Fit each model's speed from completed runs; later plans use the fit (admins)."""
    from ..api import calibrate as run

    ctx = _ctx(db_url, cluster_name=cluster_name)
    if not ctx.viewer.is_admin:
        raise InputError(
            "mlsub calibrate changes every user's plans: admins only",
            hint="ask an admin (the site file's admins, or root) to run it",
            context={"user": ctx.viewer.user},
        )
    with app_context().opened(ctx) as store:
        report = run(
            store,
            cluster_name=ctx.config.cluster_name,
            now=app_context().clock.now(),
            by=ctx.viewer.user,
            min_samples=min_samples,
            models=tuple(model or ()),
            reset=reset,
        )
    output.show_calibration(report, as_json=as_json)


@commands.command()
def report(
    out: Annotated[
        Path, typer.Option("--out", help="Directory to write report.html into.", show_default=False)
    ],
    user: Annotated[str | None, typer.Option(help="Only this user's decisions.")] = None,
    since: Annotated[str | None, typer.Option(help="Created at or after (as for history).")] = None,
    until: Annotated[str | None, typer.Option(help="Created before (a time or an age).")] = None,
    cluster_name: Annotated[str | None, typer.Option(help="Only this cluster's.")] = None,
    db_url: DbUrl = None,
    as_json: AsJson = False,
) -> None:
    """Write the decision history as one self-contained HTML page.

    Timeline, predicted vs actual runtimes, queue length, GPU-hours; filters that work
    offline."""
    from .. import api
    from ..api import write_report
    from ..storage import HistoryFilter

    now = app_context().clock.now()
    ctx = _ctx(db_url, cluster_name=cluster_name)
    where = HistoryFilter(
        user=api.own_user(ctx.viewer, user),
        since=None if since is None else parse_since(since, now),
        until=None if until is None else parse_since(until, now, option="--until"),
        cluster=ctx.config.cluster_name,
    )
    if not out.is_dir():
        raise InputError(
            f"--out {out} is not a directory",
            hint="create it first (mkdir -p), or give another --out",
            context={"option": "--out", "value": str(out)},
        )
    with app_context().opened(ctx, reading=True) as store:
        rows = store.report_rows(where)
        fits = store.profile_fits(ctx.config.cluster_name)
    filters = {
        k: v for k, v in (("user", where.user), ("since", since), ("until", until)) if v is not None
    }
    written = write_report(
        out, rows, now=now, cluster_name=ctx.config.cluster_name, filters=filters, fits=fits
    )
    output.show_report(written, as_json=as_json)


@db_commands.command("upgrade")
def db_upgrade(db_url: DbUrl = None, as_json: AsJson = False) -> None:
    """Upgrade the decision store's schema to this mlsub's (creating it if empty)."""
    from .. import api

    ctx = _ctx(db_url)
    data = api.db_upgrade(ctx.url, busy_timeout_s=ctx.config.db_busy_timeout_s)
    output.show_db_upgrade(data, as_json=as_json)


@db_commands.command("current")
def db_current(db_url: DbUrl = None, as_json: AsJson = False) -> None:
    """Show the decision store's schema revision and the one this mlsub needs."""
    from .. import api

    ctx = _ctx(db_url)
    data = api.db_current(ctx.url, busy_timeout_s=ctx.config.db_busy_timeout_s)
    output.show_db_current(data, as_json=as_json)


# --- option parsing -----------------------------------------------------------------------------

_AGO = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def _filter(
    user: str | None, since: str | None, state: str | None, limit: int | None
) -> HistoryFilter:
    from ..storage import HistoryFilter

    return HistoryFilter(
        user=user,
        since=None if since is None else parse_since(since, app_context().clock.now()),
        state=None if state is None else parse_state(state),
        limit=limit,
    )


def parse_since(text: str, now: datetime, *, option: str = "--since") -> datetime:
    """``7d``, ``12h``, ``30m``, ``90s`` before ``now``, or an ISO 8601 time (naive = UTC)."""
    match = _AGO.match(text)
    if match:
        return now - timedelta(seconds=int(match.group(1)) * _UNIT[match.group(2)])
    try:
        return FixedClock.from_iso(text).now()
    except ValueError:
        raise InputError(
            f"option {option} must be a time or an age, got {text!r}",
            hint=f"write e.g. {option} 2026-03-01T00:00:00Z or {option} 7d (also 12h, 30m)",
            context={"option": option, "value": text},
        ) from None


def parse_state(text: str) -> DecisionState:
    from ..storage import DecisionState

    try:
        return DecisionState(text.strip().lower())
    except ValueError:
        valid = ", ".join(s.value for s in DecisionState)
        raise InputError(
            f"option --state must be a decision state, got {text!r}",
            hint=f"choose one of: {valid}",
            context={"option": "--state", "value": text},
        ) from None
