"""The live path's logic with the real store (a SQLite file) and stand-ins for Slurm:
node state from captured real output, a submitter that records or fails, a fixed clock.
The same path against the real cluster: tests/integration/test_submit_live.py."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from slurm_mlsched.errors import (
    InputError,
    MlschedError,
    RemoteConnectionLost,
    RemoteError,
    SlurmError,
    StoreError,
)
from slurm_mlsched.files.job_options import JobOptions, merge_options
from slurm_mlsched.files.job_script import JobScript
from slurm_mlsched.sbatch.tag import DecisionTag, find_tags
from slurm_mlsched.services.clock import FixedClock
from slurm_mlsched.services.live_queue import LiveWiring, tag_of
from slurm_mlsched.services.reconcile import plan_updates
from slurm_mlsched.services.submit import submit_job
from slurm_mlsched.services.viewer import Viewer
from slurm_mlsched.slurm.jobs import JobStatus
from slurm_mlsched.slurm.nodes import NodeState
from slurm_mlsched.slurm.parse import JobRecord, NodeAllocation, NodeRecord
from slurm_mlsched.storage import DecisionState, DecisionSummary, SqlDecisionStore, open_store

NOW = datetime(2026, 11, 29, 12, 0, 5, tzinfo=UTC)
S = DecisionState


def node(name: str, partitions: tuple[str, ...] = ("debug",)) -> NodeRecord:
    return NodeRecord(
        name, "IDLE", frozenset(), 8, 65536.0, 4, address="127.0.0.1", partitions=partitions
    )


@dataclass
class FakeSource:
    nodes: tuple[NodeRecord, ...] = tuple(node(f"node{i}") for i in range(1, 5))
    jobs: list[JobRecord] = field(default_factory=list)

    @property
    def description(self) -> str:
        return "fake"

    def read(self, now: datetime) -> NodeState:
        return NodeState(self.nodes, tuple(self.jobs), "fake", "22.05.8")


@dataclass
class FakeSubmitter:
    """Records what it is handed; ``where`` stands for a cluster-side directory (a remote
    submitter's staging directory), ``fail`` raises that error instead of submitting."""

    scripts: list[str] = field(default_factory=list)
    tags: list[DecisionTag] = field(default_factory=list)
    fail: str = ""
    where: str = ""
    error: MlschedError | None = None

    def program_path(self, job: JobScript, tag: DecisionTag | None) -> str:
        if not self.where:
            return str(job.path)
        return f"{self.where}/{tag.decision_id if tag else 'dry-run'}/{job.path.name}"

    def submit(self, script: str, job: JobScript, tag: DecisionTag) -> str:
        if self.error is not None:
            raise self.error
        if self.fail:
            raise SlurmError(self.fail)
        self.scripts.append(script)
        self.tags.append(tag)
        return str(100 + len(self.scripts))


@pytest.fixture
def store(tmp_path: Path) -> SqlDecisionStore:
    return open_store(f"sqlite:///{tmp_path / 'd.db'}", grace_s=600.0)


def wiring(store: SqlDecisionStore, source: FakeSource, submitter: FakeSubmitter) -> LiveWiring:
    return LiveWiring(
        source=source,
        store=store,
        clock=FixedClock(NOW),
        submitter=submitter,
        cluster_name="lab",
        slot_seconds=60.0,
        viewer=Viewer("alice"),
        host="login1",
    )


def opts(**kw: object) -> JobOptions:
    base = {
        "workers": 4, "gpus_per_worker": 1, "cpus_per_worker": 1, "mem_per_worker": "1G",
        "cpus_per_ps": 1, "mem_per_ps": "1G", "step_time": 0.5, "model_size": 1,
        "batches_per_epoch": 1200,
    }  # fmt: skip
    return merge_options([], {**base, **kw})


JOB = JobScript(Path("/home/alice/train.py"), ("--lr", "0.1"))


def test_submit_records_then_submits_with_the_tag_in_every_component(
    store: SqlDecisionStore,
) -> None:
    sub = FakeSubmitter()
    out = submit_job(wiring(store, FakeSource(), sub), opts(), JOB)
    assert out.slurm_job_id == "101" and out.record is not None
    rec = store.get(out.record.decision_id)
    assert rec.state == S.SUBMITTED and rec.summary.slurm_job_id == "101"
    assert [t.state for t in rec.transitions] == [S.SUBMITTING, S.SUBMITTED]
    assert rec.script == sub.scripts[0] == out.script.text
    assert out.tag == tag_of("lab", rec.summary)
    components = [ln for ln in rec.script.splitlines() if ln.startswith("#SBATCH --nodelist")]
    assert components and all(find_tags(ln) == (out.tag,) for ln in components)
    assert "python3 /home/alice/train.py --lr 0.1" in rec.script
    assert rec.request.name == "train"  # the script's name when --name is not given


def test_a_second_job_is_placed_around_the_first_one_stored(store: SqlDecisionStore) -> None:
    w = wiring(store, FakeSource(), FakeSubmitter())
    first = submit_job(w, opts(), JOB)
    second = submit_job(w, opts(), JOB)
    nodes = [{p.node for p in o.plan.decision.placement} for o in (first, second)]
    assert nodes[0].isdisjoint(nodes[1])
    assert len(second.plan.snapshot.reservations) >= 1


def test_a_running_job_of_a_stored_decision_is_not_counted_twice(
    store: SqlDecisionStore,
) -> None:
    source = FakeSource()
    w = wiring(store, source, FakeSubmitter())
    first = submit_job(w, opts(), JOB)
    assert first.record is not None and first.tag is not None
    (used,) = {p.node for p in first.plan.decision.placement}
    # Slurm now runs it: squeue shows the job, with the tag, holding that node
    source.jobs.append(
        JobRecord(
            "101", "train", "RUNNING", (NodeAllocation(used, 5, 5120.0, 4),),
            end_time=None, comment=str(first.tag),
        )
    )  # fmt: skip
    second = submit_job(w, opts(), JOB)
    held = [r for r in second.plan.snapshot.reservations if r.machine == used]
    assert [r.job_id for r in held] == [f"mlsub-{first.record.decision_id}"]  # not also "101"
    # a job with a foreign tag (another store's decision with the same id) still counts
    source.jobs[0] = replace(
        source.jobs[0], comment=f"mlsched:decision={first.record.decision_id}:000000000000"
    )
    third = submit_job(w, opts(), JOB)
    assert "101" in {r.job_id for r in third.plan.snapshot.reservations}


def test_sbatch_failure_marks_the_decision_submit_failed_and_raises(
    store: SqlDecisionStore,
) -> None:
    w = wiring(store, FakeSource(), FakeSubmitter(fail="sbatch: error: Invalid partition"))
    with pytest.raises(SlurmError) as caught:
        submit_job(w, opts(), JOB)
    (row,) = store.history()
    assert row.state == S.SUBMIT_FAILED and row.slurm_job_id is None
    assert store.get(row.decision_id).transitions[-1].detail == "sbatch: error: Invalid partition"
    assert f"decision {row.decision_id} is recorded as submit-failed" in caught.value.hint
    assert store.reservations("lab", NOW, epoch=NOW, slot_seconds=60.0) == ()


def test_dry_run_records_nothing_and_unknown_partition_is_refused(
    store: SqlDecisionStore,
) -> None:
    sub = FakeSubmitter()
    out = submit_job(wiring(store, FakeSource(), sub), opts(), JOB, dry_run=True)
    assert out.record is None and out.slurm_job_id is None and sub.scripts == []
    assert "MLSCHED_DECISION_ID=dry-run" in out.script.text
    assert store.history() == ()
    with pytest.raises(InputError, match=r"unknown partition 'gpu'.*"):
        submit_job(wiring(store, FakeSource(), sub), opts(partition="gpu"), JOB)
    assert store.history() == ()


def test_a_partition_limits_the_nodes(store: SqlDecisionStore) -> None:
    source = FakeSource(nodes=(node("node1"), node("node2", ("debug", "ml"))))
    out = submit_job(wiring(store, source, FakeSubmitter()), opts(partition="ml"), JOB)
    assert {p.node for p in out.plan.decision.placement} == {"node2"}
    components = [ln for ln in out.script.text.splitlines() if ln.startswith("#SBATCH --nodelist")]
    assert components and all(" --partition=ml" in ln for ln in components)
    reasons = {n.record.name: n.reason for n in out.cluster.excluded}
    assert reasons == {"node1": "not in partition ml"}


# --- reconcile (pure) -----------------------------------------------------------------------


def summaries(store: SqlDecisionStore) -> list[DecisionSummary]:
    return list(store.history())


def status(job: str, state: str, comment: str = "", **kw: object) -> JobStatus:
    base: dict[str, object] = {
        "job_id": job, "state": state, "submit": NOW, "start": None, "end": None,
        "nodes": ("node1",), "comment": comment, "admin_comment": "", "exit_code": "",
        "source": "squeue",
    }  # fmt: skip
    return JobStatus(**{**base, **kw})  # type: ignore[arg-type]


def interrupted(store: SqlDecisionStore) -> tuple[int, str]:
    """A decision left 'submitting' (the submitter never returned)."""

    class Dies(FakeSubmitter):
        def submit(self, script: str, job: JobScript, tag: DecisionTag) -> str:
            raise KeyboardInterrupt

    w = replace(wiring(store, FakeSource(), FakeSubmitter()), submitter=Dies())
    with pytest.raises(KeyboardInterrupt):
        submit_job(w, opts(), JOB)
    (row,) = store.history()
    assert row.state == S.SUBMITTING
    return row.decision_id, str(tag_of("lab", row))


def test_reconcile_finds_an_interrupted_submission_by_its_tag(store: SqlDecisionStore) -> None:
    did, tag = interrupted(store)
    t1, t2 = NOW + timedelta(seconds=5), NOW + timedelta(seconds=90)
    found = {"7": status("7", "COMPLETED", f"x;{tag}", start=t1, end=t2, exit_code="0")}
    (u,) = plan_updates(summaries(store), {did: tag}, found, now=NOW + timedelta(hours=1))
    assert [(s.state, s.at) for s in u.steps] == [
        (S.SUBMITTED, NOW), (S.RUNNING, t1), (S.COMPLETED, t2),
    ]  # fmt: skip
    assert u.steps[0].slurm_job_id == "7" and u.found_in == "squeue"


def test_reconcile_fails_a_submission_only_once_its_process_is_gone(
    store: SqlDecisionStore,
) -> None:
    did, tag = interrupted(store)
    other = {"8": status("8", "RUNNING", "mlsched:decision=1:ffffffffffff")}  # not ours
    rows = summaries(store)
    young, old = NOW + timedelta(seconds=30), NOW + timedelta(hours=2)

    def steps(now: datetime, alive: bool | None) -> list[DecisionState]:
        (u,) = plan_updates(rows, {did: tag}, other, now=now, liveness={did: alive})
        return [s.state for s in u.steps]

    # the process is alive on this host: in progress, however old (never by the clock)
    assert steps(young, True) == steps(old, True) == []
    # the process is gone: over, however young
    assert steps(young, False) == steps(old, False) == [S.SUBMIT_FAILED]
    # cannot tell (another host, or not recorded): the age bound decides
    assert steps(young, None) == [] and steps(old, None) == [S.SUBMIT_FAILED]
    (u,) = plan_updates(rows, {did: tag}, other, now=young, liveness={did: None})
    assert "as far as can be told from here" in u.note and "stale after 3600 s" in u.note


def test_a_submit_failed_decision_whose_job_turns_up_is_repaired_by_its_exact_tag(
    store: SqlDecisionStore,
) -> None:
    did, tag = interrupted(store)
    store.transition(did, S.SUBMIT_FAILED, NOW, "reconcile: process gone")
    rows = summaries(store)
    start = NOW + timedelta(seconds=40)
    longer = {"9": status("9", "RUNNING", f"{tag}0", start=start)}  # a longer token: no tag
    prefixed = {"9": status("9", "RUNNING", f"x{tag[1:]}", start=start)}
    for near in (longer, prefixed):
        (u,) = plan_updates(rows, {did: tag}, near, now=start)
        assert u.steps == ()
    found = {"9": status("9", "RUNNING", f"note {tag} more", start=start)}
    (u,) = plan_updates(rows, {did: tag}, found, now=start)
    assert [s.state for s in u.steps] == [S.SUBMITTED, S.RUNNING]
    assert "repaired" in u.steps[0].detail
    for step in u.steps:
        store.transition(did, step.state, step.at, step.detail, slurm_job_id=step.slurm_job_id)
    assert store.get(did).summary.slurm_job_id == "9"


def test_a_neighbour_recording_the_job_first_does_not_fail_the_submit(
    store: SqlDecisionStore,
) -> None:
    """The race measured in issue 15: while this submit's sbatch runs, another process's
    reconcile finds the job by its tag and moves the decision to running; the submit then
    records its job id: a no-op, exit 0, never 'cannot become submitted'."""

    class NeighbourFirst(FakeSubmitter):
        def submit(self, script: str, job: JobScript, tag: DecisionTag) -> str:
            job_id = super().submit(script, job, tag)
            (row,) = store.history()
            seen = {job_id: status(job_id, "RUNNING", str(tag), start=NOW)}
            (u,) = plan_updates([row], {row.decision_id: str(tag)}, seen, now=NOW)
            for step in u.steps:
                store.transition(
                    row.decision_id, step.state, step.at, step.detail,
                    slurm_job_id=step.slurm_job_id, expected=row.state,
                )  # fmt: skip
                row = store.history()[0]
            return job_id

    out = submit_job(wiring(store, FakeSource(), NeighbourFirst()), opts(), JOB)
    assert out.record is not None and out.slurm_job_id == "101" and out.warnings == ()
    rec = store.get(out.record.decision_id)
    assert rec.state == S.RUNNING and rec.summary.slurm_job_id == "101"
    assert [t.state for t in rec.transitions] == [S.SUBMITTING, S.SUBMITTED, S.RUNNING]


def test_a_store_failure_after_sbatch_is_a_warning_not_a_failed_submit(
    store: SqlDecisionStore,
) -> None:
    class Unwritable:
        """The real store, whose writes fail once sbatch has run (a full disk, say)."""

        def __init__(self, inner: SqlDecisionStore) -> None:
            self.inner = inner

        def __getattr__(self, name: str) -> object:
            return getattr(self.inner, name)

        def transition(self, *args: object, **kw: object) -> object:
            raise StoreError("decision store sqlite:///d.db: database or disk is full")

    w = replace(wiring(store, FakeSource(), FakeSubmitter()), store=Unwritable(store))  # type: ignore[arg-type]
    out = submit_job(w, opts(), JOB)
    assert out.slurm_job_id == "101" and out.record is not None
    (warning,) = out.warnings
    assert "Slurm queued job 101" in warning and "disk is full" in warning
    assert "stays 'submitting'" in warning and "mlsub reconcile" in warning
    assert out.to_json()["warnings"] == [warning]
    assert store.get(out.record.decision_id).state == S.SUBMITTING  # reconcile's to record


def test_reconcile_moves_submitted_jobs_along_and_leaves_pending_ones(
    store: SqlDecisionStore,
) -> None:
    w = wiring(store, FakeSource(), FakeSubmitter())
    a, b, c = (submit_job(w, opts(workers=1), JOB) for _ in range(3))
    rows = summaries(store)
    later = NOW + timedelta(minutes=5)
    statuses = {
        "101": status("101", "PENDING"),
        "102": status("102", "CANCELLED", end=later),  # cancelled while pending
        "103": status("103", "RUNNING", start=later),
    }
    updates = plan_updates(rows, {}, statuses, now=later)
    got = {u.decision_id: [s.state for s in u.steps] for u in updates}
    assert a.record and b.record and c.record
    assert got == {
        a.record.decision_id: [],
        b.record.decision_id: [S.CANCELLED],
        c.record.decision_id: [S.RUNNING],
    }
    missing = plan_updates(rows[:1], {}, {}, now=later)
    assert missing[0].steps == () and "neither squeue nor accounting" in missing[0].note


def test_an_sbatch_timeout_leaves_the_outcome_to_reconcile(store: SqlDecisionStore) -> None:
    class TimesOut(FakeSubmitter):
        def submit(self, script: str, job: JobScript, tag: DecisionTag) -> str:
            raise SlurmError("`sbatch` did not finish within 60 s", may_have_run=True)

    w = replace(wiring(store, FakeSource(), FakeSubmitter()), submitter=TimesOut())
    with pytest.raises(SlurmError) as caught:
        submit_job(w, opts(), JOB)
    (row,) = store.history()
    assert row.state == S.SUBMITTING  # not submit-failed: the job may exist
    assert "mlsub reconcile" in caught.value.hint


# --- a submitter that puts the program elsewhere (remote submission) ------------------------


def test_the_program_path_comes_from_the_submitter_and_the_stored_script_is_the_submitted(
    store: SqlDecisionStore,
) -> None:
    sub = FakeSubmitter(where="/home/alice/.mlsub/decisions")
    out = submit_job(wiring(store, FakeSource(), sub), opts(), JOB)
    assert out.record is not None
    did = out.record.decision_id
    assert sub.tags == [out.tag] and out.tag is not None and out.tag.decision_id == did
    rec = store.get(did)
    assert rec.script == sub.scripts[0] == out.script.text
    assert f"python3 /home/alice/.mlsub/decisions/{did}/train.py --lr 0.1" in rec.script
    assert "/home/alice/train.py" not in rec.script
    dry = submit_job(wiring(store, FakeSource(), sub), opts(), JOB, dry_run=True)
    assert "python3 /home/alice/.mlsub/decisions/dry-run/train.py --lr 0.1" in dry.script.text


def test_a_connection_lost_during_sbatch_leaves_the_decision_submitting(
    store: SqlDecisionStore,
) -> None:
    lost = RemoteConnectionLost(
        "the SSH connection to login1 was lost during `env TZ=UTC sbatch ...`",
        hint="check the network",
        may_have_run=True,
    )
    w = replace(
        wiring(store, FakeSource(), FakeSubmitter(error=lost)),
        reconcile_command="mlsub reconcile --remote login1",
    )
    with pytest.raises(RemoteConnectionLost) as caught:
        submit_job(w, opts(), JOB)
    (row,) = store.history()
    assert row.state == S.SUBMITTING and row.slurm_job_id is None
    assert caught.value.exit_code == 8 and caught.value.context["decision_id"] == row.decision_id
    hint = caught.value.hint
    assert f"decision {row.decision_id} stays 'submitting'" in hint
    assert "`mlsub reconcile --remote login1`" in hint and str(tag_of("lab", row)) in hint


@pytest.mark.parametrize(
    "error",
    [
        RemoteConnectionLost("lost while writing decision.sbatch", may_have_run=False),
        RemoteError("could not write /home/alice/.mlsub: Permission denied"),
    ],
    ids=["lost-before-sbatch", "upload-refused"],
)
def test_a_remote_failure_before_sbatch_marks_the_decision_submit_failed(
    store: SqlDecisionStore, error: RemoteError
) -> None:
    w = wiring(store, FakeSource(), FakeSubmitter(error=error))
    with pytest.raises(RemoteError) as caught:
        submit_job(w, opts(), JOB)
    (row,) = store.history()
    assert row.state == S.SUBMIT_FAILED  # sbatch never ran: no job can exist
    assert store.get(row.decision_id).transitions[-1].detail == error.message
    assert f"decision {row.decision_id} is recorded as submit-failed" in caught.value.hint


def test_a_copied_tag_on_another_users_job_adopts_nothing(store: SqlDecisionStore) -> None:
    """Issue 17: tags are public in squeue; a job that copies a decision's tag but belongs
    to someone else is neither found by reconcile nor counted by the planner as the
    decision's job."""
    did, tag = interrupted(store)
    rows = summaries(store)
    (row,) = rows
    assert row.job_owner == "alice"  # no Slurm user recorded in this wiring: the user
    forged = {"66": status("66", "RUNNING", f"x {tag}", start=NOW, user="mallory")}
    (u,) = plan_updates(rows, {did: tag}, forged, now=NOW, liveness={did: True})
    assert u.steps == ()  # not adopted (and its process is alive: still submitting)
    own = {"77": status("77", "RUNNING", tag, start=NOW, user="alice")}
    (u,) = plan_updates(rows, {did: tag}, {**forged, **own}, now=NOW)
    assert u.slurm_job_id == "77" and [s.state for s in u.steps] == [S.SUBMITTED, S.RUNNING]

    from slurm_mlsched.services.cluster_state import own_jobs

    jobs = [
        JobRecord("66", "x", "RUNNING", comment=tag, user="mallory"),
        JobRecord("77", "x", "RUNNING", comment=tag, user="alice"),
        JobRecord("88", "x", "RUNNING", comment=tag),  # a source without owners
    ]
    assert own_jobs(jobs, {tag: did}, {did: "alice"}) == {"77": did, "88": did}
    assert own_jobs(jobs, {tag: did}) == {"66": did, "77": did, "88": did}


def test_the_slurm_user_is_stored_and_is_the_job_owner(store: SqlDecisionStore) -> None:
    w = replace(wiring(store, FakeSource(), FakeSubmitter()), slurm_user="asmith")
    out = submit_job(w, opts(), JOB)
    assert out.record is not None
    summary = store.get(out.record.decision_id).summary
    assert (summary.user, summary.slurm_user, summary.job_owner) == ("alice", "asmith", "asmith")


def test_reconcile_reports_a_submit_failed_decision_only_when_it_repairs_it(
    store: SqlDecisionStore,
) -> None:
    from slurm_mlsched.services.reconcile import reconcile
    from slurm_mlsched.slurm.jobs import StatusReport

    did, tag = interrupted(store)
    store.transition(did, S.SUBMIT_FAILED, NOW, "reconcile: process gone")

    @dataclass
    class Reader:
        jobs: dict[str, JobStatus]

        def queue(self) -> dict[str, JobStatus]:
            return self.jobs

        def accounting(self, *, since: datetime, job_ids: object = ()) -> StatusReport:
            return StatusReport({})

    def run(jobs: dict[str, JobStatus]) -> list[object]:
        updates = reconcile(
            store=store, reader=Reader(jobs), clock=FixedClock(NOW + timedelta(minutes=1)),  # type: ignore[arg-type]
            cluster_name="lab", viewer=Viewer("alice"),
        ).decisions  # fmt: skip
        return [u.to_json() for u in updates]

    assert run({}) == []  # looked up, nothing found: not reported
    found = {"5": status("5", "RUNNING", tag, start=NOW, user="alice")}
    (u,) = run(found)
    assert (u["before"], u["after"], u["slurm_job_id"]) == ("submit-failed", "running", "5")  # type: ignore[index]
    assert store.get(did).state == S.RUNNING


def test_an_ordinary_users_reconcile_touches_only_their_own_decisions(
    store: SqlDecisionStore,
) -> None:
    """Trust model: reconcile moves the caller's decisions; an admin's, everyone's."""
    from slurm_mlsched.services.reconcile import reconcile
    from slurm_mlsched.slurm.jobs import StatusReport

    class Empty:
        def queue(self) -> dict[str, JobStatus]:
            return {}

        def accounting(self, *, since: datetime, job_ids: object = ()) -> StatusReport:
            return StatusReport({})

    alice, _ = interrupted(store)
    w = replace(wiring(store, FakeSource(), FakeSubmitter()), viewer=Viewer("bob"))

    class Dies(FakeSubmitter):
        def submit(self, script: str, job: JobScript, tag: DecisionTag) -> str:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        submit_job(replace(w, submitter=Dies()), opts(), JOB)
    bob = max(s.decision_id for s in store.history())
    assert store.get(bob).summary.user == "bob"

    def run(viewer: Viewer) -> set[int]:
        updates = reconcile(
            store=store, reader=Empty(), clock=FixedClock(NOW + timedelta(hours=2)),  # type: ignore[arg-type]
            cluster_name="lab", viewer=viewer,
        ).decisions  # fmt: skip
        return {u.decision_id for u in updates}

    assert run(Viewer("alice")) == {alice}  # stale: its submitter was not recorded
    assert store.get(alice).state == S.SUBMIT_FAILED
    assert store.get(bob).state == S.SUBMITTING  # not alice's to settle
    assert run(Viewer("carol", is_admin=True)) == {bob}
    assert store.get(bob).state == S.SUBMIT_FAILED
