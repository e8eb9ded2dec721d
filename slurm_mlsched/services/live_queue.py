"""What the live submission and the live queue share (``submit`` and ``replan`` both
import it; neither imports the other).

* the wiring: :class:`LiveWiring` (the adapters of the live path) and what it holds of the
  user's program (:class:`JobScript`, the :class:`Submitter` protocols);
* the live view: :func:`stored_and_running` (Slurm's running jobs plus the store's open
  reservations, in one snapshot), :func:`cluster_view` (``mlsub cluster``) and the
  decision tag of a stored decision (:func:`tag_of`);
* the queue step (pure): a stored queued decision on the live grid
  (:func:`rebased`, :class:`QueueEntry`) and one re-plan of the queue through the policy's
  queue form (:func:`queue_step`, :func:`in_queue_order`; docs/formulation.md §14.8).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Protocol

from ..errors import InputError, MlschedError
from ..files.checkpoint_signal import CheckpointSignal, checkpoint_signal
from ..files.job_script import JobScript
from ..model import ClusterSnapshot, Decision, JobRequest
from ..model.gpu_speed import GpuSpeeds
from ..model.narrowing import NodeFilter
from ..placement.params import Binding, PlacementParams
from ..placement.policy_table import QueueFn
from ..placement.registry import get_queue
from ..placement.yu_rr.late_binding import PendingJob, QueueStep
from ..placement.yu_rr.preemption import Preemption, RunningRun, replan_preempting
from ..placement.yu_rr.queue_order import keyer
from ..sbatch.tag import DecisionTag, decision_tag
from ..slurm.nodes import NodeState, NodeStateSource
from ..storage import DecisionRecord, DecisionStore, DecisionSummary, PlanningSession
from .clock import Clock
from .cluster_state import ClusterState, build_cluster_state, own_jobs
from .viewer import Viewer


class Submitter(Protocol):
    """Puts a decision's job on the cluster.

    ``tag`` identifies the decision (its id and token; ``None`` for a dry run, which
    submits nothing). Failures are :data:`SUBMIT_ERRORS`."""

    def program_path(self, job: JobScript, tag: DecisionTag | None) -> str:
        """Where the training script will be when the tasks run (rendered into the
        script's command); no side effect."""
        ...

    def submit(self, script: str, job: JobScript, tag: DecisionTag) -> str:
        """Hand the rendered ``script`` to Slurm (with whatever files ``job`` needs there);
        return the Slurm job id."""
        ...


class HeldSubmitter(Protocol):
    """A submitter that can also submit a job held (late binding; local Slurm only)."""

    def submit_held(self, script: str, job: JobScript, tag: DecisionTag) -> str: ...


@dataclass(frozen=True)
class LiveWiring:
    """The adapters the live path uses (tests pass their own)."""

    source: NodeStateSource
    store: DecisionStore
    clock: Clock
    submitter: Submitter
    cluster_name: str
    slot_seconds: float
    viewer: Viewer
    host: str
    packages: tuple[tuple[str, str], ...] = ()
    refresh: Callable[[], object] | None = None
    """Run before planning: brings open decisions up to date (``reconcile`` from squeue),
    so that jobs that already ended stop reserving."""
    reconcile_command: str = "mlsub reconcile"
    """The command a hint tells the user to run when a submission's outcome is unknown."""
    process: str | None = None
    """This process's identity (``services/process_id.py``), stored with a ``submitting``
    decision so that reconcile can tell whether the submission is still in progress."""
    slurm_user: str | None = None
    """The Slurm user the job will run as (the effective Unix user here, the SSH user of a
    remote submission); stored with the decision for the owner check on tags."""
    held_submitter: HeldSubmitter | None = None
    """Late binding (``services/replan.py``): a job whose policy has a queue form and that
    cannot start now is submitted held through this and waits ``queued``. None (a remote
    submission): such a job is booked at its planned start (``--begin``), as before."""
    env_dir: Path | None = None
    """Where a queued job's environment is kept (private to the user) until it starts."""
    gpu_speed: GpuSpeeds = ()
    """The site's speed table (config ``[gpu_speed]``): the machines of the live snapshot
    carry their type's factor, and a new job is planned at its slowest eligible type's
    (docs/formulation.md §17)."""


def tag_of(cluster_name: str, s: DecisionSummary) -> DecisionTag:
    """The tag of a stored decision (its job comment; sbatch/tag.py)."""
    return decision_tag(
        cluster=cluster_name,
        decision_id=s.decision_id,
        created_at=s.created_at,
        user=s.user,
        host=s.host,
    )


def stored_and_running(
    tx: PlanningSession,
    state: NodeState,
    now: datetime,
    slot_seconds: float,
    cluster_name: str,
    *,
    partition: str | None = None,
    narrowing: NodeFilter | None = None,
    gpu_speed: GpuSpeeds = (),
) -> ClusterState:
    """The live snapshot inside the lock: Slurm's running jobs, minus those the store's
    open decisions already reserve, plus those reservations; only the nodes of
    ``partition`` that ``narrowing`` (the job's #SBATCH lines) allows are usable; the
    machines carry their factors of ``gpu_speed``."""
    grid = build_cluster_state(state, now=now, slot_seconds=slot_seconds)
    epoch = grid.snapshot.epoch
    stored = tx.reservations(now, epoch=epoch, slot_seconds=slot_seconds)
    ids = {int(r.job_id.removeprefix("mlsub-")) for r in stored if r.job_id.startswith("mlsub-")}
    summaries = tx.summaries(ids)
    tags = {str(tag_of(cluster_name, s)): s.decision_id for s in summaries}
    covered = own_jobs(state.jobs, tags, {s.decision_id: s.job_owner for s in summaries})
    return build_cluster_state(
        state,
        now=now,
        slot_seconds=slot_seconds,
        extra=stored,
        partition=partition,
        covered_jobs=set(covered),
        narrowing=narrowing,
        gpu_speed=gpu_speed,
    )


def cluster_view(
    source: NodeStateSource,
    store: DecisionStore,
    *,
    clock: Clock,
    cluster_name: str,
    slot_seconds: float,
) -> ClusterState:
    """``mlsub cluster``: what the placement would see now (Slurm + the store's open
    decisions), read in one snapshot of the store (without the planning lock: a read
    neither waits for a planner nor makes one wait)."""
    state = source.read(clock.now())
    with store.viewing(cluster_name) as tx:
        return stored_and_running(tx, state, clock.now(), slot_seconds, cluster_name)


# --- the pure part: one queue step over the stored queued decisions ------------------------------


@dataclass(frozen=True)
class QueueEntry:
    """A waiting job as the queue step sees it: its request on the snapshot's grid under a
    key unique in the step (``q<decision id>``; ``new`` for a job being submitted), its
    stored seed, policy and parameters, and its stored decision (None for a new job)."""

    request: JobRequest
    seed: int
    params: PlacementParams
    record: DecisionRecord | None = None
    policy: str = ""
    plan: Decision | None = None
    """Its stored plan on the snapshot's grid (the tentative plan of the last re-plan that
    reserved it, or its plan at submission): handed to the step, which keeps it when it
    still fits and ends earlier (the monotone head, docs/formulation.md §14.1)."""

    @property
    def params_policy(self) -> str:
        return self.policy or (self.record.decision.policy if self.record else "yu-rr")

    @property
    def key(self) -> str:
        return self.request.job_id


def rebased(record: DecisionRecord, snapshot: ClusterSnapshot) -> QueueEntry:
    """``record``'s request with its arrival on ``snapshot``'s slot grid (the live grid
    starts at the current slot, so a job that waits has a negative arrival slot: the
    queue order ages it by how long it has waited)."""
    arrived = record.snapshot.slot_start(record.request.arrival_slot)
    slot = int((arrived - snapshot.epoch).total_seconds() // snapshot.slot_seconds)
    key = f"q{record.decision_id}"
    request = replace(record.request, arrival_slot=slot, job_id=key)
    plan = None
    if record.snapshot.slot_seconds == snapshot.slot_seconds:  # the same grid, shifted
        shift = (record.snapshot.epoch - snapshot.epoch).total_seconds() / snapshot.slot_seconds
        plan = replace(record.decision.shifted(round(shift)), job_id=key)
        if record.preemptions and plan.start_slot < snapshot.now_slot:
            plan = None  # the run it was preempted in, not a plan to keep (§16, "Live")
    return QueueEntry(request, record.seed, record.params, record, plan=plan)


def queue_step(
    entries: Sequence[QueueEntry], snapshot: ClusterSnapshot
) -> tuple[QueueStep, dict[str, QueueEntry]]:
    """One re-plan of ``entries`` at ``snapshot.now_slot`` through the queue form of the
    oldest entry's policy, with its parameters (late binding). Every queued decision has
    the policy its submission used; entries of another policy than the oldest's wait for a
    re-plan in which theirs is the oldest (they hold nothing meanwhile)."""
    by_key = {e.key: e for e in entries}
    if not entries:
        return QueueStep(()), by_key
    params, queue, pending = _step_inputs(entries)
    return queue(pending, snapshot, params, ()), by_key


def preempting_step(
    entries: Sequence[QueueEntry],
    running: Sequence[RunningRun],
    snapshot: ClusterSnapshot,
    *,
    resize: bool = False,
    defrag: bool = False,
    regather: bool = False,
    base: QueueEntry | None = None,
    restart_s: float | None = None,
) -> tuple[QueueStep, dict[str, QueueEntry], tuple[Preemption, ...]]:
    """:func:`queue_step` with checkpoint-restart preemption (docs/formulation.md §16,
    "Live"): the replay's own rule (``placement/yu_rr/preemption.replan_preempting``)
    over ``running`` (the preemptible running jobs on ``snapshot``'s grid, keyed by their
    reservations' job ids), with the oldest entry's parameters and ``preempt`` on, and
    ``preempt_resize`` as ``resize`` says (the site's setting): then the step may also
    start a waiting job narrow, and grow a running one (a pause whose ``for_jobs`` is
    empty); and ``preempt_defrag`` as ``defrag`` says: then it may also move a running job
    to a node with fewer GPUs (a pause whose ``move`` is set) so that a waiting job starts
    co-located on the node it leaves; and ``preempt_regather`` as ``regather`` says (with
    ``resize``): then a running job spread over nodes, whose work left puts it ahead of
    every waiting job, may be restarted co-located on one node before the queue is placed
    (a grow whose ``regather`` is set). With no entries only a grow can come of it: the
    parameters are then ``base``'s (the oldest running candidate's), and nothing is done
    without it.
    ``restart_s``: the site's restart cost (None: the parameters' own). Returns the step
    taken with the preemptions (in which the paused jobs wait), and those."""
    by_key = {e.key: e for e in entries}
    first = entries[0] if entries else base
    if first is None or not (entries or (resize and running)):
        return QueueStep(()), by_key, ()
    params, queue, pending = _step_inputs(
        entries, preempt=True, resize=resize, defrag=defrag, regather=regather, first=first
    )
    if restart_s is not None:
        params = replace(params, restart_s=restart_s)
    step, chosen = replan_preempting(pending, running, snapshot, params, queue)
    return step, by_key, chosen


def _step_inputs(
    entries: Sequence[QueueEntry],
    *,
    preempt: bool = False,
    resize: bool = False,
    defrag: bool = False,
    regather: bool = False,
    first: QueueEntry | None = None,
) -> tuple[PlacementParams, QueueFn, tuple[PendingJob, ...]]:
    """The oldest entry's parameters (``first``'s when given; late binding; ``preempt``,
    ``preempt_resize``, ``preempt_defrag`` and ``preempt_regather`` as the caller says,
    never as stored: on the live queue they are the site's settings), its policy's queue
    form, and the entries of that policy as the step's waiting jobs."""
    first = entries[0] if first is None else first
    if first.params.preempt and not preempt:
        raise InputError(
            "decision parameters with preempt on: on the live queue checkpoint-restart "
            "preemption is the site's setting (preempt in /etc/mlsched/config.toml), not a "
            "decision's",
            hint="re-plan with preempt off in the decision; an admin sets preempt = true",
            context={"parameter": "preempt", "policy": first.params_policy},
        )
    params = replace(
        first.params,
        binding=Binding.LATE,
        preempt=preempt,
        preempt_resize=preempt and resize,
        preempt_defrag=preempt and defrag,
        preempt_shrink=False,  # a replay rule only: live shrinks are not built
        preempt_group=False,  # measured, not kept: not a live rule
        preempt_forecast=False,  # measured, not kept: not a live rule
        preempt_regather=preempt and resize and regather,
    )
    policy = first.params_policy
    queue = get_queue(policy, params)
    if queue is None:  # submit queues only jobs whose policy has a queue form
        raise MlschedError(f"policy {policy!r} has no queue form (late binding)")
    # whether a job may be paused once started matters only to a preempting step (the
    # look-ahead's hold-back, ``PendingJob.pausable``): its script is read only then
    pending = tuple(
        PendingJob(e.request, e.seed, e.plan, pausable=preempt and consents(e.record))
        for e in entries
        if e.params_policy == policy
    )
    return params, queue, pending


def consent_signal(record: DecisionRecord | None) -> CheckpointSignal | None:
    """The checkpoint signal of a decision whose job consents to checkpoint-restart: its
    script asks Slurm for a warning signal (``#SBATCH --signal``) and it can be submitted
    again (its launch is kept); None when it does not. What ``services.preempt.candidates``
    asks of a running job (besides the owner and the tag, which only Slurm vouches for)."""
    if record is None or record.launch is None:
        return None
    return checkpoint_signal(record.script)


def consents(record: DecisionRecord | None) -> bool:
    """Whether the queued decision's job, once started, may be paused by checkpoint-restart
    (:func:`consent_signal`). With the site's preemption the look-ahead holds back only the
    narrow starts of jobs that do not consent (``PendingJob.pausable``; docs/formulation.md
    §14.7)."""
    return consent_signal(record) is not None


def in_queue_order(entries: Sequence[QueueEntry], snapshot: ClusterSnapshot) -> list[QueueEntry]:
    """``entries`` in the order the step takes them (``queue_order.queue_key``: smallest
    service first, aged; the oldest entry's aging γ)."""
    if not entries:
        return []
    first = entries[0].params
    key = keyer(snapshot.machines, snapshot.slot_seconds, first.aging, first.aging_unit)
    return sorted(entries, key=lambda e: key(e.request))
