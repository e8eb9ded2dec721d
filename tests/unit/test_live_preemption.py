"""Checkpoint-restart preemption on the live queue (docs/formulation.md §16, "Live") with
the real store (a SQLite file) and stand-ins for Slurm: the replay's rule chooses a
running job that consents (its ``#SBATCH --signal``), the re-plan records it
``preempting``, signals it, waits its warning time (bounded), requeues it held and
records it ``queued`` with the work it has left; the job it made room for starts; every
failure leaves the store as Slurm is. The same on the real cluster:
tests/integration/test_preempt_live.py."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from slurm_mlsched.errors import SlurmError
from slurm_mlsched.files.checkpoint_signal import (
    CheckpointSignal,
    checkpoint_signal,
    parse_signal_spec,
)
from slurm_mlsched.services.live_queue import LiveWiring, tag_of
from slurm_mlsched.services.preempt import (
    LivePreemption,
    PreemptSettings,
    candidates,
)
from slurm_mlsched.services.reconcile import plan_updates
from slurm_mlsched.services.replan import (
    QueueView,
    ReplanReport,
    ViewPreemption,
    as_owner,
    preemptible,
    queue_view,
    replan,
)
from slurm_mlsched.services.submit import SubmitOutcome, submit_job
from slurm_mlsched.slurm.jobs import JobStatus
from slurm_mlsched.storage import DecisionRecord, DecisionState, SqlDecisionStore, open_store
from slurm_mlsched.storage.states import RESERVING, can_move, reached
from tests.unit.test_replan_service import ME, FakeStarter, HeldSubmitter, live, whole_node
from tests.unit.test_submit_service import JOB, NOW, opts, status

S = DecisionState
SIGNAL = "--signal=USR1@30"


# --- the checkpoint signal (pure) --------------------------------------------------------------


def test_the_signal_spec_is_read_as_sbatch_reads_it() -> None:
    assert parse_signal_spec("USR1@60") == CheckpointSignal("USR1", 60, False)
    assert parse_signal_spec("B:SIGUSR2@5") == CheckpointSignal("USR2", 5, True)
    assert parse_signal_spec("10") == CheckpointSignal("10", 60, False)  # Slurm's default time
    assert parse_signal_spec("R:usr1") == CheckpointSignal("USR1", 60, False)
    for bad in ("", "KILL@5", "USR1@x", "X:USR1", "99"):
        assert parse_signal_spec(bad) is None, bad
    assert CheckpointSignal("USR1").scancel_args() == ["--signal=USR1"]
    assert CheckpointSignal("USR2", 5, True).scancel_args() == ["--signal=USR2", "--batch"]


def test_the_signal_comes_from_the_scripts_sbatch_header_only() -> None:
    script = "#!/bin/bash\n#SBATCH --time=5\n#SBATCH --signal=B:USR1@20 --qos=x\necho\n"
    assert checkpoint_signal(script) == CheckpointSignal("USR1", 20, True)
    assert checkpoint_signal("#!/bin/bash\n#SBATCH --signal USR2\n") == CheckpointSignal("USR2")
    assert checkpoint_signal("#!/bin/bash\necho\n#SBATCH --signal=USR1@20\n") is None
    assert checkpoint_signal("#!/bin/bash\n#SBATCH --time=5\n") is None
    no_requeue = "#!/bin/bash\n#SBATCH --signal=USR1@20\n#SBATCH --no-requeue\n"
    assert checkpoint_signal(no_requeue) is None  # Slurm may not requeue it
    assert checkpoint_signal(no_requeue + "#SBATCH --requeue\n") == CheckpointSignal("USR1", 20)
    assert checkpoint_signal(None) is None


# --- the state machine -----------------------------------------------------------------------


def test_preempting_sits_between_running_and_queued() -> None:
    assert can_move(S.RUNNING, S.PREEMPTING) and can_move(S.SUBMITTED, S.PREEMPTING)
    for after in (S.QUEUED, S.RUNNING, S.COMPLETED, S.FAILED, S.CANCELLED):
        assert can_move(S.PREEMPTING, after), after
    for before in (S.QUEUED, S.STARTING, S.PLANNED, S.COMPLETED, S.SUBMITTING):
        assert not can_move(before, S.PREEMPTING), before
    assert not can_move(S.PREEMPTING, S.SUBMITTED)
    assert S.PREEMPTING in RESERVING  # Slurm still runs it
    # back to running is a real move, not "already reached"
    assert not reached(S.PREEMPTING, S.RUNNING) and not reached(S.PREEMPTING, S.SUBMITTED)
    assert reached(S.PREEMPTING, S.PREEMPTING)


# --- the live path with stand-ins -------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> SqlDecisionStore:
    return open_store(f"sqlite:///{tmp_path / 'd.db'}", grace_s=0.0)


@dataclass
class FakeSlurm(FakeStarter):
    """A stand-in Slurm: the running jobs it lists, and what preempting did to them.
    ``fail`` names a step that raises (``signal``, ``requeue``); ``ends`` makes the job
    end during its checkpoint time; ``never_held`` keeps a requeued job from showing held."""

    running: dict[str, JobStatus] = field(default_factory=dict)
    calls: list[tuple[str, ...]] = field(default_factory=list)
    breaks: str = ""
    ends: bool = False
    never_held: bool = False

    def jobs(self) -> dict[str, JobStatus]:
        out = dict(self.running)
        for j in self.held_jobs():
            out.setdefault(j.job_id, j)
        return out

    def signal(self, job_id: str, signal: CheckpointSignal, owner: str) -> None:
        self.calls.append(("signal", job_id, signal.signal, owner))
        if self.breaks == "signal":
            raise SlurmError("scancel: controller busy")
        if self.ends:
            self.running[job_id] = replace(self.running[job_id], state="COMPLETED")

    def requeue_hold(self, job_id: str, owner: str) -> None:
        self.calls.append(("requeuehold", job_id, owner))
        if self.breaks == "requeue":
            raise SlurmError("scontrol requeuehold: controller busy")
        job = self.running.pop(job_id)
        if not self.never_held:
            self.held.append(replace(job, state="PENDING", held=True, reason="JobHeldUser"))
        else:
            self.running[job_id] = replace(job, state="PENDING")


@dataclass
class Scene:
    long: int  # the preemptible job's decision id (Slurm job 101)
    fillers: list[int]
    short: int  # a queued job that waits for it
    slurm: FakeSlurm
    sub: HeldSubmitter
    slept: list[float]


LONG = {"workers": 4, "step_time": 0.5, "epochs": 1, "batches_per_epoch": 12000}


def scene(store: SqlDecisionStore, tmp_path: Path, **slurm: object) -> Scene:
    """Four whole-node jobs fill the cluster: the first long and preemptible (``--signal``),
    three fillers that run long and do not consent; then a short whole-node job waits."""
    sub = HeldSubmitter()
    w = live(store, tmp_path, sub)
    long = submit_job(w, opts(**LONG, name="long", sbatch=SIGNAL), JOB)
    fillers = [submit_job(w, opts(**LONG, name=f"f{k}"), JOB) for k in range(3)]
    short = submit_job(w, opts(**whole_node(), name="short"), JOB)
    assert short.waits and long.record is not None and short.record is not None
    fake = FakeSlurm(store=store, **slurm)  # type: ignore[arg-type]
    run_in(fake, long, *fillers)
    ids = [f.record.decision_id for f in fillers if f.record is not None]
    return Scene(long.record.decision_id, ids, short.record.decision_id, fake, sub, [])


def run_in(fake: FakeSlurm, *outs: SubmitOutcome, start: datetime = NOW) -> None:
    """Slurm runs the submitted ``outs`` from ``start`` (their tags in their comments)."""
    for out in outs:
        assert out.record is not None and out.slurm_job_id is not None
        tag = str(tag_of("lab", out.record.summary))
        fake.running[out.slurm_job_id] = status(
            out.slurm_job_id, "RUNNING", tag, start=start, user=ME
        )


def end_in(fake: FakeSlurm, store: SqlDecisionStore, out: SubmitOutcome, at: datetime) -> None:
    """``out``'s job ended at ``at``: Slurm no longer lists it, the store says completed."""
    assert out.record is not None and out.slurm_job_id is not None
    del fake.running[out.slurm_job_id]
    store.transition(out.record.decision_id, S.COMPLETED, at, "ended")


def replan_with(wired: LiveWiring, fake: FakeSlurm, settings: PreemptSettings) -> ReplanReport:
    """``mlsub replan`` on ``wired`` with the site's preemption ``settings`` (no sleeping)."""
    return replan(wired, fake, preempt=LivePreemption(fake, settings, sleep=lambda _s: None))


def preempting(sc: Scene, **settings: float) -> LivePreemption:
    base = {"wait_max_s": 5.0, "poll_s": 1.0, "confirm_s": 3.0, **settings}
    return LivePreemption(sc.slurm, PreemptSettings(**base), sleep=sc.slept.append)


def states(store: SqlDecisionStore, decision_id: int) -> list[DecisionState]:
    return [t.state for t in store.get(decision_id).transitions]


def test_a_consenting_long_job_is_checkpointed_requeued_and_its_room_given(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sc = scene(store, tmp_path)
    before = store.get(sc.long)
    report = replan(live(store, tmp_path, sc.sub, at=120), sc.slurm, preempt=preempting(sc))
    (p,) = report.preempted
    assert (p.decision_id, p.slurm_job_id, p.action, p.signal) == (
        sc.long,
        "101",
        "requeued",
        "USR1",
    )
    # the gain: the queue's total completion, the restart inside it (``preempt_gain``
    # rollout, the default its decision was planned with); the cost beside it, what the
    # restart charge adds to its own run (0 or whole slots)
    assert p.for_decisions == (sc.short,) and p.gain_s > 0 and p.cost_s >= 0
    assert p.cost_s % 600.0 == 0
    # signal, its warning time (30 s, capped at 5), requeue held, eligible at once
    assert sc.slurm.calls == [("signal", "101", "USR1", ME), ("requeuehold", "101", ME)]
    assert sum(sc.slept) == pytest.approx(5.0) and p.waited_s == pytest.approx(5.0)
    rec = store.get(sc.long)
    assert states(store, sc.long) == [S.SUBMITTING, S.SUBMITTED, S.PREEMPTING, S.QUEUED]
    assert "requeued held (JobHeldUser)" in rec.transitions[-1].detail
    paused = rec.transitions[-2]
    assert paused.state is S.PREEMPTING and before.params.preempt_gain == "rollout"
    assert f"completes {p.gain_s:g} s sooner in total, its restart cost" in paused.detail
    # it waits with the work it has left (+ the restart charge), progress kept
    assert 0 < p.work_done < before.request.workload
    assert rec.request.workload == pytest.approx(p.work_left)
    assert rec.request.workload < before.request.workload
    assert rec.resumed_request is None and rec.preemptions == 1
    # the short job started on the node the long one held
    (started,) = report.started
    assert started.decision_id == sc.short
    short = store.get(sc.short)
    assert short.state == S.SUBMITTED
    assert {c.node for c in short.decision.placement} == {c.node for c in before.decision.placement}
    # the fillers (no --signal) were never touched
    assert all(store.get(f).state == S.SUBMITTED for f in sc.fillers)


def test_the_requeued_job_starts_again_when_its_room_frees(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sc = scene(store, tmp_path)
    replan(live(store, tmp_path, sc.sub, at=120), sc.slurm, preempt=preempting(sc))
    left = store.get(sc.long).request.workload
    store.transition(sc.short, S.COMPLETED, NOW + timedelta(seconds=400), "ended")
    again = replan(live(store, tmp_path, sc.sub, at=420), sc.slurm, preempt=preempting(sc))
    assert [s.decision_id for s in again.started] == [sc.long] and again.preempted == ()
    rec = store.get(sc.long)
    assert states(store, sc.long)[-3:] == [S.QUEUED, S.STARTING, S.SUBMITTED]
    assert rec.request.workload == left  # it ran on with the work it had left
    if again.started[0].action == "released":  # the same layout: the requeued job itself
        assert sc.slurm.released[-1] == "101" and rec.summary.slurm_job_id == "101"
        assert sc.slurm.began == ["101"]  # eligible at once, after the release
    else:
        assert again.started[0].action == "resubmitted" and sc.slurm.cancelled == ["101"]
    assert rec.launch is not None and rec.launch.env_file is not None
    assert Path(rec.launch.env_file).exists()  # kept: it may be preempted once more


def test_without_the_site_setting_nothing_is_preempted(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sc = scene(store, tmp_path)
    report = replan(live(store, tmp_path, sc.sub, at=120), sc.slurm)
    assert report.preempted == () and report.started == () and sc.slurm.calls == []
    assert store.get(sc.long).state == S.SUBMITTED


def test_a_failed_signal_leaves_it_running_and_starts_nothing_in_its_room(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sc = scene(store, tmp_path, breaks="signal")
    report = replan(live(store, tmp_path, sc.sub, at=120), sc.slurm, preempt=preempting(sc))
    (p,) = report.preempted
    assert p.action == "failed" and "scancel --signal failed" in p.note
    assert states(store, sc.long)[-2:] == [S.PREEMPTING, S.RUNNING]
    assert "Slurm still runs it" in store.get(sc.long).transitions[-1].detail
    assert store.get(sc.long).request.workload == LONG["batches_per_epoch"]  # unchanged
    assert report.started == () and store.get(sc.short).state == S.QUEUED


def test_a_failed_requeue_of_a_job_that_still_runs_leaves_it_running(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sc = scene(store, tmp_path, breaks="requeue")
    report = replan(live(store, tmp_path, sc.sub, at=120), sc.slurm, preempt=preempting(sc))
    assert [p.action for p in report.preempted] == ["failed"]
    assert store.get(sc.long).state == S.RUNNING and store.get(sc.short).state == S.QUEUED


def test_a_job_that_ends_while_it_checkpoints_is_not_requeued_and_ends_as_slurm_says(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sc = scene(store, tmp_path, ends=True)
    report = replan(live(store, tmp_path, sc.sub, at=120), sc.slurm, preempt=preempting(sc))
    (p,) = report.preempted
    assert p.action == "ended" and sum(sc.slept) == pytest.approx(1.0)  # stopped waiting
    assert [c[0] for c in sc.slurm.calls] == ["signal"]
    rec = store.get(sc.long)
    assert rec.state == S.PREEMPTING  # reconcile records its end from Slurm
    ended = replace(sc.slurm.running["101"], end=NOW + timedelta(seconds=125))
    (u,) = plan_updates([rec.summary], {}, {"101": ended}, now=NOW + timedelta(seconds=130))
    assert [s.state for s in u.steps] == [S.COMPLETED]


def test_a_requeue_slurm_does_not_confirm_stays_preempting_until_reconcile(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sc = scene(store, tmp_path, never_held=True)
    report = replan(live(store, tmp_path, sc.sub, at=120), sc.slurm, preempt=preempting(sc))
    (p,) = report.preempted
    assert p.action == "pending" and "mlsub reconcile" in p.note
    rec = store.get(sc.long)
    assert rec.state == S.PREEMPTING and rec.resumed_request is not None
    assert store.get(sc.short).state == S.QUEUED  # its room is still reserved
    held = status("101", "PENDING", "", held=True, reason="JobHeldUser", user=ME)
    (u,) = plan_updates([rec.summary], {}, {"101": held}, now=NOW + timedelta(seconds=200))
    assert [s.state for s in u.steps] == [S.QUEUED]
    store.transition(sc.long, S.QUEUED, NOW + timedelta(seconds=200), u.steps[0].detail)
    assert store.get(sc.long).request == rec.resumed_request  # swapped in by the store


def test_reconcile_gives_a_preemption_whose_replan_is_gone_back_to_running(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sc = scene(store, tmp_path, never_held=True)
    replan(live(store, tmp_path, sc.sub, at=120), sc.slurm, preempt=preempting(sc))
    summary = store.get(sc.long).summary
    runs = status("101", "RUNNING", "", start=NOW, user=ME)
    later = NOW + timedelta(seconds=300)
    for alive, want in ((True, []), (None, []), (False, [S.RUNNING])):
        (u,) = plan_updates([summary], {}, {"101": runs}, now=later, liveness={sc.long: alive})
        assert [s.state for s in u.steps] == want, alive


def test_who_may_be_preempted(store: SqlDecisionStore, tmp_path: Path) -> None:
    sc = scene(store, tmp_path)
    records = [store.get(sc.long), *(store.get(f) for f in sc.fillers)]
    jobs = sc.slurm.jobs()
    (c,) = candidates(records, jobs, "lab", lambda owner: True)
    assert c.record.decision_id == sc.long and c.signal == CheckpointSignal("USR1", 30)
    assert candidates(records, jobs, "lab", lambda owner: owner != ME) == ()  # not ours
    stranger = {**jobs, "101": replace(jobs["101"], user="mallory")}
    assert candidates(records, stranger, "lab", lambda owner: True) == ()
    copied = {**jobs, "101": replace(jobs["101"], comment="mlsched:decision=1:000000000000")}
    assert candidates(records, copied, "lab", lambda owner: True) == ()
    pending = {**jobs, "101": replace(jobs["101"], state="PENDING")}
    assert candidates(records, pending, "lab", lambda owner: True) == ()


def test_a_job_paused_preempt_max_times_is_not_paused_again_but_resizes_do_not_count(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """It stays a candidate (a resize may still speed it up); the rule, on the pauses its
    history counts, does not pause it for the short job once more."""
    from slurm_mlsched.services.live_queue import preempting_step, rebased, stored_and_running
    from slurm_mlsched.services.preempt import running_run
    from slurm_mlsched.storage.records import RESIZE_DETAIL, Transition

    sc = scene(store, tmp_path)
    rec = store.get(sc.long)
    limit = rec.params.preempt_max

    def requeued(times: int, detail: str = "replan: preempted for decision(s) 9") -> DecisionRecord:
        cycle = (
            Transition(S.PREEMPTING, NOW, detail),
            *(Transition(s, NOW) for s in (S.QUEUED, S.STARTING, S.SUBMITTED)),
        )
        return replace(rec, transitions=rec.transitions + cycle * times)

    now = NOW + timedelta(seconds=120)
    w = live(store, tmp_path, sc.sub, at=120)
    with store.viewing("lab") as tx:
        cluster = stored_and_running(tx, w.source.read(now), now, w.slot_seconds, "lab")
    entries = [rebased(store.get(sc.short), cluster.snapshot)]

    def paused(record: DecisionRecord) -> tuple[str, ...]:
        (c,) = candidates([record], sc.slurm.jobs(), "lab", lambda owner: True)
        run = running_run(c, cluster.snapshot)
        assert run is not None and run.preemptions == record.pauses
        return tuple(p.job_id for p in preempting_step(entries, [run], cluster.snapshot)[2])

    worn = requeued(limit)
    assert worn.preemptions == worn.pauses == limit
    assert paused(worn) == ()
    assert paused(requeued(limit - 1)) == (f"mlsub-{sc.long}",)
    resized = requeued(limit, f"{RESIZE_DETAIL} to start again wider")
    assert (resized.preemptions, resized.pauses) == (limit, 0)
    assert paused(resized) == (f"mlsub-{sc.long}",)


def test_signal_and_requeue_run_as_the_jobs_owner_from_root() -> None:
    import pwd

    argv = ["scontrol", "requeuehold", "7"]
    assert as_owner(argv, "alice", euid=1000) == argv
    assert as_owner(argv, "root", euid=0) == argv
    nobody = pwd.getpwnam("nobody")
    assert as_owner(argv, "nobody", euid=0) == [
        "setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--init-groups",
        "--", *argv,
    ]  # fmt: skip


def test_the_replan_after_a_requeue_waits_until_the_nodes_are_given_back() -> None:
    from slurm_mlsched.services.clock import FixedClock
    from slurm_mlsched.services.preempt import wait_room_freed
    from slurm_mlsched.slurm.parse import JobRecord, NodeAllocation
    from tests.unit.test_submit_service import FakeSource

    completing = JobRecord("101", "long", "COMPLETING", (NodeAllocation("node1", 4, 4096, 4),))
    other = JobRecord("55", "other", "RUNNING", (NodeAllocation("node2", 1, 1024, 1),))
    source = FakeSource(jobs=[completing, other])
    slept: list[float] = []

    def sleep(s: float) -> None:  # the node is given back after the second poll
        slept.append(s)
        if len(slept) == 2:
            source.jobs.remove(completing)

    settings = PreemptSettings(confirm_s=10.0, poll_s=1.0)
    clock = FixedClock(NOW)
    assert wait_room_freed(source, ["101"], clock=clock, settings=settings, sleep=sleep)
    assert slept == [1.0, 1.0]
    source.jobs.append(completing)
    slept.clear()
    assert not wait_room_freed(  # bounded: gives up after confirm_s
        source, ["101"], clock=clock, settings=settings, sleep=lambda s: slept.append(s)
    )
    assert slept == [1.0] * 10


def test_pyslurm_reads_a_requeued_job_as_held_by_its_user_as_squeue_does() -> None:
    """pyslurm gives Slurm's description ("job requeued in held state") where squeue
    --json gives the reason (``JobHeldUser``, captured on the lab cluster, Slurm 22.05):
    read through either, a requeued job is held, so reconcile leaves it ``queued``."""
    from types import SimpleNamespace

    from slurm_mlsched.slurm.jobs import fold_components, pyslurm_status_rows

    def job(reason: str) -> SimpleNamespace:
        return SimpleNamespace(
            id=141, heterogeneous_id=None, heterogeneous_offset=None, state="PENDING",
            submit_time=None, start_time=None, end_time=None, allocated_nodes="",
            comment="", admin_comment="", exit_code=0, user_name="root", state_reason=reason,
        )  # fmt: skip

    for reason in ("job requeued in held state", "JobHeldUser"):
        module = SimpleNamespace(Jobs=SimpleNamespace(load=lambda r=reason: {141: job(r)}))
        (status,) = fold_components(pyslurm_status_rows(module), "squeue").values()
        assert status.held and status.reason == "JobHeldUser", reason
    module = SimpleNamespace(Jobs=SimpleNamespace(load=lambda: {141: job("Resources")}))
    (status,) = fold_components(pyslurm_status_rows(module), "squeue").values()
    assert not status.held and status.reason == "Resources"


# --- resize by checkpoint-restart (the site's preempt_resize) ----------------------------------


def workers(record: DecisionRecord) -> list[tuple[str, int]]:
    return [(c.node, c.count) for c in record.decision.placement if c.role.value == "worker"]


def test_with_resize_a_waiting_job_starts_narrow_and_grows_when_the_room_frees(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """Three long whole-node jobs fill node1-3 and B holds 2 of node4's 4 GPUs for 10
    slots; N (4 workers, consents) waits for node4. With the site's ``preempt_resize`` the
    re-plan starts N now on the 2 GPUs left (the replay's rule: narrow now and grown at
    B's end ends 4 slots sooner than waiting, and alone at most 2 × later); when B ends,
    the next re-plan — nothing waits then — pauses N (a resize: for no waiting job, not
    counted as a pause) and starts it again on all 4 GPUs of node4 with the work it has
    left."""
    sub = HeldSubmitter()
    w = live(store, tmp_path, sub)
    fillers = [submit_job(w, opts(**LONG, name=f"f{k}"), JOB) for k in range(3)]
    b = submit_job(w, opts(workers=2, batches_per_epoch=2 * 120 * 10, name="b"), JOB)
    n = submit_job(w, opts(workers=4, batches_per_epoch=4 * 120 * 20, name="n", sbatch=SIGNAL), JOB)
    assert n.waits and n.record is not None and b.record is not None
    assert {c.node for c in b.record.decision.placement} == {"node4"}
    fake = FakeSlurm(store=store)
    run_in(fake, *fillers, b)
    slept: list[float] = []
    resize = LivePreemption(
        fake, PreemptSettings(wait_max_s=5.0, confirm_s=3.0, resize=True), sleep=slept.append
    )
    # without resize N waits; with it, it starts now on node4's 2 free GPUs
    plain = LivePreemption(fake, PreemptSettings(wait_max_s=5.0, confirm_s=3.0))
    ahead = view_of(store, live(store, tmp_path, sub, at=60), fake, resize.settings)
    assert [w.decision_id for w in ahead.would_start] == [n.record.decision_id]
    assert ahead.would_pause == () and "node4:1ps+2w" in ahead.would_start[0].reason
    assert replan(live(store, tmp_path, sub, at=60), fake, preempt=plain).started == ()
    report = replan(live(store, tmp_path, sub, at=60), fake, preempt=resize)
    (started,) = report.started
    nid = n.record.decision_id
    narrow = store.get(nid)
    assert started.decision_id == nid and report.preempted == ()
    assert workers(narrow) == [("node4", 2)]
    job = narrow.summary.slurm_job_id
    assert job is not None
    tag = str(tag_of("lab", narrow.summary))
    fake.running[job] = status(job, "RUNNING", tag, start=NOW + timedelta(seconds=60), user=ME)
    # B ends at its planned end; the next re-plan grows N
    end_in(fake, store, b, NOW + timedelta(seconds=600))
    # at the site's restart cost of 50 min no grow pays
    costly = PreemptSettings(wait_max_s=5.0, confirm_s=3.0, resize=True, restart_s=3000.0)
    dear = replan(
        live(store, tmp_path, sub, at=610), fake, preempt=replace(resize, settings=costly)
    )
    assert dear.preempted == () and fake.calls == []
    # ``mlsub queue`` says so before it happens: N would be resized, restarting at once
    # (nothing waits: the view's pass over the nodes no queued job may use)
    (seen,) = view_of(store, live(store, tmp_path, sub, at=610), fake, resize.settings).would_pause
    assert (seen.decision_id, seen.kind, seen.for_decisions) == (nid, "resize", ())
    assert seen.estimated_restart == NOW + timedelta(seconds=610)
    assert "starts again wider" in seen.reason and fake.calls == []
    grown = replan(live(store, tmp_path, sub, at=610), fake, preempt=resize)
    (p,) = grown.preempted
    assert (p.decision_id, p.action, p.for_decisions) == (nid, "requeued", ())
    assert [c[0] for c in fake.calls] == ["signal", "requeuehold"]
    rec = store.get(nid)
    paused = next(t for t in rec.transitions if t.state == S.PREEMPTING)
    assert paused.detail.startswith("replan: resized")
    assert (rec.preemptions, rec.pauses) == (1, 0)
    assert [s.decision_id for s in grown.started] == [nid]
    assert workers(rec) == [("node4", 4)]
    assert rec.request.workload < narrow.request.workload  # the work it had left
    ends = [r.snapshot.slot_start(r.decision.end_slot + 1) for r in (narrow, rec)]
    assert ends[1] < ends[0]  # it ends sooner than it would have, narrow


# --- moves to a smaller node (the site's preempt_defrag) ---------------------------------------


@dataclass
class MoveScene:
    store: SqlDecisionStore
    wired: Callable[[int], LiveWiring]
    fake: FakeSlurm
    a: int  # the one-GPU job on node2 that consents
    e: int  # the 4-worker job that waits


def move_scene(store: SqlDecisionStore, tmp_path: Path) -> MoveScene:
    """node1 and node2 have 4 GPUs, node3 and node4 one. D and C hold the 1-GPU nodes, B
    node1, F three of node2's GPUs and A (one GPU, consents) the last; E (4 workers whose
    spread run is slower than co-located) waits. C and F end at slot 2."""
    from slurm_mlsched.slurm.parse import NodeRecord
    from tests.unit.test_submit_service import FakeSource

    def size(name: str, gpus: int) -> NodeRecord:
        return NodeRecord(name, "IDLE", frozenset(), 8, 65536.0, gpus, address="127.0.0.1",
                          partitions=("debug",))  # fmt: skip

    nodes = (size("node1", 4), size("node2", 4), size("node3", 1), size("node4", 1))
    sub = HeldSubmitter()

    def wired(at: int = 0) -> LiveWiring:
        return replace(live(store, tmp_path, sub, at=at), source=FakeSource(nodes=nodes))

    one = {"workers": 1, "batches_per_epoch": 120 * 30}  # 30 slots at one worker
    d = submit_job(wired(), opts(**one, name="d"), JOB)
    c = submit_job(wired(), opts(workers=1, batches_per_epoch=120 * 2, name="c"), JOB)
    b = submit_job(wired(), opts(workers=4, batches_per_epoch=4 * 120 * 30, name="b"), JOB)
    f = submit_job(wired(), opts(workers=3, batches_per_epoch=3 * 120 * 2, name="f"), JOB)
    a = submit_job(wired(), opts(**one, name="a", sbatch=SIGNAL), JOB)
    placed = [workers(x.record) for x in (d, c, b, f, a) if x.record is not None]
    assert placed == [
        [("node3", 1)], [("node4", 1)], [("node1", 4)], [("node2", 3)], [("node2", 1)],
    ]  # fmt: skip
    slow = {"model_size": 100}  # its spread run is slower than co-located
    e = submit_job(wired(), opts(workers=4, batches_per_epoch=4 * 120 * 4, name="e", **slow), JOB)
    assert e.waits and e.record is not None and a.record is not None
    fake = FakeSlurm(store=store)
    run_in(fake, d, c, b, f, a)
    for ended in (c, f):
        end_in(fake, store, ended, NOW + timedelta(seconds=120))
    return MoveScene(store, wired, fake, a.record.decision_id, e.record.decision_id)


def test_with_defrag_a_one_gpu_job_moves_to_a_one_gpu_node_and_a_wide_job_starts_co_located(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """The scene of :func:`move_scene` once C and F have ended: the re-plan with the site's
    ``preempt_defrag`` moves A (a pause for E, counted as one, its detail ``replan: moved
    to a smaller node``) and the re-plan after the requeue starts A again on node4 and E
    co-located on node2 on all 4 GPUs. With the site's preemption alone nothing moves and
    E starts narrow, on node2's 3 free GPUs."""
    settings = {"wait_max_s": 5.0, "confirm_s": 3.0, "restart_s": 60.0}
    other = open_store(f"sqlite:///{tmp_path / 'other.db'}", grace_s=0.0)
    plain = move_scene(other, tmp_path / "plain")
    unmoved = replan_with(plain.wired(130), plain.fake, PreemptSettings(**settings))
    assert unmoved.preempted == () and plain.fake.calls == []
    assert [s.decision_id for s in unmoved.started] == [plain.e]
    assert workers(other.get(plain.e)) == [("node2", 3)]

    sc = move_scene(store, tmp_path / "defrag")
    report = replan_with(sc.wired(130), sc.fake, PreemptSettings(**settings, defrag=True))
    (p,) = report.preempted
    assert (p.decision_id, p.action, p.for_decisions, p.move) == (sc.a, "requeued", (sc.e,), True)
    assert p.to_json()["move"] is True
    assert [x[0] for x in sc.fake.calls] == ["signal", "requeuehold"]
    rec = store.get(sc.a)
    paused = next(t for t in rec.transitions if t.state == S.PREEMPTING)
    assert paused.detail.startswith("replan: moved to a smaller node"), paused.detail
    assert f"decision(s) {sc.e} start co-located" in paused.detail
    assert (rec.preemptions, rec.pauses) == (1, 1)  # a move counts as a pause
    assert {s.decision_id for s in report.started} == {sc.a, sc.e}
    assert workers(rec) == [("node4", 1)]
    wide = store.get(sc.e)
    assert workers(wide) == [("node2", 4)]
    assert {c.node for c in wide.decision.placement} == {"node2"}  # its PS too


# --- regather before the re-plan (the site's preempt_regather) ---------------------------------


@dataclass
class GatherScene:
    store: SqlDecisionStore
    wired: Callable[[int], LiveWiring]
    fake: FakeSlurm
    a: int  # the 4-worker job that consents, spread one worker a node
    w: int  # the longer job that waits


def gather_scene(store: SqlDecisionStore, tmp_path: Path) -> GatherScene:
    """F1–F4 (3 workers, 30 slots) hold 3 of each node's 4 GPUs; A (4 workers whose spread
    run is slower than co-located, consents) starts spread on the last GPU of each node;
    W (4 workers, more work than A) finds nothing free and waits. F1 ends at slot 2."""
    sub = HeldSubmitter()

    def wired(at: int = 0) -> LiveWiring:
        return live(store, tmp_path, sub, at=at)

    fs = [submit_job(wired(), opts(workers=3, batches_per_epoch=3 * 120 * 30, name=f"f{k}"), JOB)
          for k in range(1, 5)]  # fmt: skip
    slow = {"model_size": 100}  # its spread run is slower than co-located
    six = 4 * 120 * 6  # 6 slots on 4 workers co-located
    a = submit_job(
        wired(), opts(workers=4, batches_per_epoch=six, name="a", sbatch=SIGNAL, **slow), JOB
    )
    assert a.record is not None and not a.waits
    assert sorted(workers(a.record)) == [("node1", 1), ("node2", 1), ("node3", 1), ("node4", 1)]
    w = submit_job(wired(), opts(workers=4, batches_per_epoch=4 * 120 * 20, name="w"), JOB)
    assert w.waits and w.record is not None
    fake = FakeSlurm(store=store)
    run_in(fake, *fs, a)
    ended = fs[0]
    assert ended.record is not None
    assert {c.node for c in ended.record.decision.placement} == {"node1"}
    end_in(fake, store, ended, NOW + timedelta(seconds=120))
    return GatherScene(store, wired, fake, a.record.decision_id, w.record.decision_id)


def test_with_regather_a_spread_job_ahead_of_the_queue_restarts_on_the_node_that_frees(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """The scene of :func:`gather_scene` once F1 has ended: with the site's resize alone
    the re-plan gives node1's 3 free GPUs to the queue first (W, narrow) and A stays
    spread; with ``preempt_regather`` A, whose work left is below W's, is decided before
    the queue: paused (a resize, not counted as a pause; its detail says it starts again
    co-located) and started again by the re-plan after the requeue on all 4 GPUs of
    node1, its PS beside them."""
    settings = {"wait_max_s": 5.0, "confirm_s": 3.0, "resize": True}
    other = open_store(f"sqlite:///{tmp_path / 'other.db'}", grace_s=0.0)
    plain = gather_scene(other, tmp_path / "plain")
    unmoved = replan_with(plain.wired(130), plain.fake, PreemptSettings(**settings))
    assert unmoved.preempted == () and plain.fake.calls == []
    assert [s.decision_id for s in unmoved.started] == [plain.w]
    assert {n for n, _ in workers(other.get(plain.w))} == {"node1"}
    assert len(workers(other.get(plain.a))) == 4  # still spread

    sc = gather_scene(store, tmp_path / "regather")
    before = store.get(sc.a)
    report = replan_with(sc.wired(130), sc.fake, PreemptSettings(**settings, regather=True))
    (p,) = report.preempted
    assert (p.decision_id, p.action, p.for_decisions) == (sc.a, "requeued", ())
    assert p.regather and not p.move and p.to_json()["regather"] is True
    assert [x[0] for x in sc.fake.calls] == ["signal", "requeuehold"]
    rec = store.get(sc.a)
    paused = next(t for t in rec.transitions if t.state == S.PREEMPTING)
    assert paused.detail.startswith(
        "replan: resized to start again co-located on one node before the queue"
    ), paused.detail
    assert (rec.preemptions, rec.pauses) == (1, 0)  # a resize: not a pause for others
    assert sc.a in {s.decision_id for s in report.started}
    assert workers(rec) == [("node1", 4)]
    assert {c.node for c in rec.decision.placement} == {"node1"}  # its PS too
    assert rec.request.workload < before.request.workload  # the work it had left
    ends = [r.snapshot.slot_start(r.decision.end_slot + 1) for r in (before, rec)]
    assert ends[1] < ends[0]  # it ends sooner than spread
    w = store.get(sc.w)
    if w.state != S.QUEUED:  # W may start on what A left, never on node1
        assert "node1" not in {n for n, _ in workers(w)}


def test_a_queued_job_is_pausable_for_the_look_ahead_only_when_it_consents(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """With the site's preemption the look-ahead holds back only the narrow starts of jobs
    the rule could not pause once started (docs/formulation.md §14.7): a queued job is
    pausable when its script asks for a warning signal and it can be submitted again."""
    from slurm_mlsched.services.live_queue import consents

    sub = HeldSubmitter()
    w = live(store, tmp_path, sub)
    fill = [submit_job(w, opts(**LONG, name=f"f{k}"), JOB) for k in range(4)]
    assert all(f.record is not None for f in fill)
    asks = submit_job(w, opts(**LONG, name="asks", sbatch=SIGNAL), JOB)
    plain = submit_job(w, opts(**LONG, name="plain"), JOB)
    assert asks.waits and plain.waits and asks.record is not None and plain.record is not None
    assert consents(store.get(asks.record.decision_id))
    assert not consents(store.get(plain.record.decision_id))
    assert not consents(None)  # a job being submitted: no record yet


# --- mlsub queue where the site preempts ---------------------------------------------------------


def view_of(
    store: SqlDecisionStore,
    wired: LiveWiring,
    fake: FakeSlurm,
    settings: PreemptSettings | None,
    user: str | None = None,
) -> QueueView:
    """``mlsub queue`` on ``wired``: with the site's preemption ``settings`` (None: off)."""
    runs = preemptible(store, "lab", fake, lambda _owner: True)
    return queue_view(
        store,
        wired.source.read(wired.clock.now()),
        clock=wired.clock,
        cluster_name="lab",
        slot_seconds=wired.slot_seconds,
        user=user,
        preempt=None if settings is None else ViewPreemption(runs, settings),
    )


def test_mlsub_queue_shows_the_pause_the_next_replan_makes_and_does_nothing(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sc = scene(store, tmp_path)
    wired = live(store, tmp_path, sc.sub, at=120)
    settings = PreemptSettings(wait_max_s=5.0)
    plain = view_of(store, wired, sc.slurm, None)
    assert plain.would_start == () and plain.would_pause == () and not plain.preempting
    assert [w.decision_id for w in plain.waiting] == [sc.short]

    view = view_of(store, wired, sc.slurm, settings)
    assert view.preempting
    (p,) = view.would_pause
    assert (p.decision_id, p.kind, p.for_decisions, p.slurm_job_id) == (
        sc.long,
        "pause",
        (sc.short,),
        "101",
    )
    assert p.gain_s > 0 and f"paused for decision(s) {sc.short}" in p.reason
    (start,) = view.would_start
    assert start.decision_id == sc.short and start.position == 0
    assert f"once it has paused decision {sc.long} (pause)" in start.reason
    # it restarts later, after the short job it gave way to: the estimate's start
    assert start.estimate is not None and start.estimate.end is not None
    assert p.estimated_restart is not None and p.estimated_restart >= start.estimate.end
    # the short job starts now in the estimate too, and the plan vs bound counts both
    assert start.estimated_start == wired.clock.now()
    assert view.bound is not None and len(view.bound.jobs) == 2
    as_json = view.to_json()
    assert as_json["preempting"] is True
    assert [x["decision_id"] for x in as_json["would_pause"]] == [sc.long]  # type: ignore[index]
    # a view changes nothing: no Slurm call, every decision as it was
    assert sc.slurm.calls == [] and store.get(sc.long).state == S.SUBMITTED
    assert store.get(sc.short).state == S.QUEUED

    # another user sees neither the pause nor the job (not theirs, not for theirs)
    other = view_of(store, wired, sc.slurm, settings, user="someone-else")
    assert other.would_pause == () and other.would_start == () and other.waiting == ()

    # and the re-plan then does what the view said
    report = replan(wired, sc.slurm, preempt=preempting(sc))
    assert [(x.decision_id, x.action) for x in report.preempted] == [(sc.long, "requeued")]
    assert [s.decision_id for s in report.started] == [sc.short]
    assert report.started[0].placement in start.reason


def test_mlsub_queue_when_the_rules_step_is_not_the_one_after_its_kept_pauses(
    store: SqlDecisionStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the rule's step was taken with a grow the group does not keep (a job of other
    nodes rules), ``group_pauses`` gives the kept pauses without a step; the view then
    steps the queue as the re-plan after them does: the paused jobs wait in it, nothing
    is missing from its rows."""
    from slurm_mlsched.services import replan as replan_module

    sc = scene(store, tmp_path)
    wired = live(store, tmp_path, sc.sub, at=120)
    real = replan_module.group_pauses

    def without_step(*args: object, **kwargs: object) -> replan_module.GroupPauses:
        got = real(*args, **kwargs)  # type: ignore[arg-type]
        return replace(got, step=None) if got.paused else got

    monkeypatch.setattr(replan_module, "group_pauses", without_step)
    view = view_of(store, wired, sc.slurm, PreemptSettings(wait_max_s=5.0))
    (p,) = view.would_pause
    assert (p.decision_id, p.for_decisions) == (sc.long, (sc.short,))
    assert [w.decision_id for w in view.would_start] == [sc.short]
    assert p.estimated_restart is not None and view.bound is not None
    assert len(view.bound.jobs) == 2  # the paused job waits in the estimate too
