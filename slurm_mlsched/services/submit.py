"""The live path: ``mlsub train.py`` / ``mlsub submit`` and ``mlsub plan SCRIPT`` without a
cluster file.

:func:`submit_job` does, in this order (nothing is lost if it stops anywhere):

0. bring the cluster's open decisions up to date from ``squeue`` (``wiring.refresh``), so
   jobs that ended before their predicted end stop reserving;
1. read the live node state once (Slurm; outside the lock: it only reads);
2. under the cluster's planning lock (:meth:`DecisionStore.planning`, so concurrent
   ``mlsub`` calls never double-book): take the store's open reservations, leave out the
   running jobs they already cover (found by the decision tag in the job's comment),
   build the snapshot, run ``place()`` (the non-elastic ``yu-rr`` by default), record the
   decision as ``submitting`` and attach its rendered sbatch script, then commit;
3. hand the script to the :class:`Submitter`: locally ``sbatch --parsable`` with the
   script on standard input (``TZ=UTC``, the zone of ``--begin``); over SSH
   (``slurm_mlsched.remote.submitter``) the training script and the sbatch script are
   uploaded into the decision's staging directory first. On success the decision becomes
   ``submitted`` with the Slurm job id; on a failure whose outcome is known (Slurm refused
   the script, an upload failed) ``submit-failed`` with the message (and the error is
   raised again). Once sbatch has answered with a job id nothing turns into a failure:
   a store that cannot be written then is a warning on the outcome (the job is queued;
   reconcile records it by its tag), and a neighbour that recorded the job first (its
   reconcile found the tag) makes this a no-op (storage/states.py ``reached``).

If mlsub dies between 2 and 3, or during 3, or the outcome of 3 is unknown (sbatch timed
out, the SSH connection dropped while sbatch ran), the decision stays ``submitting``;
``mlsub reconcile`` finds the job by its tag, or marks it ``submit-failed`` when none
exists.

Where the program is on the cluster is the submitter's to say
(:meth:`Submitter.program_path`): the local path here, the staged copy over SSH. It is
asked inside the planning block, once the decision id and tag are known, so that the
stored script is exactly the one submitted.

``dry_run`` (``mlsub plan SCRIPT``) does 1 and 2 without recording anything and returns the
decision and the script as they would be.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path

from ..errors import InputError, InvalidTransitionError, RemoteError, SlurmError, StoreError
from ..files.checkpoint_signal import checkpoint_signal
from ..files.job_options import JobOptions
from ..files.job_script import JobScript
from ..files.sbatch_lines import carried_lines, merged_comment
from ..model import ClusterSnapshot
from ..placement.registry import get_queue
from ..sbatch.launch import Launch
from ..sbatch.render import RenderedScript, ScriptSpec, begin_time, port_base, render_sbatch
from ..sbatch.tag import DecisionTag
from ..slurm.nodes import NodeState
from ..slurm.parse import parse_sbatch_parsable
from ..slurm.runner import SBATCH_TIMEOUT_S, SlurmCommands
from ..storage import (
    DecisionRecord,
    DecisionState,
    NewDecision,
    PlanningSession,
)
from .cluster_state import (
    ClusterState,
    narrow_reason,
    partitions_of,
)
from .live_queue import (
    LiveWiring,
    QueueEntry,
    queue_step,
    rebased,
    stored_and_running,
    tag_of,
)
from .plan import PlanResult, params_for, plan_job

#: The two kinds of failure a submitter raises: Slurm's (exit 6) and the SSH link's (exit 8).
#: Both carry ``may_have_run``: when it is true the job may exist (outcome unknown).
SUBMIT_ERRORS = (SlurmError, RemoteError)


class SbatchSubmitter:
    """``sbatch --parsable`` through the Slurm funnel, the script on standard input, in
    the current directory; the program is used where it is (a file system the compute
    nodes share).

    ``TZ=UTC`` is set for sbatch because ``--begin`` is written in UTC; ``env`` sets it the
    same way locally and over SSH."""

    def __init__(self, slurm: SlurmCommands, *, timeout: float = SBATCH_TIMEOUT_S) -> None:
        self.slurm = slurm
        self.timeout = timeout

    def program_path(self, job: JobScript, tag: DecisionTag | None) -> str:
        return str(job.path)

    def submit(self, script: str, job: JobScript, tag: DecisionTag) -> str:
        out = self.slurm.run(
            ["env", "TZ=UTC", "sbatch", "--parsable"], input=script, timeout=self.timeout
        )
        return str(parse_sbatch_parsable(out).job_id)

    def submit_held(self, script: str, job: JobScript, tag: DecisionTag) -> str:
        """``sbatch --hold``: the job waits in Slurm's queue, held, until a re-plan starts
        it (``services/replan.py``)."""
        out = self.slurm.run(
            ["env", "TZ=UTC", "sbatch", "--parsable", "--hold"], input=script, timeout=self.timeout
        )
        return str(parse_sbatch_parsable(out).job_id)


@dataclass(frozen=True)
class SubmitOutcome:
    """What ``mlsub submit`` / ``mlsub plan SCRIPT`` (live) did: the plan on the live
    cluster, the cluster as it was read, the rendered sbatch script, the stored decision
    and its tag (None for a dry run, which records nothing) and the Slurm job id."""

    plan: PlanResult
    cluster: ClusterState
    script: RenderedScript
    record: DecisionRecord | None  # None for a dry run
    tag: DecisionTag | None
    slurm_job_id: str | None
    warnings: tuple[str, ...] = ()
    """Things that went wrong after Slurm queued the job (the job is queued all the same)."""
    waits: bool = False
    """The job cannot start now: it waits held in Slurm's queue (decision ``queued``) until
    a re-plan starts it; :attr:`plan` is its tentative plan (the estimated start)."""
    final: DecisionState | None = None
    """``submit --wait``: the state the job ended in (None when not waited for)."""

    @property
    def decision_id(self) -> int | None:
        return None if self.record is None else self.record.decision_id

    @property
    def state(self) -> DecisionState | None:
        """The decision's state: the one waited for, else the one recorded (None for a
        dry run)."""
        if self.final is not None:
            return self.final
        return None if self.record is None else self.record.state

    @property
    def begin(self) -> datetime | None:
        """The script's ``--begin`` (None when it starts at once, or waits held: a job
        that waits has no ``--begin``, a re-plan releases it)."""
        return None if self.waits else begin_time(self.plan.decision, self.plan.snapshot)

    def to_json(self) -> dict[str, object]:
        """The JSON of ``mlsub submit --json`` / ``mlsub plan SCRIPT --json``: the plan's
        shape plus the stored decision, the Slurm job id and the script."""
        out = self.plan.to_json()
        cluster = out["cluster"]
        assert isinstance(cluster, dict)
        out["cluster"] = {
            **cluster,
            "excluded": [
                {"name": n.record.name, "reason": n.reason} for n in self.cluster.excluded
            ],
        }
        state = self.state
        out.update(
            {
                "decision_id": self.decision_id,
                "state": None if state is None else str(state),
                "tag": None if self.tag is None else str(self.tag),
                "slurm_job_id": self.slurm_job_id,
                "waits": self.waits,
                "warnings": list(self.warnings),
                # a job that waits held has no --begin: a re-plan releases it; its
                # "start" is the estimate of the tentative plan
                "begin": _iso(self.begin),
                "tasks": [
                    {
                        "role": str(t.role),
                        "rank": t.rank,
                        "node": t.node,
                        "endpoint": t.endpoint,
                    }
                    for t in self.script.tasks
                ],
                "script": self.script.text,
            }
        )
        return out


def submit_job(
    wiring: LiveWiring, opts: JobOptions, job: JobScript, *, dry_run: bool = False
) -> SubmitOutcome:
    """Plan ``job`` against the live cluster and submit it (see the module docstring)."""
    state = read_live_state(wiring, opts)
    name = opts.name or job.path.stem
    with wiring.store.planning(wiring.cluster_name) as tx:
        cluster, plan = plan_live(wiring, tx, state, opts, name)
        waits = False
        if wiring.held_submitter is not None and get_queue(opts.policy, plan.params):
            plan, waits = bind_late(tx, cluster.snapshot, plan)
        if dry_run:
            program = wiring.submitter.program_path(job, None)
            script = _render(
                plan, cluster, job, opts, name, program, decision_id=0, tag=None, waits=waits
            )
            return SubmitOutcome(plan, cluster, script, None, None, None, waits=waits)
        record = record_submitting(wiring, tx, plan, holds=not waits)
        tag = tag_of(wiring.cluster_name, record.summary)
        program = wiring.submitter.program_path(job, tag)
        spec = _spec(plan, job, opts, name, program, decision_id=record.decision_id, tag=tag)
        script = _render_spec(plan, cluster, spec, waits=waits)
        launch = None
        # a job that waits, or one that may be preempted later (its #SBATCH --signal,
        # docs/formulation.md §16 "Live"): a re-plan may have to submit it again
        preemptible = wiring.held_submitter is not None and checkpoint_signal(script.text)
        if waits or preemptible:
            env_file = keep_environment(wiring.env_dir, f"{tag.decision_id}-{tag.token}")
            narrowing = opts.narrowing.to_json() if opts.narrowing.narrows else None
            launch = Launch(
                spec, os.getcwd(), None if env_file is None else str(env_file), narrowing
            )
        tx.attach_script(record.decision_id, script.text, launch)
    # committed: from here on the decision exists whatever happens to this process
    try:
        if waits:
            assert wiring.held_submitter is not None
            slurm_job_id = wiring.held_submitter.submit_held(script.text, job, tag)
        else:
            slurm_job_id = wiring.submitter.submit(script.text, job, tag)
    except SUBMIT_ERRORS as err:
        err.context.setdefault("decision_id", record.decision_id)
        if err.may_have_run:  # timed out or cut off: Slurm may have queued the job
            err.hint = (
                f"the outcome is unknown: decision {record.decision_id} stays 'submitting'; "
                f"once Slurm can be reached again, `{wiring.reconcile_command}` finds the job "
                f"by its tag ({tag}) or marks the decision submit-failed"
            )
            raise
        _record_failure(wiring, record.decision_id, err)
        if launch is not None and launch.env_file is not None:  # never needed now
            Path(launch.env_file).unlink(missing_ok=True)
        raise
    return _queued(wiring, plan, cluster, script, record, tag, slurm_job_id, waits=waits)


def bind_late(
    tx: PlanningSession, snapshot: ClusterSnapshot, plan: PlanResult
) -> tuple[PlanResult, bool]:
    """Late binding at a submission: the new job joins the stored queue (behind it in
    arrival order; the queue order decides) and one queue step is taken (the replay's
    ``replan_queue``). If the new job starts now, its plan is the step's decision; else it
    waits, and its plan is the per-job plan (the estimated start, tentative)."""
    entries = [rebased(r, snapshot) for r in tx.queued()]
    policy = plan.decision.policy
    new = QueueEntry(
        replace(plan.request, job_id="new"), plan.decision.seed, plan.params, None, policy
    )
    entries = [e for e in entries if e.params_policy == policy]
    step, _ = queue_step([*entries, new], snapshot)
    for d in step.started:
        if d.job_id == "new":
            return replace(plan, decision=replace(d, job_id=plan.request.job_id)), False
    return plan, True


def keep_environment(env_dir: Path | None, name: str) -> Path | None:
    """Write this process's environment (what sbatch gives the job) to a file only the
    user may read, for the re-plan that submits the job again on another layout
    (``sbatch --export-file``: NUL-separated ``NAME=value``). None without ``env_dir``."""
    if env_dir is None:
        return None
    env_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(env_dir, 0o700)
    path = env_dir / f"{name}.env"  # the decision's id and tag token: unique across stores
    data = b"".join(
        k.encode() + b"=" + v.encode() + b"\0" for k, v in os.environ.items() if "\0" not in v
    )
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    return path


def _record_failure(wiring: LiveWiring, decision_id: int, err: SlurmError | RemoteError) -> None:
    """sbatch (or the upload before it) failed for certain: record ``submit-failed``."""
    said = "Slurm's message" if isinstance(err, SlurmError) else "this message"
    try:
        wiring.store.transition(
            decision_id,
            DecisionState.SUBMIT_FAILED,
            wiring.clock.now(),
            err.message,
            expected=DecisionState.SUBMITTING,
        )
    except (StoreError, InvalidTransitionError) as store_err:
        err.hint = (
            f"decision {decision_id} could not be marked submit-failed ({store_err.message}); "
            f"`{wiring.reconcile_command}` will; {err.hint}"
        ).rstrip("; ")
        return
    err.hint = (
        f"decision {decision_id} is recorded as submit-failed with {said} "
        f"(mlsub show {decision_id}); {err.hint}"
    ).rstrip("; ")


def _queued(
    wiring: LiveWiring,
    plan: PlanResult,
    cluster: ClusterState,
    script: RenderedScript,
    record: DecisionRecord,
    tag: DecisionTag,
    slurm_job_id: str,
    *,
    waits: bool = False,
) -> SubmitOutcome:
    """Slurm queued the job: record it. From here nothing may turn into a failure: the job
    exists, so a store that cannot be written now is a warning (reconcile finds the job by
    its tag later), never an error that would make the user submit it again. A neighbour's
    reconcile may have recorded the job first (found by its tag): that is a no-op here."""
    warnings: list[str] = []
    stored: DecisionRecord = record
    try:
        wiring.store.transition(
            record.decision_id,
            DecisionState.QUEUED if waits else DecisionState.SUBMITTED,
            wiring.clock.now(),
            f"sbatch --hold: job {slurm_job_id} waits in the queue"
            if waits
            else f"sbatch: job {slurm_job_id}",
            slurm_job_id=slurm_job_id,
        )
        stored = wiring.store.get(record.decision_id)
    except (StoreError, InvalidTransitionError) as err:
        warnings.append(
            f"Slurm queued job {slurm_job_id}, but decision {record.decision_id} could not be "
            f"updated ({err.message}); it stays '{stored.state}' until "
            f"`{wiring.reconcile_command}` records the job from its tag ({tag})"
        )
    return SubmitOutcome(
        plan, cluster, script, stored, tag, slurm_job_id, tuple(warnings), waits=waits
    )


def read_live_state(wiring: LiveWiring, opts: JobOptions) -> NodeState:
    """Steps 0–1: reconcile open decisions from squeue, read the live nodes and jobs, and
    check ``--partition`` against them (outside the lock: it only reads)."""
    if wiring.refresh is not None:
        wiring.refresh()
    state = wiring.source.read(wiring.clock.now())
    _check_partition(state, opts.partition)
    _check_narrowing(state, opts)
    return state


def plan_live(
    wiring: LiveWiring, tx: PlanningSession, state: NodeState, opts: JobOptions, name: str
) -> tuple[ClusterState, PlanResult]:
    """Step 2 inside the lock: the live snapshot (:func:`stored_and_running`) and the plan."""
    cluster = _live_cluster(wiring, tx, state, wiring.clock.now(), opts)
    plan = plan_job(
        replace(opts, name=name),
        cluster.snapshot,
        params_for(opts),
        clock=wiring.clock,
        cluster_source=f"Slurm ({state.source})",
        calibration=tx.profile_fits(),
        user=wiring.viewer.user,
    )
    return cluster, plan


def record_submitting(
    wiring: LiveWiring, tx: PlanningSession, plan: PlanResult, *, holds: bool = True
) -> DecisionRecord:
    """Record ``plan`` as ``submitting`` (the decision exists before any sbatch runs);
    ``holds`` false for a job that will wait held (its layout reserves nothing)."""
    return tx.record(
        NewDecision(
            request=plan.request,
            snapshot=plan.snapshot,
            params=plan.params,
            decision=plan.decision,
            user=wiring.viewer.user,
            host=wiring.host,
            created_at=plan.planned_at,
            packages=wiring.packages,
            state=DecisionState.SUBMITTING,
            submitter=wiring.process,
            slurm_user=wiring.slurm_user,
            holds=holds,
        )
    )


def _live_cluster(
    wiring: LiveWiring,
    tx: PlanningSession,
    state: NodeState,
    now: datetime,
    opts: JobOptions,
) -> ClusterState:
    return stored_and_running(
        tx,
        state,
        now,
        wiring.slot_seconds,
        wiring.cluster_name,
        partition=opts.partition,
        narrowing=opts.narrowing,
        gpu_speed=wiring.gpu_speed,
    )


def _check_narrowing(state: NodeState, opts: JobOptions) -> None:
    """The script's #SBATCH lines must leave some node of the cluster (of the partition)."""
    if not opts.narrowing.narrows:
        return
    nodes = [n for n in state.usable() if opts.partition in (None, *n.partitions)]
    refused = {n.name: narrow_reason(n, opts.narrowing) for n in nodes}
    if not nodes or any(why is None for why in refused.values()):
        return
    why = "; ".join(f"{name}: {reason}" for name, reason in refused.items())
    raise InputError(
        f"the script's #SBATCH lines leave no node to run on ({why})",
        hint="loosen --nodelist/--exclude/--constraint/--mem/--cpus-per-task/--gres in the "
        "script (mlsub cluster lists the nodes)",
        context={"option": "#SBATCH", "nodes": len(nodes)},
        code="sbatch-line",
    )


def _check_partition(state: NodeState, partition: str | None) -> None:
    if partition is None:
        return
    known = partitions_of(state)
    if partition not in known:
        raise InputError(
            f"unknown partition {partition!r}: no node of this cluster is in it",
            hint=f"choose one of: {', '.join(known) or '(none reported)'} (see: sinfo -s)",
            context={"option": "--partition", "value": partition, "partitions": list(known)},
        )


def _render(
    plan: PlanResult,
    cluster: ClusterState,
    job: JobScript,
    opts: JobOptions,
    name: str,
    program: str,
    *,
    decision_id: int,
    tag: DecisionTag | None,
    waits: bool = False,
) -> RenderedScript:
    spec = _spec(plan, job, opts, name, program, decision_id=decision_id, tag=tag)
    return _render_spec(plan, cluster, spec, waits=waits)


def _spec(
    plan: PlanResult,
    job: JobScript,
    opts: JobOptions,
    name: str,
    program: str,
    *,
    decision_id: int,
    tag: DecisionTag | None,
) -> ScriptSpec:
    n_tasks = sum(r.count for r in plan.decision.placement)
    label = str(decision_id) if decision_id else "dry-run"
    carried = carried_lines(opts.sbatch)
    return ScriptSpec(
        command=job.command(opts.interpreter, program),
        job_name=name,
        decision_id=label,
        comment=merged_comment(carried.comment, None if tag is None else str(tag)),
        sbatch_job=carried.job_wide,
        sbatch_each=carried.per_component,
        partition=opts.partition,
        time_limit_minutes=opts.time_limit,
        output=opts.output or f"mlsub-{label}-%j.out",
        base_port=port_base(decision_id, n_tasks),
    )


def _render_spec(
    plan: PlanResult, cluster: ClusterState, spec: ScriptSpec, *, waits: bool
) -> RenderedScript:
    """The script; a job that waits held has no ``--begin`` (a re-plan releases it)."""
    addresses = {n.record.name: n.record.address or n.record.name for n in cluster.nodes}
    begin = None if waits else begin_time(plan.decision, plan.snapshot)
    types = {n.record.name: n.record.gpu_type for n in cluster.nodes}
    return render_sbatch(plan.decision, plan.request, addresses, replace(spec, begin=begin), types)


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()
