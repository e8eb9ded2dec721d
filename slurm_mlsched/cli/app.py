"""``mlsub``: the Typer commands. Each one declares its options and calls one service.

Wiring (the only place adapters are picked):

* the root callback puts the one :class:`~.context.AppContext` on ``ctx.obj``: the clock
  (:class:`~slurm_mlsched.services.clock.WallClock`, or a
  :class:`~slurm_mlsched.services.clock.FixedClock` at ``MLSUB_FIXED_NOW``, an ISO 8601
  time: for tests and reproducible output), the debug switch (``MLSUB_DEBUG=1`` lets
  unexpected exceptions through with their traceback), configuration and the store;
* every module declares its commands on a :class:`~.context.Commands` and this module
  adds them all (:data:`DECLARED`); each command is wrapped once in the error handling;
* a command that may solve (plan, submit, explain, replay) first uses up HiGHS's
  once-per-process start-up banner with stdout pointed at /dev/null
  (:mod:`.highs_banner`), so ``--json`` stays pure JSON;
* start-up stays light: this module and the command modules import typer, rich and the
  project's light modules; each command imports its services (the store, the solver, the
  renderers) in its body (``tests/cli/test_cli_startup.py``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated

import typer

from .. import __version__
from ..config import DEFAULT_STALE_AFTER_S
from ..errors import InputError, JobDidNotComplete
from . import cluster as cluster_cli
from . import completion, output
from . import decisions as decisions_cli
from . import metrics as metrics_cli
from . import plugins as plugins_cli
from . import remote as remote_cli
from . import replay as replay_cli
from . import replay_slurm as replay_slurm_cli
from .context import AppContext, Commands, app_context
from .highs_banner import silence_highs_banner
from .job_flags import with_job_options
from .options import DB_URL_HELP, RemoteOption

app = typer.Typer(
    name="mlsub",
    help="Place distributed ML training jobs (workers + parameter servers) on Slurm.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion (cli/completion.py)
    pretty_exceptions_show_locals=False,
)

JOB = "Job options (override the script's '# mlsub:' header)"
POLICY = "Placement"
STORE = "Decision store"


def _show_version(value: bool) -> None:
    if value:
        output.show_version(__version__)
        raise typer.Exit()


commands = Commands()


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_show_version,
            is_eager=True,
            metavar="",  # a plain flag in --help (Typer would print <bool>)
            help="Print the version.",
        ),
    ] = False,
) -> None:
    """Place distributed ML training jobs (workers + parameter servers) on Slurm."""
    ctx.obj = AppContext(dict(os.environ))


# --- job options, shared by plan and submit ----------------------------------------------------

ClusterName = Annotated[
    str | None, typer.Option(help="Cluster the decision is kept under.", rich_help_panel=STORE)
]
DbUrl = Annotated[str | None, typer.Option("--db-url", help=DB_URL_HELP, rich_help_panel=STORE)]
AsJson = Annotated[bool, typer.Option("--json", help="Print as JSON.")]
ScriptArgs = Annotated[
    list[str] | None,
    typer.Argument(help="Arguments for the program, after --.", show_default=False),
]


@commands.command()
@with_job_options
def plan(
    script: Annotated[
        Path | None,
        typer.Argument(help="Job script; its '# mlsub:' header lines are read."),
    ] = None,
    cluster: Annotated[
        Path | None,
        typer.Option(
            "--cluster",
            "-c",
            help="Cluster file (YAML). Without it: the live Slurm cluster (needs SCRIPT).",
            show_default=False,
        ),
    ] = None,
    as_json: AsJson = False,
    reserve: Annotated[
        bool,
        typer.Option(
            "--reserve",
            help="Plan around the decision store's reservations and record this decision "
            "as 'planned' (its JSON then carries decision_id). Needs --cluster.",
            rich_help_panel=STORE,
        ),
    ] = False,
    for_sbatch: Annotated[
        bool,
        typer.Option(
            "--for-sbatch",
            help="For the cli_filter plugin: place SCRIPT on the live cluster, record the "
            "decision for the user's own sbatch, print KEY=VALUE lines "
            "(docs/admin-plugins.md).",
            rich_help_panel=STORE,
        ),
    ] = False,
    cluster_name: ClusterName = None,
    db_url: DbUrl = None,
    remote: RemoteOption = None,
    args: ScriptArgs = None,
    job_options: Mapping[str, object] | None = None,
) -> None:
    """Plan where and when a job would run (nothing is submitted).

    On the cluster file given with --cluster, or on the live Slurm cluster: a dry run of
    submit that shows the decision and the sbatch script and records nothing.
    """
    overrides = dict(job_options or {})
    if cluster is None and not for_sbatch and (script is None or reserve):  # usage: exit 2
        raise typer.BadParameter(
            "plan needs --cluster FILE"
            + (" with --reserve" if reserve else ", or a SCRIPT to plan on the live cluster"),
            param_hint="'--cluster'",
        )
    if remote is not None and cluster is not None:
        raise typer.BadParameter(
            "--remote plans on the live cluster behind a login node; --cluster plans offline",
            param_hint="'--remote'",
        )
    silence_highs_banner()
    from ..api import LiveRequest
    from ..api import plan_for_sbatch as run_for_sbatch
    from ..api import submit as run_submit

    if for_sbatch:
        if script is None or cluster is not None:
            raise InputError(
                "--for-sbatch needs SCRIPT and plans on the live cluster (no --cluster)",
                hint="the cli_filter plugin calls: mlsub plan --for-sbatch SCRIPT",
            )
        placed = run_for_sbatch(
            LiveRequest(script, (), overrides, cluster_name, db_url), clock=app_context().clock
        )
        output.show_lines(placed.lines())
        return
    if cluster is None:
        assert script is not None
        outcome, _ = run_submit(
            LiveRequest(script, tuple(args or ()), overrides, cluster_name, db_url, remote),
            clock=app_context().clock,
            dry_run=True,
        )
        output.show_submitted(outcome, as_json=as_json, show_script=True)
        return
    if reserve:
        from .decisions import plan_reserved

        reserved = plan_reserved(
            script=script,
            cluster=cluster,
            overrides=overrides,
            clock=app_context().clock,
            cluster_name=cluster_name,
            db_url=db_url,
        )
        output.show_reserved(reserved, as_json=as_json)
        return
    from ..api import plan as plan_from_files

    config = app_context().config(cluster_name=cluster_name)
    result = plan_from_files(
        script=script,
        cluster=cluster,
        overrides=overrides,
        clock=app_context().clock,
        config_defaults=dict(config.job),
    )
    output.show_plan(result, as_json=as_json)


@commands.command()
@with_job_options
def submit(
    script: Annotated[
        Path, typer.Argument(help="Training script; its '# mlsub:' header lines are read.")
    ],
    args: ScriptArgs = None,
    show_script: Annotated[
        bool, typer.Option("--show-script", help="Also print the sbatch script.")
    ] = False,
    wait: Annotated[
        bool,
        typer.Option(
            "--wait",
            help="Wait until the job ends; exit 0 if it completed, 9 if it failed or was "
            "cancelled.",
        ),
    ] = False,
    as_json: AsJson = False,
    cluster_name: ClusterName = None,
    db_url: DbUrl = None,
    remote: RemoteOption = None,
    job_options: Mapping[str, object] | None = None,
) -> None:
    """Place a job on the live cluster, record the decision, submit it (mlsub SCRIPT).

    Arguments after -- go to the program verbatim.
    """
    overrides = dict(job_options or {})
    silence_highs_banner()
    from ..api import LiveRequest
    from ..api import submit as run_submit
    from ..storage.states import DecisionState

    with output.waiting(enabled=wait and not as_json) as progress:
        outcome, final = run_submit(
            LiveRequest(script, tuple(args or ()), overrides, cluster_name, db_url, remote),
            clock=app_context().clock,
            dry_run=False,
            wait=progress if wait else None,
            notify=output.note,
        )
    if final is not None:
        outcome = replace(outcome, final=final)
    output.show_submitted(outcome, as_json=as_json, show_script=show_script)
    if final is not None and final != DecisionState.COMPLETED:
        raise JobDidNotComplete(
            f"Slurm job {outcome.slurm_job_id} ended {final.value}",
            hint=f"see its output file and: mlsub show {outcome.decision_id}",
            context={"decision_id": outcome.decision_id, "state": final.value},
        )


@commands.command("reconcile")
def reconcile_cmd(
    decision_ids: Annotated[
        list[int] | None,
        typer.Argument(
            help="Only these decisions (default: every open one you may manage).",
            autocompletion=completion.decision_ids,
        ),
    ] = None,
    stale_after: Annotated[
        float,
        typer.Option(
            help="For a decision still 'submitting' whose submitting process cannot be "
            "checked from here (it ran on another host): seconds after which, with no "
            "Slurm job carrying its tag, it is marked submit-failed. On the submitting "
            "host, a submission is failed only once its process is gone.",
            min=0,
        ),
    ] = DEFAULT_STALE_AFTER_S,
    as_json: AsJson = False,
    cluster_name: ClusterName = None,
    db_url: DbUrl = None,
    remote: RemoteOption = None,
) -> None:
    """Bring open decisions up to date with what Slurm did (squeue, then sacct).

    Decisions move to submitted, running, completed/failed/cancelled, or submit-failed
    when a submission stopped before it reached Slurm (its process is gone). A
    submit-failed decision whose job turns up after all is repaired.
    """
    from ..api import reconcile as run_reconcile

    report = run_reconcile(
        clock=app_context().clock,
        cluster_name=cluster_name,
        db_url=db_url,
        stale_after_s=stale_after,
        decision_ids=decision_ids or (),
        remote=remote,
    )
    output.show_reconciled(report, as_json=as_json)


@commands.command()
def replan(
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="Print nothing unless something fails.")
    ] = False,
    as_json: AsJson = False,
    cluster_name: ClusterName = None,
    db_url: DbUrl = None,
) -> None:
    """Re-plan the queue of waiting (held) jobs and start those that can start now.

    Run by every submit and release, by slurmctld's EpilogSlurmctld at every job end
    (plugins/epilog_slurmctld.sh) and periodically as a safety net; safe to run at any
    time and from several hosts at once (one store lock).
    """
    silence_highs_banner()
    from ..api import ReplanRequest
    from ..api import replan as run_replan

    report = run_replan(ReplanRequest(cluster_name, db_url), clock=app_context().clock)
    output.show_replanned(report, as_json=as_json, quiet=quiet)


@commands.command()
def queue(
    everyone: Annotated[
        bool, typer.Option("--all", help="Every user's queued jobs (admins only).")
    ] = False,
    as_json: AsJson = False,
    cluster_name: ClusterName = None,
    db_url: DbUrl = None,
) -> None:
    """List your jobs waiting in mlsub's queue: position, estimated start, what they wait for.

    Where the site preempts (preempt = true), also the running jobs the next re-plan
    would checkpoint and requeue, and their estimated restart; nothing is paused here."""
    silence_highs_banner()
    from ..api import ReplanRequest
    from ..api import queue as run_queue

    view = run_queue(
        ReplanRequest(cluster_name, db_url), clock=app_context().clock, everyone=everyone
    )
    output.show_queue(view, as_json=as_json)


@commands.command()
def policies(
    as_json: Annotated[bool, typer.Option("--json", help="Print as JSON.")] = False,
) -> None:
    """List the placement policies."""
    from ..api import policies as list_policies

    output.show_policies(list_policies(), as_json=as_json)


#: Every command of mlsub, by the module that declares it.
DECLARED = (
    commands,
    decisions_cli.commands,
    decisions_cli.db_commands,
    metrics_cli.commands,
    cluster_cli.commands,
    replay_cli.commands,
    replay_slurm_cli.commands,
    plugins_cli.commands,
    remote_cli.commands,
)
for _declared in DECLARED:
    _declared.add_to(app)


def main() -> None:
    click_style_completion(os.environ)
    app(args=shorthand(sys.argv[1:]), prog_name="mlsub")


COMPLETE_ENV = "_MLSUB_COMPLETE"


def click_style_completion(env: dict[str, str] | os._Environ[str]) -> None:
    """Click names the completion request ``SHELL_INSTRUCTION`` (``bash_complete``),
    Typer, whose scripts ``--install-completion`` installs, ``INSTRUCTION_SHELL``
    (``complete_bash``): a request in Click's order is turned into Typer's, so scripts
    written for either work."""
    shell, _, instruction = env.get(COMPLETE_ENV, "").partition("_")
    if shell in ("bash", "zsh", "fish") and instruction in ("complete", "source"):
        env[COMPLETE_ENV] = f"{instruction}_{shell}"


def shorthand(argv: list[str]) -> list[str]:
    """``mlsub train.py [...]`` is ``mlsub submit train.py [...]``: a first argument that
    is no command or option but an existing file, or reads as a path (has a ``/`` or a
    ``.``: submit then says the file is missing, rather than "No such command").

    A leading ``--remote TARGET`` (or ``--remote=TARGET``) moves behind the command, where
    Typer reads it: ``mlsub --remote X train.py`` is ``mlsub submit --remote X train.py``,
    ``mlsub --remote X reconcile`` is ``mlsub reconcile --remote X``."""
    lead, rest = _leading_remote(argv)
    first = rest[0] if rest else ""
    if first and not first.startswith("-") and first not in _command_names():
        # a file, or what reads as a path (train.py, ./run, jobs/x.sh): submit says
        # clearly when it is missing; a bare word stays a (mistyped) command
        looks_like_path = "/" in first or "." in first
        return ["submit", *lead, *rest] if Path(first).is_file() or looks_like_path else argv
    if lead and first in _command_names():
        return [first, *lead, *rest[1:]]
    return argv


def _leading_remote(argv: list[str]) -> tuple[list[str], list[str]]:
    """The ``--remote`` options before the first other argument, and the rest."""
    i = 0
    while i < len(argv):
        if argv[i].startswith("--remote="):
            i += 1
        elif argv[i] == "--remote" and i + 1 < len(argv):
            i += 2
        else:
            break
    return argv[:i], argv[i:]


def _command_names() -> set[str]:
    names = {c.name or (c.callback.__name__ if c.callback else "") for c in app.registered_commands}
    names |= {g.name or "" for g in app.registered_groups}
    return names
