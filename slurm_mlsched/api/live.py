"""The live use cases, wired to the configured adapters: submit (``mlsub submit``, also
``mlsub SCRIPT``), the live plan for the user's own sbatch (``mlsub plan --for-sbatch``),
reconcile, replan and the queue (``mlsub reconcile``, ``replan``, ``queue``).

Wiring: the Slurm commands run here or on the configured remote login node over SSH
(:func:`.slurm_access.slurm_access`: one connection for the whole call, opened before
anything is planned, closed at the end), which also gives the node state source and the
submitter (``sbatch`` on stdin here; over SSH the files are staged on the login node
first); the configured decision store (:mod:`.store_access`, always local); the slot
length Δ and the cluster name from the configuration; the job option defaults from its
``[job]`` table. Nothing here prints: a caller that wants to hear of a tolerated Slurm
failure while it waits passes ``notify``.
"""

from __future__ import annotations

import os
import pwd
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import DEFAULT_STALE_AFTER_S, Config
from ..errors import InputError, MlschedError, SlurmError
from ..files.job_options import JobOptions, merge_options, read_script_header
from ..files.job_script import JobScript
from ..files.sbatch_lines import read_sbatch_header
from ..services.clock import Clock
from ..services.for_sbatch import SbatchPlacement, plan_for_sbatch
from ..services.live_queue import LiveWiring
from ..services.process_id import this_process
from ..services.provenance import package_versions
from ..services.reconcile import ReconcileReport, reconcile, wait_for
from ..services.submit import SbatchSubmitter, SubmitOutcome, submit_job
from ..services.viewer import Viewer
from ..slurm.transient import Blips
from ..storage import DecisionState, SqlDecisionStore
from .slurm_access import SlurmAccess, slurm_access
from .store_access import StoreContext, context, opened

if TYPE_CHECKING:  # the re-plan loads when a command runs it
    from ..services.preempt import LivePreemption, PreemptSettings
    from ..services.replan import QueueView, ReplanReport, SlurmStarter, ViewPreemption
    from ..slurm.runner import SlurmCommands
    from ..storage import DecisionStore


@dataclass(frozen=True)
class LiveRequest:
    script: Path
    script_args: tuple[str, ...]
    overrides: Mapping[str, object]
    cluster_name: str | None
    db_url: str | None
    remote: str | None = None


@dataclass(frozen=True)
class _Live:
    wiring: LiveWiring
    opts: JobOptions
    script: Path
    refresh: Callable[..., object]
    access: SlurmAccess


@contextmanager
def _live(request: LiveRequest, clock: Clock, *, refresh_first: bool) -> Iterator[_Live]:
    """The job's options and the live wiring (Slurm here or over SSH, the configured
    store) for one command; the store and any SSH connection close at the end."""
    path = request.script.expanduser()
    if not path.is_file():
        raise InputError(
            f"job script {request.script} does not exist or is not a file",
            hint="give the path of the training script, e.g. mlsub train.py",
            context={"file": str(request.script)},
        )
    ctx = context(
        {"db_url": request.db_url, "cluster_name": request.cluster_name, "remote": request.remote}
    )
    opts = merge_options(
        read_script_header(path),
        request.overrides,
        header_source=f"{path} '# mlsub:' header",
        config_defaults=dict(ctx.config.job),
        sbatch_header=read_sbatch_header(path),
    )
    with (
        slurm_access(ctx.config.remote, remote_dir=ctx.config.remote_dir) as access,
        opened(ctx) as store,
    ):
        refresh = _refresher(access, store, ctx, clock)
        submitter = access.submitter(ctx.config.cluster_name)
        wiring = LiveWiring(
            refresh=refresh if refresh_first else None,
            source=access.node_state_source(),
            store=store,
            clock=clock,
            submitter=submitter,
            cluster_name=ctx.config.cluster_name,
            slot_seconds=ctx.config.slot_seconds,
            gpu_speed=ctx.config.gpu_speed,
            viewer=ctx.viewer,
            host=ctx.host,
            packages=package_versions(),
            reconcile_command=access.reconcile_command,
            process=str(this_process(remote=access.session is not None)),
            slurm_user=_slurm_user(access),
            held_submitter=submitter if isinstance(submitter, SbatchSubmitter) else None,
            env_dir=queued_env_dir(os.environ),
        )
        yield _Live(wiring, opts, path.resolve(), refresh, access)


def run_submit(
    request: LiveRequest,
    *,
    clock: Clock,
    dry_run: bool,
    wait: Callable[[str], None] | None = None,
    notify: Callable[[str], None] | None = None,
) -> tuple[SubmitOutcome, DecisionState | None]:
    """Read the job, wire the adapters, and submit (or plan only). With ``wait``, block
    until the job ended (``wait`` is called with each state seen) and return its state;
    ``notify`` hears of each Slurm failure the wait tolerated (one line)."""
    with _live(request, clock, refresh_first=not dry_run) as live:
        job = JobScript(live.script, tuple(request.script_args))
        outcome = submit_job(live.wiring, live.opts, job, dry_run=dry_run)
        if not dry_run and outcome.record is not None:
            outcome = _then_replan(live, outcome)
        if wait is None or outcome.record is None:
            return outcome, None
        decision_id = outcome.record.decision_id
        store = live.wiring.store

        def poll() -> DecisionState:
            live.refresh([decision_id], accounting=True)
            state = store.get(decision_id).state
            if state == DecisionState.QUEUED:
                # waiting here is an event source too: the job starts without an epilog
                # (a failed re-plan is retried at the next poll)
                _then_replan(live, outcome)
                state = store.get(decision_id).state
            wait(state.value)
            return state

        final = wait_for(
            decision_id, poll=poll, sleep=time.sleep, blips=Blips(notify=_blip_note(notify))
        )
        # a queued job started on another layout was submitted again: its last job id
        last = store.get(decision_id).summary.slurm_job_id
        return replace(outcome, slurm_job_id=last or outcome.slurm_job_id), final


def _blip_note(notify: Callable[[str], None] | None) -> Callable[[SlurmError, int], None]:
    """What a poll does when it tolerated a transient Slurm failure: one line to
    ``notify`` (the CLI prints it on standard error)."""

    def note(err: SlurmError, in_a_row: int) -> None:
        if notify is not None:
            said = err.message.splitlines()[0]
            notify(f"reading the job's state failed ({said}); trying again ({in_a_row} in a row)")

    return note


def queued_env_dir(env: Mapping[str, str]) -> Path:
    """Where a queued job's environment is kept until a re-plan submits it: the user's
    XDG state directory (``~/.local/state/mlsched/queued-env``), mode 0700."""
    base = env.get("XDG_STATE_HOME") or str(
        Path(env.get("HOME", "~")).expanduser() / ".local/state"
    )
    return Path(base) / "mlsched" / "queued-env"


def _then_replan(live: _Live, outcome: SubmitOutcome) -> SubmitOutcome:
    """Every submission is an event of the queue: re-plan it (starts what the new job's
    arrival does not delay; issue 19). A failure here is a warning: the job is submitted."""
    if live.access.session is not None:
        return outcome
    from ..services.decisions import has_queued
    from ..services.replan import SlurmStarter, replan

    if not has_queued(live.wiring.store, live.wiring.cluster_name):
        return outcome

    try:
        replan(replace(live.wiring, refresh=None), SlurmStarter(live.access.slurm))
    except MlschedError as err:
        return replace(
            outcome,
            warnings=(*outcome.warnings, f"the queue was not re-planned: {err.message}"),
        )
    return outcome


def _slurm_user(access: SlurmAccess) -> str:
    """Whom Slurm will say the job belongs to: the SSH user of a remote submission, else
    the effective Unix user here (not ``MLSUB_AS_USER``: root acting as someone else
    still submits as root)."""
    if access.session is not None:
        return access.session.target.user
    return pwd.getpwuid(os.geteuid()).pw_name


def _refresher(
    access: SlurmAccess, store: SqlDecisionStore, ctx: StoreContext, clock: Clock
) -> Callable[..., object]:
    """Brings the cluster's open decisions up to date from Slurm (any user's: Slurm's
    facts update anyone's rows); ``squeue`` only unless ``accounting``."""
    system = Viewer(ctx.viewer.user, is_admin=True)

    def refresh(decision_ids: Sequence[int] = (), accounting: bool = False) -> object:
        return reconcile(
            store=store,
            reader=access.job_status_reader(),
            clock=clock,
            cluster_name=ctx.config.cluster_name,
            viewer=system,
            decision_ids=decision_ids,
            accounting=accounting,
        )

    return refresh


def run_reconcile(
    *,
    clock: Clock,
    cluster_name: str | None,
    db_url: str | None,
    stale_after_s: float = DEFAULT_STALE_AFTER_S,
    decision_ids: Sequence[int] = (),
    remote: str | None = None,
) -> ReconcileReport:
    """``mlsub reconcile``: bring the open decisions up to date from Slurm and, on local
    Slurm, finish the starts a stopped re-plan left."""
    ctx = context({"db_url": db_url, "cluster_name": cluster_name, "remote": remote})
    with (
        slurm_access(ctx.config.remote, remote_dir=ctx.config.remote_dir) as access,
        opened(ctx) as store,
    ):
        report = reconcile(
            store=store,
            reader=access.job_status_reader(),
            clock=clock,
            cluster_name=ctx.config.cluster_name,
            viewer=Viewer(ctx.viewer.user, ctx.viewer.is_admin),
            stale_after_s=stale_after_s,
            decision_ids=decision_ids,
        )
        if access.session is None:  # finish the starts a stopped re-plan left (issue 19)
            from ..services.replan import SlurmStarter, cancel_replaced, finish_starts

            starter = SlurmStarter(access.slurm)
            name = ctx.config.cluster_name
            report = report.noting(
                *finish_starts(store, starter, name, clock.now()),
                *cancel_replaced(store, starter, name),
            )
    return report


def run_for_sbatch(request: LiveRequest, *, clock: Clock) -> SbatchPlacement:
    """``mlsub plan --for-sbatch SCRIPT``: place on the live cluster and record the decision
    for the user's own sbatch (services/for_sbatch.py)."""
    with _live(request, clock, refresh_first=True) as live:
        return plan_for_sbatch(live.wiring, live.opts, live.script)


@dataclass(frozen=True)
class ReplanRequest:
    cluster_name: str | None
    db_url: str | None


def run_replan(request: ReplanRequest, *, clock: Clock) -> ReplanReport:
    """``mlsub replan``: reconcile from squeue, re-plan the queue, start what can start
    (services/replan.py). Local Slurm only (the epilog and the safety net run on a host
    with the Slurm commands)."""
    from ..services.replan import SlurmStarter, replan

    ctx = context({"db_url": request.db_url, "cluster_name": request.cluster_name})
    with slurm_access("") as access, opened(ctx) as store:
        refresh = _refresher(access, store, ctx, clock)
        wiring = LiveWiring(
            refresh=refresh,
            source=access.node_state_source(),
            store=store,
            clock=clock,
            submitter=access.submitter(ctx.config.cluster_name),
            cluster_name=ctx.config.cluster_name,
            slot_seconds=ctx.config.slot_seconds,
            gpu_speed=ctx.config.gpu_speed,
            viewer=ctx.viewer,
            host=ctx.host,
            process=str(this_process()),
        )
        starter = SlurmStarter(access.slurm)
        return replan(wiring, starter, preempt=_preemption(ctx.config, starter))


def _preemption(config: Config, starter: SlurmStarter) -> LivePreemption | None:
    """The site's checkpoint-restart preemption for ``mlsub replan`` (config ``preempt``,
    docs/formulation.md §16 "Live"), or None when it is off. Only ``mlsub replan`` (the
    epilog, the safety net, an admin) preempts: a submission's own re-plan stays quick."""
    from ..services.preempt import LivePreemption

    if not config.preempt:
        return None
    return LivePreemption(starter, preempt_settings(config))


def preempt_settings(config: Config) -> PreemptSettings:
    """The site's preemption settings (config ``preempt_*``, ``restart_s``)."""
    from ..services.preempt import PreemptSettings

    return PreemptSettings(
        wait_max_s=config.preempt_wait_max_s,
        resize=config.preempt_resize,
        defrag=config.preempt_defrag,
        regather=config.preempt_regather,
        restart_s=config.restart_s,
    )


def view_preemption(
    config: Config, slurm: SlurmCommands, store: DecisionStore
) -> ViewPreemption | None:
    """What ``mlsub queue`` (and ``mlsub metrics``' queue now) weigh of the site's
    preemption: None when ``preempt`` is off; else the running jobs that consent, every
    owner's (the re-plan that preempts, the epilog's, is root's), and the settings."""
    from ..services.replan import SlurmStarter, ViewPreemption, preemptible

    if not config.preempt:
        return None
    runs = preemptible(store, config.cluster_name, SlurmStarter(slurm), lambda _owner: True)
    return ViewPreemption(runs, preempt_settings(config))


def run_queue(request: ReplanRequest, *, clock: Clock, everyone: bool) -> QueueView:
    """``mlsub queue``: the waiting jobs in queue order with their estimated start and
    why they wait, read without starting anything (a re-plan's step, not committed)."""
    from ..services.replan import queue_view

    ctx = context({"db_url": request.db_url, "cluster_name": request.cluster_name})
    if everyone and not ctx.viewer.is_admin:
        raise InputError(
            "mlsub queue --all lists every user's queued jobs: admins only",
            hint="without --all it lists your own",
            context={"option": "--all"},
        )
    with slurm_access("") as access, opened(ctx) as store:
        state = access.node_state_source().read(clock.now())
        return queue_view(
            store,
            state,
            clock=clock,
            cluster_name=ctx.config.cluster_name,
            slot_seconds=ctx.config.slot_seconds,
            user=None if everyone else ctx.viewer.user,
            preempt=view_preemption(ctx.config, access.slurm, store),
            gpu_speed=ctx.config.gpu_speed,
        )
