"""Late binding on the live path (issue 19) with the real store (a SQLite file) and
stand-ins for Slurm: a job that cannot start waits held and ``queued`` holding nothing; a
re-plan starts it (release when the layout is the held one's, else a new submission and
the held job cancelled), records it before acting, starts it once, and a start that a
stopped re-plan left is finished. The same against the real cluster, with slurmctld's
epilog: tests/integration/test_queue_live.py."""

from __future__ import annotations

import os
import pwd
import stat
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest

from slurm_mlsched.errors import SlurmError
from slurm_mlsched.files.job_script import JobScript
from slurm_mlsched.placement import PlacementParams
from slurm_mlsched.sbatch.launch import Launch
from slurm_mlsched.sbatch.tag import DecisionTag
from slurm_mlsched.services.clock import FixedClock
from slurm_mlsched.services.live_queue import LiveWiring
from slurm_mlsched.services.replan import (
    cancel_replaced,
    finish_starts,
    queue_view,
    replan,
    sbatch_argv,
)
from slurm_mlsched.services.submit import submit_job
from slurm_mlsched.slurm.jobs import JobStatus
from slurm_mlsched.storage import DecisionState, SqlDecisionStore, open_store
from tests.unit.test_submit_service import JOB, NOW, FakeSource, FakeSubmitter, opts, wiring

S = DecisionState
ME = pwd.getpwuid(os.geteuid()).pw_name


@dataclass
class HeldSubmitter(FakeSubmitter):
    held: list[str] = field(default_factory=list)

    def submit_held(self, script: str, job: JobScript, tag: DecisionTag) -> str:
        self.held.append(script)
        return str(500 + len(self.held))


@dataclass
class FakeStarter:
    """Records the Slurm side; ``fail`` makes release and submit raise."""

    released: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    submitted: list[tuple[str, Launch, str]] = field(default_factory=list)
    fail: bool = False
    owners: frozenset[str] | None = None  # whose jobs it may start (None: everyone's)
    held: list[JobStatus] = field(default_factory=list)  # what squeue lists as held

    store: SqlDecisionStore | None = None  # held_jobs: every queued decision's, as Slurm says

    def held_jobs(self) -> list[JobStatus]:
        jobs = list(self.held)
        if self.store is not None:
            from slurm_mlsched.services.live_queue import tag_of
            from tests.unit.test_submit_service import status

            for r in self.store.history():
                if r.state in (S.QUEUED, S.STARTING) and r.slurm_job_id:
                    jobs.append(
                        status(
                            r.slurm_job_id,
                            "PENDING",
                            str(tag_of("lab", r)),
                            held=True,
                            user=r.job_owner,
                            reason="JobHeldUser",
                        )
                    )
        return [j for j in jobs if j.job_id not in self.cancelled]

    updated: list[tuple[str, tuple[str, ...], int]] = field(default_factory=list)

    def update_release(self, job_id: str, nodes: Sequence[str], tasks: int) -> None:
        if self.fail:
            raise SlurmError("scontrol update: controller busy")
        self.updated.append((job_id, tuple(nodes), tasks))
        self.released.append(job_id)

    def may_start(self, owner: str) -> bool:
        return self.owners is None or owner in self.owners

    began: list[str] = field(default_factory=list)

    def begin_now(self, job_id: str, owner: str) -> None:
        self.began.append(job_id)

    def release(self, job_id: str) -> None:
        if self.fail:
            raise SlurmError("scontrol release: controller busy")
        self.released.append(job_id)

    def cancel(self, job_id: str) -> None:
        self.cancelled.append(job_id)

    def submit(self, script: str, launch: Launch, owner: str) -> str:
        if self.fail:
            raise SlurmError("sbatch: controller busy")
        self.submitted.append((script, launch, owner))
        return str(900 + len(self.submitted))


@pytest.fixture
def store(tmp_path: Path) -> SqlDecisionStore:
    return open_store(f"sqlite:///{tmp_path / 'd.db'}", grace_s=0.0)


def live(store: SqlDecisionStore, tmp_path: Path, sub: HeldSubmitter, at: int = 0) -> LiveWiring:
    w = wiring(store, FakeSource(), sub)
    return LiveWiring(
        **{
            **w.__dict__,
            "clock": FixedClock(NOW + timedelta(seconds=at)),
            "held_submitter": sub,
            "env_dir": tmp_path / "env",
            "slurm_user": ME,  # the kept environment file is the job owner's: this user's
        }
    )


def whole_node() -> dict[str, object]:
    """4 one-GPU workers: one lab node (4 GPUs) each."""
    return {"workers": 4, "step_time": 0.5, "epochs": 1, "batches_per_epoch": 1200}


def fill_and_queue(store: SqlDecisionStore, tmp_path: Path) -> tuple[HeldSubmitter, list[int]]:
    sub = HeldSubmitter()
    ids = []
    for k in range(5):
        out = submit_job(live(store, tmp_path, sub), opts(**whole_node(), name=f"j{k}"), JOB)
        assert out.record is not None
        ids.append(out.record.decision_id)
    return sub, ids


def test_a_job_that_cannot_start_waits_held_and_holds_nothing(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sub, ids = fill_and_queue(store, tmp_path)
    states = [store.get(i).state for i in ids]
    assert states == [S.SUBMITTED] * 4 + [S.QUEUED]
    assert len(sub.scripts) == 4 and len(sub.held) == 1
    queued = store.get(ids[4])
    assert queued.summary.slurm_job_id == "501"
    assert "--begin" not in sub.held[0]  # a re-plan releases it, not a start time
    assert queued.launch is not None and queued.launch.workdir == os.getcwd()
    # it reserves nothing: the four running jobs' reservations only
    held = store.reservations("lab", NOW, epoch=NOW, slot_seconds=60.0)
    assert {r.job_id for r in held} == {f"mlsub-{i}" for i in ids[:4]}
    # its environment is kept for a new submission, readable by the user only
    assert queued.launch.env_file is not None
    env = Path(queued.launch.env_file)
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    assert stat.S_IMODE(env.parent.stat().st_mode) == 0o700
    assert f"PATH={os.environ['PATH']}".encode() in env.read_bytes().split(b"\0")


def test_replan_starts_the_queued_job_once_capacity_frees(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sub, ids = fill_and_queue(store, tmp_path)
    starter = FakeStarter(store=store)
    w = live(store, tmp_path, sub, at=30)
    nothing = replan(w, starter)
    assert nothing.started == () and [x.decision_id for x in nothing.waiting] == [ids[4]]

    store.transition(ids[1], S.COMPLETED, NOW + timedelta(seconds=20), "ended early")
    report = replan(live(store, tmp_path, sub, at=40), starter)
    assert [s.decision_id for s in report.started] == [ids[4]]
    rec = store.get(ids[4])
    assert rec.state == S.SUBMITTED
    assert [t.state for t in rec.transitions] == [S.SUBMITTING, S.QUEUED, S.STARTING, S.SUBMITTED]
    nodes = {p.node for p in rec.decision.placement}
    freed = {p.node for p in store.get(ids[1]).decision.placement}
    assert nodes == freed  # the only free node
    if report.started[0].action == "released":  # the held job's layout was kept
        assert starter.released == ["501"] and rec.summary.slurm_job_id == "501"
        assert rec.script == sub.held[0]
    else:  # a new layout: submitted again as its owner, the held job cancelled after
        assert report.started[0].action == "resubmitted"
        ((script, _launch, owner),) = starter.submitted
        assert script == rec.script and owner == ME
        assert rec.summary.slurm_job_id == "901" and rec.earlier_job_ids == ("501",)
        assert starter.cancelled == ["501"]
    # it reserves its layout from now on; a second re-plan starts nothing more
    held = store.reservations("lab", NOW + timedelta(seconds=40), epoch=NOW, slot_seconds=60.0)
    assert f"mlsub-{ids[4]}" in {r.job_id for r in held}
    again = replan(live(store, tmp_path, sub, at=45), starter)
    assert again.started == () and len(starter.released) + len(starter.submitted) == 1


def test_a_changed_layout_is_submitted_again_and_the_held_job_cancelled(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sub, ids = fill_and_queue(store, tmp_path)
    tentative = {p.node for p in store.get(ids[4]).decision.placement}
    other = next(i for i in ids[:4] if {p.node for p in store.get(i).decision.placement}
                 != tentative)  # fmt: skip
    store.transition(other, S.COMPLETED, NOW + timedelta(seconds=20), "ended early")
    starter = FakeStarter(store=store)
    report = replan(live(store, tmp_path, sub, at=40), starter)
    assert [s.action for s in report.started] == ["resubmitted"]
    rec = store.get(ids[4])
    assert rec.earlier_job_ids == ("501",) and starter.cancelled == ["501"]
    assert rec.launch is not None and rec.launch.env_file is not None
    assert not Path(rec.launch.env_file).exists()  # not kept once the job is submitted


def test_a_replan_that_could_not_act_leaves_starting_and_the_next_finishes_it(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sub, ids = fill_and_queue(store, tmp_path)
    store.transition(ids[0], S.COMPLETED, NOW + timedelta(seconds=20), "ended early")
    broken = FakeStarter(fail=True, store=store)
    report = replan(live(store, tmp_path, sub, at=40), broken)
    assert [s.action for s in report.started] == ["failed"]
    assert store.get(ids[4]).state == S.STARTING  # recorded before acting, never turned back
    # its layout stays reserved: no other job is given its node meanwhile
    held = store.reservations("lab", NOW + timedelta(seconds=40), epoch=NOW, slot_seconds=60.0)
    assert f"mlsub-{ids[4]}" in {r.job_id for r in held}
    good = FakeStarter(store=store)
    new_script = store.get(ids[4]).script
    notes = finish_starts(store, good, "lab", NOW + timedelta(seconds=50))
    assert len(notes) == 1 and store.get(ids[4]).state == S.SUBMITTED
    # the held job is released only when its script is the one the decision now names
    if new_script == sub.held[0]:
        assert good.released == ["501"] and good.submitted == []
    else:
        assert good.released == [] and [x[0] for x in good.submitted] == [new_script]
    assert finish_starts(store, good, "lab", NOW + timedelta(seconds=60)) == []


def test_others_queued_jobs_are_left_to_their_owners(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sub, ids = fill_and_queue(store, tmp_path)
    store.transition(ids[0], S.COMPLETED, NOW + timedelta(seconds=20), "ended early")
    bob = FakeStarter(owners=frozenset({"bob"}), store=store)
    report = replan(live(store, tmp_path, sub, at=40), bob)
    assert report.started == () and report.skipped == (ids[4],)
    assert store.get(ids[4]).state == S.QUEUED


def test_queue_view_gives_position_and_what_it_waits_for(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    sub = HeldSubmitter()
    ids = []
    for k in range(6):
        out = submit_job(live(store, tmp_path, sub), opts(**whole_node(), name=f"j{k}"), JOB)
        assert out.record is not None
        ids.append(out.record.decision_id)
    view = queue_view(
        store,
        FakeSource().read(NOW),
        clock=FixedClock(NOW + timedelta(seconds=30)),
        cluster_name="lab",
        slot_seconds=60.0,
        user="alice",
    )
    assert view.would_start == ()
    assert [(w.decision_id, w.position) for w in view.waiting] == [(ids[4], 1), (ids[5], 2)]
    assert view.waiting[0].estimated_start is not None
    assert "planned to start" in view.waiting[0].reason
    assert queue_view(
        store, FakeSource().read(NOW), clock=FixedClock(NOW), cluster_name="lab",
        slot_seconds=60.0, user="bob",
    ).waiting == ()  # fmt: skip


def test_sbatch_of_a_new_layout_runs_as_the_owner_with_the_kept_environment(
    tmp_path: Path,
) -> None:
    from slurm_mlsched.sbatch.render import ScriptSpec

    env = tmp_path / "e.env"
    env.write_bytes(b"A=1\0")
    launch = Launch(ScriptSpec(("python3", "t.py"), "t"), "/home/alice/run", str(env))
    mine = sbatch_argv(launch, ME, euid=os.geteuid())
    assert mine == ["sbatch", "--parsable", "--chdir=/home/alice/run", f"--export-file={env}"]
    # the kept environment must be the owner's own file: else none is passed at all (not
    # this process's either) — the path comes from the store, which a user may edit
    for other in ("nobody", "no-such-user-here"):
        foreign = sbatch_argv(launch, other, euid=1000)
        assert foreign == ["sbatch", "--parsable", "--chdir=/home/alice/run", "--export=NONE"]
    gone = sbatch_argv(Launch(launch.spec, "/w", str(tmp_path / "missing")), ME, euid=1000)
    assert gone == ["sbatch", "--parsable", "--chdir=/w", "--export=NONE"]
    link = tmp_path / "link.env"
    link.symlink_to(env)
    linked = sbatch_argv(Launch(launch.spec, "/w", str(link)), ME, euid=1000)
    assert linked[-1] == "--export=NONE"  # a link is never followed
    # another user's job, from root: through setpriv, with sbatch's own input variables
    if os.geteuid() != 0:
        pytest.skip("giving the file to another user needs root")
    env.write_bytes(b"A=1\0SBATCH_ACCOUNT=proj-7\0SBATCH_QOS=low\0NOT_SBATCH=x\0")
    nobody = pwd.getpwnam("nobody")
    os.chown(env, nobody.pw_uid, nobody.pw_gid)
    theirs = sbatch_argv(launch, "nobody", euid=0)
    assert theirs[:5] == [
        "setpriv", f"--reuid={nobody.pw_uid}", f"--regid={nobody.pw_gid}", "--init-groups", "--",
    ]  # fmt: skip
    assert theirs[5:] == ["env", "SBATCH_ACCOUNT=proj-7", "SBATCH_QOS=low", *mine]


# --- reconcile of held jobs (pure) ------------------------------------------------------------


def test_reconcile_of_a_held_submission_and_a_queued_job(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    from slurm_mlsched.services.live_queue import tag_of
    from slurm_mlsched.services.reconcile import plan_updates
    from tests.unit.test_submit_service import status

    _sub, ids = fill_and_queue(store, tmp_path)
    queued = store.get(ids[4]).summary
    tag = str(tag_of("lab", queued))
    later = NOW + timedelta(minutes=5)

    def after(summary: object, found: dict[str, object]) -> list[DecisionState]:
        (u,) = plan_updates([summary], {ids[4]: tag}, found, now=later)  # type: ignore[list-item]
        return [s.state for s in u.steps]

    held = status("501", "PENDING", tag, held=True)
    assert after(queued, {"501": held}) == []  # waits: nothing to record
    released = status("501", "RUNNING", tag, start=later)
    assert after(queued, {"501": released}) == [S.SUBMITTED, S.RUNNING]  # released by hand
    gone = status("501", "CANCELLED", tag, end=later)
    assert after(queued, {"501": gone}) == [S.CANCELLED]  # scancel of the held job
    # a held job found by its tag for an interrupted submission: queued, not submitted
    from dataclasses import replace as dc_replace

    submitting = dc_replace(queued, state=S.SUBMITTING, slurm_job_id=None)
    assert after(submitting, {"501": held}) == [S.QUEUED]
    # a re-plan that stopped after submitting the new layout: the new job, not the held one
    starting = dc_replace(queued, state=S.STARTING)
    new = status("777", "RUNNING", tag, start=later)
    (u,) = plan_updates([starting], {ids[4]: tag}, {"501": held, "777": new}, now=later)
    assert next((s.state, s.slurm_job_id) for s in u.steps) == (S.SUBMITTED, "777")
    # ... and one that stopped before acting: still held, left to the next re-plan
    (u,) = plan_updates([starting], {ids[4]: tag}, {"501": held}, now=later)
    assert u.steps == () and "next `mlsub replan`" in u.note


def test_a_held_job_left_by_a_stopped_replan_is_cancelled_once_replaced(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """A re-plan stopped after submitting the new layout and before cancelling the held
    job: reconcile recorded the new job (the held id went to the earlier ids); the next
    re-plan cancels the held one, and nothing else (a held job of a decision that still
    waits, a copied tag, another store's tag)."""
    from slurm_mlsched.services.live_queue import tag_of
    from tests.unit.test_submit_service import status

    _sub, ids = fill_and_queue(store, tmp_path)
    queued = store.get(ids[4]).summary
    tag = str(tag_of("lab", queued))
    store.transition(ids[4], S.SUBMITTED, NOW, "reconcile: new job", slurm_job_id="777")
    assert store.get(ids[4]).earlier_job_ids == ("501",)
    left = status("501", "PENDING", tag, held=True)
    other_store = status("502", "PENDING", f"mlsched:decision={ids[4]}:ffffffffffff", held=True)
    waits = status("503", "PENDING", str(tag_of("lab", store.get(ids[3]).summary)), held=True)
    starter = FakeStarter(held=[left, other_store, waits])
    notes = cancel_replaced(store, starter, "lab")
    assert starter.cancelled == ["501"] and "replaced by job 777" in notes[0]
    assert cancel_replaced(store, starter, "lab") == []  # once
    assert cancel_replaced(store, FakeStarter(held=[left], owners=frozenset({"bob"})), "lab") == []


def test_the_head_keeps_its_tentative_plan_across_live_re_plans(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """The monotone head live: a re-plan stores the reserved head's tentative plan, and the
    next one gets it back on its own grid (the same wall-clock times), to keep it when it
    still fits and ends earlier (docs/formulation.md §14.1, §14.8)."""
    from slurm_mlsched.services.live_queue import rebased, stored_and_running

    sub, ids = fill_and_queue(store, tmp_path)
    later = NOW + timedelta(seconds=70)  # the next slot: a snapshot of its own
    report = replan(live(store, tmp_path, sub, at=70), FakeStarter(store=store))
    assert report.started == () and report.waiting[0].estimated_start is not None
    head = store.get(ids[4])
    assert head.state == S.QUEUED and [t.state for t in head.transitions][-1] == S.QUEUED
    assert head.snapshot.epoch == later.replace(second=0)  # the re-plan's snapshot
    start_at = head.snapshot.slot_start(head.decision.start_slot)
    assert start_at == report.waiting[0].estimated_start
    # ... it holds nothing still
    held = store.reservations("lab", later, epoch=NOW, slot_seconds=60.0)
    assert f"mlsub-{ids[4]}" not in {r.job_id for r in held}
    # four minutes on, the stored plan comes back at the same wall-clock times
    with store.viewing("lab") as tx:
        cluster = stored_and_running(
            tx, FakeSource().read(NOW), NOW + timedelta(minutes=5), 60.0, "lab"
        )
    entry = rebased(head, cluster.snapshot)
    assert entry.plan is not None and entry.plan.job_id == entry.key
    assert cluster.snapshot.slot_start(entry.plan.start_slot) == start_at
    assert entry.plan.start_slot == head.decision.start_slot - 4
    assert [p.slot for p in entry.plan.slots] == [p.slot - 4 for p in head.decision.slots]


def test_queue_view_estimates_every_waiting_job_and_the_plan_vs_the_bound(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """Four jobs fill the four nodes, five wait: each waiting job has an estimated start
    (the first ``reserve_depth`` from their plans, the others list scheduled), none
    before now, and the queue's plan is at least its lower bound (sim/queue_estimate.py)."""
    depth = PlacementParams().reserve_depth
    assert 1 <= depth < 5  # the queue below has five waiting jobs: some beyond the plans
    sub = HeldSubmitter()
    for k in range(9):
        submit_job(live(store, tmp_path, sub), opts(**whole_node(), name=f"j{k}"), JOB)
    now = NOW + timedelta(seconds=30)
    view = queue_view(
        store, FakeSource().read(NOW), clock=FixedClock(now), cluster_name="lab",
        slot_seconds=60.0, user=None,
    )  # fmt: skip
    assert len(view.waiting) == 5 and view.bound is not None
    sources = [w.estimate.source for w in view.waiting if w.estimate]
    assert sources == ["plan"] * depth + ["list"] * (5 - depth)
    for w in view.waiting:
        assert w.estimate is not None and w.estimate.start is not None
        assert w.estimated_start == w.estimate.start and w.estimated_start >= now
        assert w.estimate.end is not None and w.estimate.end > w.estimate.start
    assert view.bound.ratio is not None and view.bound.ratio >= 1.0
    assert view.bound.estimated == 5 and 0.0 < view.bound.busy <= 1.0
    doc = view.to_json()["plan_vs_bound"]
    assert isinstance(doc, dict) and doc["ratio"] == view.bound.ratio and doc["waiting"] == 5


def test_queue_view_has_no_estimate_behind_a_job_without_an_end(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """A foreign job without a time limit holds every GPU: the jobs behind it have no
    estimated start (and say why), and the queue has no ratio; nothing crashes."""
    from slurm_mlsched.slurm.nodes import JobRecord, NodeAllocation

    source = FakeSource()
    source.jobs.extend(
        JobRecord("77", "x", "RUNNING", (NodeAllocation(f"node{i}", 1, 1024.0, 4),), None)
        for i in range(1, 5)
    )
    from dataclasses import replace

    wired = replace(live(store, tmp_path, HeldSubmitter()), source=source)
    assert submit_job(wired, opts(**whole_node()), JOB).waits
    view = queue_view(
        store, source.read(NOW), clock=FixedClock(NOW), cluster_name="lab",
        slot_seconds=60.0, user=None,
    )  # fmt: skip
    (w,) = view.waiting
    assert w.estimated_start is None and w.estimate is not None
    assert w.estimate.source == "unknown" and "no time limit" in w.estimate.reason
    assert "no estimate: " in w.reason
    assert view.bound is not None and view.bound.ratio is None


def test_the_queue_lists_jobs_in_queue_order_not_arrival_order(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """Smallest service first: a short job submitted after a long one is ahead of it."""
    sub, ids = fill_and_queue(store, tmp_path)  # ids[4]: 1,200 batches
    short = submit_job(
        live(store, tmp_path, sub, at=10), opts(**{**whole_node(), "batches_per_epoch": 100}), JOB
    )
    assert short.record is not None and short.waits
    view = queue_view(
        store, FakeSource().read(NOW), clock=FixedClock(NOW + timedelta(seconds=20)),
        cluster_name="lab", slot_seconds=60.0, user=None,
    )  # fmt: skip
    assert [(w.decision_id, w.position) for w in view.waiting] == [
        (short.record.decision_id, 1), (ids[4], 2),
    ]  # fmt: skip


def test_submit_says_the_job_waits_and_where_to_look(
    store: SqlDecisionStore, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from slurm_mlsched.cli import output

    sub, _ids = fill_and_queue(store, tmp_path)
    out = submit_job(live(store, tmp_path, sub, at=5), opts(**whole_node(), name="more"), JOB)
    assert out.waits
    output.show_submitted(out, as_json=False, show_script=False)
    said = " ".join(capsys.readouterr().out.split())
    assert f"decision {out.record.decision_id} waits in mlsub's queue" in said  # type: ignore[union-attr]
    assert f"held as Slurm job {out.slurm_job_id}" in said and "mlsub queue" in said


def test_a_plugin_job_that_waits_is_held_and_started_on_the_nodes_chosen_then(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """The cli_filter plugin's plan mode (``mlsub plan --for-sbatch``): a job that cannot
    start now is told to wait held (``hold=1``, no ``begin``); reconcile finds the user's
    held job by its tag (``queued``), and the re-plan that starts it sets the held job's
    nodes and task count and releases it — the user's own script, not a new one."""
    from slurm_mlsched.services.for_sbatch import plan_for_sbatch
    from slurm_mlsched.services.live_queue import tag_of
    from slurm_mlsched.services.reconcile import plan_updates
    from tests.unit.test_submit_service import status

    sub, ids = fill_and_queue(store, tmp_path)
    script = tmp_path / "own.sh"
    script.write_text("#!/bin/bash\nsrun true\n")
    placed = plan_for_sbatch(live(store, tmp_path, sub, at=5), opts(**whole_node()), script)
    lines = placed.lines()
    assert "hold=1" in lines and not any(x.startswith("begin=") for x in lines)
    assert "waits held in mlsub's queue" in lines[-1]
    did = placed.record.decision_id
    assert store.get(did).state == S.SUBMITTING  # the user's sbatch has not run yet
    held = {r.job_id for r in store.reservations("lab", NOW, epoch=NOW, slot_seconds=60.0)}
    assert f"mlsub-{did}" not in held  # it holds nothing
    # the user's sbatch ran held; reconcile finds it by its tag: queued
    tag = str(tag_of("lab", store.get(did).summary))
    (u,) = plan_updates(
        [store.get(did).summary], {did: tag}, {"700": status("700", "PENDING", tag, held=True)},
        now=NOW + timedelta(seconds=10),
    )  # fmt: skip
    store.transition(did, u.steps[0].state, u.steps[0].at, u.steps[0].detail, slurm_job_id="700")
    assert store.get(did).state == S.QUEUED
    store.transition(ids[2], S.COMPLETED, NOW + timedelta(seconds=20), "ended early")
    store.transition(ids[4], S.CANCELLED, NOW + timedelta(seconds=20), "scancel")
    starter = FakeStarter(store=store)
    report = replan(live(store, tmp_path, sub, at=40), starter)
    assert [(x.decision_id, x.action) for x in report.started] == [(did, "updated")]
    rec = store.get(did)
    nodes = tuple(dict.fromkeys(c.node for c in rec.decision.placement))
    assert starter.updated == [("700", nodes, sum(c.count for c in rec.decision.placement))]
    assert starter.submitted == [] and rec.state == S.SUBMITTED
    assert rec.script == script.read_text()  # the user's own script


# --- what a re-plan does not trust, and starts that never happened (review of issue 19) --------


def test_a_queued_row_slurm_does_not_vouch_for_is_not_started(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """The store's columns alone are not trusted (a user may edit their own row): a held
    job Slurm says is someone else's, or that carries another tag, or that an admin holds,
    is not started; the owner's own re-plan (or root's, once Slurm agrees) starts it."""
    from slurm_mlsched.services.live_queue import tag_of
    from tests.unit.test_submit_service import status

    sub, ids = fill_and_queue(store, tmp_path)
    store.transition(ids[0], S.COMPLETED, NOW + timedelta(seconds=20), "ended early")
    tag = str(tag_of("lab", store.get(ids[4]).summary))
    for fake in (
        status("501", "PENDING", tag, held=True, user="mallory", reason="JobHeldUser"),
        status(
            "501",
            "PENDING",
            "mlsched:decision=5:ffffffffffff",
            held=True,
            user=ME,
            reason="JobHeldUser",
        ),
        status("501", "PENDING", tag, held=True, user=ME, reason="JobHeldAdmin"),
    ):
        starter = FakeStarter(held=[fake])
        report = replan(live(store, tmp_path, sub, at=40), starter)
        assert report.started == () and ids[4] in report.skipped
        assert store.get(ids[4]).state == S.QUEUED
    vouched = status("501", "PENDING", tag, held=True, user=ME, reason="JobHeldUser")
    report = replan(live(store, tmp_path, sub, at=40), FakeStarter(held=[vouched]))
    assert [s.decision_id for s in report.started] == [ids[4]]


def test_a_start_is_not_finished_while_its_re_plan_may_still_act(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    from dataclasses import replace as dc_replace

    from slurm_mlsched.services.process_id import ProcessId, this_process

    sub, ids = fill_and_queue(store, tmp_path)
    store.transition(ids[0], S.COMPLETED, NOW + timedelta(seconds=20), "ended early")
    me = str(this_process())
    w = dc_replace(live(store, tmp_path, sub, at=40), process=me)
    replan(w, FakeStarter(fail=True, store=store))  # recorded starting, its action failed
    assert store.get(ids[4]).state == S.STARTING
    good = FakeStarter(store=store)
    # its re-plan (this very process) is alive: another finisher leaves it alone
    assert finish_starts(store, good, "lab", NOW + timedelta(seconds=50)) == []
    assert good.released == good.submitted == []
    # a re-plan gone (another pid on this host): finished
    gone = ProcessId.parse(me)
    assert gone is not None
    dead = dc_replace(gone, pid=2**22 + 7, start=1)
    from sqlalchemy import update

    from slurm_mlsched.storage.models import DecisionRow

    with store._engine.begin() as conn:
        conn.execute(
            update(DecisionRow).where(DecisionRow.id == ids[4]).values(submitter=str(dead))
        )
    assert len(finish_starts(store, good, "lab", NOW + timedelta(seconds=60))) == 1
    assert store.get(ids[4]).state == S.SUBMITTED


def test_a_start_that_never_happens_goes_back_to_the_queue_without_double_booking(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    from slurm_mlsched.services.replan import START_GIVE_UP_S

    sub, ids = fill_and_queue(store, tmp_path)
    store.transition(ids[0], S.COMPLETED, NOW + timedelta(seconds=20), "ended early")
    replan(live(store, tmp_path, sub, at=40), FakeStarter(fail=True, store=store))
    assert store.get(ids[4]).state == S.STARTING
    later = NOW + timedelta(seconds=40 + START_GIVE_UP_S + 1)
    notes = finish_starts(store, FakeStarter(store=store), "lab", later)
    assert "back in the queue" in notes[0] and store.get(ids[4]).state == S.QUEUED
    # started again: the first start's reservation no longer counts
    at = int((later - NOW).total_seconds()) + 5
    report = replan(live(store, tmp_path, sub, at=at), FakeStarter(store=store))
    assert [s.decision_id for s in report.started] == [ids[4]]
    now = NOW + timedelta(seconds=at)
    mine = [
        r for r in store.reservations("lab", now, epoch=NOW, slot_seconds=60.0)
        if r.job_id == f"mlsub-{ids[4]}"
    ]  # fmt: skip
    rec = store.get(ids[4])
    assert len(mine) == len(rec.decision.reservations(rec.request))


def test_a_held_job_found_for_a_failed_held_submission_repairs_it(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """sbatch --hold timed out, reconcile marked the decision submit-failed, then the held
    job turned up: reconcile moves it to queued (an allowed transition)."""
    from slurm_mlsched.services.live_queue import tag_of
    from slurm_mlsched.services.reconcile import _apply, plan_updates
    from tests.unit.test_submit_service import status

    _sub, ids = fill_and_queue(store, tmp_path)
    with store.planning("lab") as tx:
        from slurm_mlsched.storage import NewDecision

        rec = store.get(ids[4])
        new = NewDecision(
            request=rec.request, snapshot=rec.snapshot, params=rec.params,
            decision=rec.decision, user="alice", host="login1", created_at=NOW,
            state=S.SUBMITTING, holds=False,
        )  # fmt: skip
        did = tx.record(new).decision_id
    store.transition(did, S.SUBMIT_FAILED, NOW, "sbatch --hold timed out")
    tag = str(tag_of("lab", store.get(did).summary))
    (u,) = plan_updates(
        [store.get(did).summary], {did: tag},
        {"600": status("600", "PENDING", tag, held=True, user="alice")}, now=NOW,
    )  # fmt: skip
    assert [s.state for s in u.steps] == [S.QUEUED]
    assert _apply(store, u).after == S.QUEUED and store.get(did).state == S.QUEUED


def test_a_queued_job_cancelled_by_hand_leaves_no_kept_environment(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """scancel of the held job: reconcile records the decision cancelled and removes the
    environment kept for its re-submission (it may hold secrets)."""
    from slurm_mlsched.services.live_queue import tag_of
    from slurm_mlsched.services.reconcile import reconcile
    from slurm_mlsched.services.viewer import Viewer
    from slurm_mlsched.slurm.jobs import StatusReport
    from tests.unit.test_submit_service import status

    _sub, ids = fill_and_queue(store, tmp_path)
    rec = store.get(ids[4])
    assert rec.launch is not None and rec.launch.env_file is not None
    kept = Path(rec.launch.env_file)
    assert kept.exists()
    tag = str(tag_of("lab", rec.summary))

    class Reader:
        def queue(self) -> dict[str, JobStatus]:
            return {"501": status("501", "CANCELLED", tag, user=ME, end=NOW)}

        def accounting(self, *, since: object, job_ids: object = ()) -> StatusReport:
            return StatusReport({}, ())

    updates = reconcile(
        store=store, reader=Reader(), clock=FixedClock(NOW + timedelta(minutes=1)),  # type: ignore[arg-type]
        cluster_name="lab", viewer=Viewer("root", is_admin=True), decision_ids=[ids[4]],
    ).decisions  # fmt: skip
    assert [u.after for u in updates] == [S.CANCELLED]
    assert not kept.exists()


def test_a_queued_job_keeps_its_sbatch_lines_and_their_narrowing_across_re_plans(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    from dataclasses import replace

    from slurm_mlsched.model.narrowing import NodeFilter

    sub = HeldSubmitter()
    ids = []
    for k in range(4):
        out = submit_job(live(store, tmp_path, sub), opts(**whole_node(), name=f"j{k}"), JOB)
        assert out.record is not None
        ids.append(out.record.decision_id)
    node_of = {i: store.get(i).decision.placement[0].node for i in ids}
    narrow = NodeFilter(exclude=frozenset({node_of[ids[1]]}))
    mine = replace(
        opts(**whole_node(), name="narrow", sbatch="--account=ml-research"), narrowing=narrow
    )
    queued = submit_job(live(store, tmp_path, sub), mine, JOB)
    assert queued.waits and queued.record is not None
    record = store.get(queued.record.decision_id)
    assert record.launch is not None and record.launch.narrowing == narrow.to_json()
    assert "#SBATCH --account=ml-research" in (record.script or "")
    starter = FakeStarter(store=store)

    # the node that frees is the one its #SBATCH --exclude names: it keeps waiting
    store.transition(ids[1], S.COMPLETED, NOW + timedelta(seconds=20), "ended early")
    view = queue_view(
        store, FakeSource().read(NOW), clock=FixedClock(NOW + timedelta(seconds=40)),
        cluster_name="lab", slot_seconds=60.0, user=None,
    )  # fmt: skip
    assert view.would_start == () and [w.decision_id for w in view.waiting] == [record.decision_id]
    report = replan(live(store, tmp_path, sub, at=40), starter)
    assert report.started == ()
    # a node it may use frees: it starts there, its carried line still in its script
    store.transition(ids[2], S.COMPLETED, NOW + timedelta(seconds=50), "ended early")
    report = replan(live(store, tmp_path, sub, at=60), starter)
    assert [s.decision_id for s in report.started] == [record.decision_id]
    started = store.get(record.decision_id)
    assert {p.node for p in started.decision.placement} == {node_of[ids[2]]}
    assert "#SBATCH --account=ml-research" in (started.script or "")


def test_queue_view_estimates_node_groups_on_their_own_nodes(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """A plain job and one narrowed by its #SBATCH --exclude wait behind four running ones:
    they are re-planned in two node groups, each job's estimate on the nodes it may use,
    and the queue's line sums the groups (sim.queue_estimate.combined)."""
    from dataclasses import replace

    from slurm_mlsched.model.narrowing import NodeFilter

    sub = HeldSubmitter()
    ids = []
    for k in range(4):
        out = submit_job(live(store, tmp_path, sub), opts(**whole_node(), name=f"j{k}"), JOB)
        assert out.record is not None
        ids.append(out.record.decision_id)
    plain = submit_job(live(store, tmp_path, sub), opts(**whole_node(), name="plain"), JOB)
    every = frozenset(store.get(i).decision.placement[0].node for i in ids)
    allowed = sorted(every)[0]
    narrow = NodeFilter(exclude=every - {allowed})
    mine = replace(opts(**whole_node(), name="narrow"), narrowing=narrow)
    queued = submit_job(live(store, tmp_path, sub), mine, JOB)
    assert plain.waits and queued.waits and queued.record is not None
    now = NOW + timedelta(seconds=30)
    view = queue_view(
        store, FakeSource().read(NOW), clock=FixedClock(now), cluster_name="lab",
        slot_seconds=60.0, user=None,
    )  # fmt: skip
    assert view.bound is not None and view.bound.bound_kind.startswith("summed over 2 node groups")
    assert len(view.waiting) == 2 and view.bound.estimated == 2
    assert view.bound.ratio is not None and view.bound.ratio >= 1.0
    for w in view.waiting:
        assert w.estimate is not None and w.estimate.start is not None
        assert w.estimated_start is not None and w.estimated_start >= now


def test_a_later_node_group_does_not_delay_an_earlier_groups_held_plan(
    store: SqlDecisionStore, tmp_path: Path
) -> None:
    """N (a whole node, narrowed by its #SBATCH --exclude to node A) waits for A's second
    half, which a job holds for a few slots more; P (half a node, any node, long) waits
    too. When A's other half frees, the re-plan steps N's node group first: N cannot start
    and is planned on A when its neighbour ends. P, in the next group, fits A's free half
    now but would run past that plan: it waits, as a job of N's own group would, instead
    of starting there and delaying N (the plans of the groups before are held:
    replan.held_too). ``mlsub queue`` (queue_view) says the same."""
    from dataclasses import replace

    from slurm_mlsched.model.narrowing import NodeFilter

    sub = HeldSubmitter()
    long_node = {**whole_node(), "batches_per_epoch": 120000}
    ids = []
    for k in range(4):
        out = submit_job(live(store, tmp_path, sub), opts(**long_node, name=f"j{k}"), JOB)
        assert out.record is not None and not out.waits
        ids.append(out.record.decision_id)
    node_a = store.get(ids[0]).decision.placement[0].node
    store.transition(ids[0], S.COMPLETED, NOW + timedelta(seconds=10), "ended early")
    half = {"workers": 2, "step_time": 0.5, "epochs": 1}
    soon = submit_job(  # ends in 2 slots: N waits for it rather than start on half a node
        live(store, tmp_path, sub, at=20), opts(**half, batches_per_epoch=480, name="soon"), JOB
    )
    other = submit_job(
        live(store, tmp_path, sub, at=20), opts(**half, batches_per_epoch=24000, name="o"), JOB
    )
    for out in (soon, other):
        assert out.record is not None and not out.waits
        assert {p.node for p in store.get(out.record.decision_id).decision.placement} == {node_a}
    every = frozenset(store.get(i).decision.placement[0].node for i in ids)
    narrow = replace(  # long enough that half a node now ends later than waiting
        opts(**{**whole_node(), "batches_per_epoch": 12000}, name="narrow"),
        narrowing=NodeFilter(exclude=every - {node_a}),
    )
    n = submit_job(live(store, tmp_path, sub, at=30), narrow, JOB)
    p = submit_job(
        live(store, tmp_path, sub, at=30), opts(**half, batches_per_epoch=24000, name="p"), JOB
    )
    assert n.waits and p.waits and n.record is not None and p.record is not None
    assert other.record is not None and soon.record is not None
    store.transition(other.record.decision_id, S.COMPLETED, NOW + timedelta(seconds=40), "ended")

    view = queue_view(
        store, FakeSource().read(NOW), clock=FixedClock(NOW + timedelta(seconds=50)),
        cluster_name="lab", slot_seconds=60.0, user=None,
    )  # fmt: skip
    assert view.would_start == (), view.would_start
    report = replan(live(store, tmp_path, sub, at=50), FakeStarter(store=store))
    assert report.started == ()
    held = store.get(n.record.decision_id)  # its tentative plan: on A, once `soon` is over
    assert held.state == S.QUEUED and {q.node for q in held.decision.placement} == {node_a}
    ended = store.get(soon.record.decision_id)
    soon_over = ended.snapshot.slot_start(ended.decision.end_slot + 1)
    assert held.snapshot.slot_start(held.decision.start_slot) >= soon_over
    assert store.get(p.record.decision_id).state == S.QUEUED
