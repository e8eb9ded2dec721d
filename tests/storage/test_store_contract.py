"""The decision store contract (slurm_mlsched/storage/interface.py), run on every backend:
SQLite (a real file) and PostgreSQL (a real server, ``integration``)."""

from __future__ import annotations

import multiprocessing
from collections import defaultdict
from dataclasses import FrozenInstanceError, replace
from datetime import timedelta

import pytest

from slurm_mlsched.errors import InvalidTransitionError, NotFoundError
from slurm_mlsched.placement import PlacementParams, place
from slurm_mlsched.storage import (
    DecisionState,
    HistoryFilter,
    NewDecision,
    NewReplayRun,
    SqlDecisionStore,
    codec,
    open_store,
)
from tests.conftest import make_job
from tests.storage.helpers import EPOCH, NOW, PACKAGES, new_decision, snapshot

GRACE = 600.0
S = DecisionState


@pytest.fixture
def store(db_url: str) -> SqlDecisionStore:
    return open_store(db_url, grace_s=GRACE)


def record(store: SqlDecisionStore, new: NewDecision, cluster: str = "c1") -> int:
    with store.planning(cluster) as tx:
        return tx.record(new).decision_id


def reservations(store: SqlDecisionStore, now=NOW, cluster: str = "c1"):  # type: ignore[no-untyped-def]
    return store.reservations(cluster, now, epoch=EPOCH, slot_seconds=600.0)


# --- 1, 2: frozen snapshots, exact round trip ----------------------------------------------------


def test_round_trip_is_exact(store: SqlDecisionStore) -> None:
    new = new_decision(workload=1234.5678901234567)
    rec = store.get(record(store, new))
    assert rec.request == new.request
    assert rec.snapshot == new.snapshot
    assert rec.params == new.params
    assert rec.decision == new.decision
    assert codec.encode_decision(rec.decision) == codec.encode_decision(new.decision)
    assert rec.snapshot_sha256 == codec.digest(codec.dumps(codec.encode_snapshot(new.snapshot)))
    assert rec.packages == PACKAGES and rec.seed == new.params.seed
    s = rec.summary
    assert (s.user, s.host, s.cluster, s.state, s.slurm_job_id) == (
        "alice", "login1", "c1", S.PLANNED, None,
    )  # fmt: skip
    assert s.created_at == NOW and s.start == new.start and s.end == new.end
    assert s.placement == new.decision.placement
    assert [(t.state, t.at) for t in rec.transitions] == [(S.PLANNED, NOW)]
    with pytest.raises(FrozenInstanceError):
        rec.summary.state = S.RUNNING  # type: ignore[misc]


def test_unknown_id_is_not_found(store: SqlDecisionStore) -> None:
    with pytest.raises(NotFoundError):
        store.get(999)
    with pytest.raises(NotFoundError):
        store.transition(999, S.RELEASED, NOW)


# --- 3: planning blocks --------------------------------------------------------------------------


def test_planning_rolls_back_on_error(store: SqlDecisionStore) -> None:
    with pytest.raises(RuntimeError), store.planning("c1") as tx:
        tx.record(new_decision())
        raise RuntimeError("solver blew up")
    assert store.history() == ()
    assert reservations(store) == ()


def test_planning_sees_committed_reservations(store: SqlDecisionStore) -> None:
    first = new_decision("a")
    record(store, first)
    with store.planning("c1") as tx:
        held = tx.reservations(NOW, epoch=EPOCH, slot_seconds=600.0)
    assert held == tuple(
        replace(r, job_id="mlsub-1") for r in first.decision.reservations(first.request)
    )


def test_submitting_decisions_reserve_and_carry_their_script(store: SqlDecisionStore) -> None:
    new = replace(new_decision("s"), state=S.SUBMITTING)
    with store.planning("c1") as tx:
        rid = tx.record(new).decision_id
        tx.attach_script(rid, "#!/bin/bash\n#SBATCH --comment=x\n")
        (summary,) = tx.summaries([rid, 999])
        assert summary.state == S.SUBMITTING and summary.decision_id == rid
    rec = store.get(rid)
    assert rec.script == "#!/bin/bash\n#SBATCH --comment=x\n"
    assert [t.state for t in rec.transitions] == [S.SUBMITTING]
    assert reservations(store) != ()
    with store.planning("c2") as tx:  # another cluster's lock sees none of c1's decisions
        assert tx.summaries([rid]) == ()


def test_a_script_attached_in_a_failed_block_is_rolled_back(store: SqlDecisionStore) -> None:
    with pytest.raises(RuntimeError), store.planning("c1") as tx:
        rid = tx.record(new_decision()).decision_id
        tx.attach_script(rid, "script")
        raise RuntimeError("render failed")
    assert store.history() == ()


def test_a_new_decision_starts_planned_or_submitting(store: SqlDecisionStore) -> None:
    with pytest.raises(ValueError), store.planning("c1") as tx:
        tx.record(replace(new_decision(), state=S.RUNNING))
    assert store.history() == ()


def _plan_one(args: tuple[str, int]) -> int:
    """In a child process: plan one job under the lock against stored reservations."""
    url, k = args
    store = open_store(url, grace_s=GRACE)
    base = snapshot(2)
    job = make_job(f"p{k}", workers=4, workload=4000.0)
    with store.planning("c1") as tx:
        snap = base.with_reservations(tx.reservations(NOW, epoch=EPOCH, slot_seconds=600.0))
        decision = place(job, snap, "yu-rr", PlacementParams())
        rid = tx.record(
            NewDecision(job, snap, PlacementParams(), decision, f"u{k}", "h", NOW)
        ).decision_id
    store.close()
    return rid


def test_concurrent_planning_never_double_books(store: SqlDecisionStore, db_url: str) -> None:
    procs = 8
    with multiprocessing.get_context("fork").Pool(procs) as pool:
        ids = pool.map(_plan_one, [(db_url, k) for k in range(procs)])
    assert sorted(ids) == list(range(1, procs + 1))
    assert_capacity_respected(store, snapshot(2))
    starts = {store.get(i).decision.start_slot for i in ids}
    assert len(starts) > 1, "every job started at once: reservations were not seen"


def assert_capacity_respected(store: SqlDecisionStore, base) -> None:  # type: ignore[no-untyped-def]
    caps = {m.name: m.capacity.as_tuple() for m in base.machines}
    used: dict[tuple[str, int], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for summary in store.history():
        rec = store.get(summary.decision_id)
        for plan in rec.decision.slots:
            for node, use in plan.usage(rec.request).items():
                for t in range(plan.slot, plan.stop):
                    cell = used[(node, t)]
                    for i, x in enumerate(use.as_tuple()):
                        cell[i] += x
    for (node, t), cell in used.items():
        assert all(u <= c + 1e-9 for u, c in zip(cell, caps[node], strict=True)), (node, t, cell)


# --- 4: reservations -----------------------------------------------------------------------------


def test_terminal_decisions_reserve_nothing(store: SqlDecisionStore) -> None:
    ids = [record(store, new_decision(f"j{k}")) for k in range(3)]
    store.transition(ids[0], S.RELEASED, NOW)
    store.transition(ids[1], S.SUBMITTED, NOW, slurm_job_id="77")
    store.transition(ids[1], S.COMPLETED, NOW)
    assert {r.job_id for r in reservations(store)} == {f"mlsub-{ids[2]}"}


def test_reservations_are_per_cluster(store: SqlDecisionStore) -> None:
    record(store, new_decision(), cluster="other")
    assert reservations(store) == ()
    assert reservations(store, cluster="other") != ()


def test_grace_holds_the_last_slot_then_lets_go(store: SqlDecisionStore) -> None:
    new = new_decision()
    record(store, new)
    end = new.end
    assert all(r.end_slot <= new.decision.end_slot + 1 for r in reservations(store))
    late = reservations(store, now=end + timedelta(seconds=60))
    assert late and all(r.end_slot == new.decision.end_slot + 2 for r in late)  # end + 600 s
    assert reservations(store, now=end + timedelta(seconds=GRACE)) == ()


def test_reservations_map_onto_another_slot_grid(store: SqlDecisionStore) -> None:
    new = new_decision()
    record(store, new)
    held = store.reservations("c1", NOW, epoch=EPOCH - timedelta(seconds=300), slot_seconds=600.0)
    for r, orig in zip(held, new.decision.reservations(new.request), strict=True):
        assert (r.start_slot, r.end_slot) == (orig.start_slot, orig.end_slot + 1)  # widened


# --- 5: transitions ------------------------------------------------------------------------------


def test_transitions_append_and_follow_the_rules(store: SqlDecisionStore) -> None:
    rid = record(store, new_decision())
    later = NOW + timedelta(minutes=1)
    store.transition(rid, S.SUBMITTED, later, slurm_job_id="4242")
    store.transition(rid, S.RUNNING, later + timedelta(minutes=1))
    with pytest.raises(InvalidTransitionError):
        store.transition(rid, S.RELEASED, later)
    rec = store.get(rid)
    assert rec.state == S.RUNNING and rec.summary.slurm_job_id == "4242"
    assert [t.state for t in rec.transitions] == [S.PLANNED, S.SUBMITTED, S.RUNNING]
    failed = record(store, new_decision("j2"))
    store.transition(failed, S.SUBMIT_FAILED, later, "sbatch: error: invalid partition")
    assert store.get(failed).transitions[-1].detail == "sbatch: error: invalid partition"
    interrupted = record(store, replace(new_decision("j3"), state=S.SUBMITTING))
    with pytest.raises(InvalidTransitionError):
        store.transition(interrupted, S.RELEASED, later)
    store.transition(interrupted, S.RUNNING, later, slurm_job_id="77")
    assert store.get(interrupted).summary.slurm_job_id == "77"


def test_a_state_already_reached_is_a_no_op_and_fills_a_missing_job_id(
    store: SqlDecisionStore,
) -> None:
    rid = record(store, replace(new_decision(), state=S.SUBMITTING))
    later = NOW + timedelta(minutes=1)
    assert store.transition(rid, S.RUNNING, later, "found by tag").applied
    moved = store.transition(rid, S.SUBMITTED, later, "sbatch: job 5", slurm_job_id="5")
    assert (moved.applied, moved.reason, moved.summary.state) == (False, "reached", S.RUNNING)
    assert moved.summary.slurm_job_id == "5"  # the id the no-op brought is kept
    assert not store.transition(rid, S.RUNNING, later).applied
    assert store.transition(rid, S.COMPLETED, later).applied
    for again in (S.SUBMITTED, S.RUNNING, S.COMPLETED, S.CANCELLED):
        assert store.transition(rid, again, later).reason == "reached"
    rec = store.get(rid)
    assert [t.state for t in rec.transitions] == [S.SUBMITTING, S.RUNNING, S.COMPLETED]
    with pytest.raises(InvalidTransitionError):
        store.transition(rid, S.RELEASED, later)  # off the path: still refused


def test_expected_makes_a_transition_a_compare_and_set(store: SqlDecisionStore) -> None:
    rid = record(store, replace(new_decision(), state=S.SUBMITTING))
    later = NOW + timedelta(minutes=1)
    store.transition(rid, S.SUBMITTED, later, slurm_job_id="7")  # the owner got there first
    stale = store.transition(rid, S.SUBMIT_FAILED, later, "stale", expected=S.SUBMITTING)
    assert (stale.applied, stale.reason, stale.summary.state) == (False, "changed", S.SUBMITTED)
    assert [t.state for t in store.get(rid).transitions] == [S.SUBMITTING, S.SUBMITTED]
    assert store.transition(rid, S.RUNNING, later, expected=S.SUBMITTED).applied


def test_submit_failed_is_repaired_when_its_job_turns_up(store: SqlDecisionStore) -> None:
    rid = record(store, replace(new_decision(), state=S.SUBMITTING))
    later = NOW + timedelta(minutes=1)
    store.transition(rid, S.SUBMIT_FAILED, later, "process gone")
    assert reservations(store) == ()
    store.transition(rid, S.SUBMITTED, later, "found by tag", slurm_job_id="8")
    assert store.get(rid).state == S.SUBMITTED and reservations(store) != ()


def _walk(args: tuple[str, int]) -> list[tuple[bool, str]]:
    url, rid = args
    store = open_store(url, grace_s=GRACE)
    try:
        at = NOW + timedelta(minutes=1)
        return [
            (m.applied, m.reason)
            for m in (
                store.transition(rid, state, at, f"{state}", slurm_job_id="9")
                for state in (S.SUBMITTED, S.RUNNING, S.COMPLETED)
            )
        ]
    finally:
        store.close()


def test_concurrent_processes_walking_one_decision_never_fail_each_other(
    store: SqlDecisionStore, db_url: str
) -> None:
    """Eight processes record the same Slurm facts at once (a submit and its neighbours'
    reconciles): every call succeeds and each state is recorded exactly once."""
    rid = record(store, replace(new_decision(), state=S.SUBMITTING))
    with multiprocessing.get_context("fork").Pool(8) as pool:
        results = pool.map(_walk, [(db_url, rid)] * 8)
    applied = [sum(ok for ok, _ in r) for r in zip(*results, strict=True)]
    assert applied == [1, 1, 1]  # per state, one process moved it; the rest were no-ops
    rec = store.get(rid)
    assert [t.state for t in rec.transitions] == [S.SUBMITTING, S.SUBMITTED, S.RUNNING, S.COMPLETED]
    assert rec.summary.slurm_job_id == "9"


# --- 6: listing ----------------------------------------------------------------------------------


def test_history_filters(store: SqlDecisionStore) -> None:
    a = record(store, new_decision("a", user="alice"))
    b = record(store, new_decision("b", user="bob", created_at=NOW + timedelta(hours=1)))
    c = record(store, new_decision("c", user="alice", created_at=NOW + timedelta(hours=2)))
    store.transition(c, S.RELEASED, NOW + timedelta(hours=3))
    ids = lambda where: [s.decision_id for s in store.history(where)]  # noqa: E731
    assert ids(HistoryFilter()) == [a, b, c]
    assert ids(HistoryFilter(user="alice")) == [a, c]
    assert ids(HistoryFilter(since=NOW + timedelta(minutes=30))) == [b, c]
    assert ids(HistoryFilter(state=S.PLANNED)) == [a, b]
    assert ids(HistoryFilter(limit=2)) == [b, c]
    assert ids(HistoryFilter(cluster="nope")) == []


# --- replay runs ---------------------------------------------------------------------------------


def test_replay_runs_round_trip(store: SqlDecisionStore) -> None:
    run = NewReplayRun(
        NOW, "alice", "philly.csv", {"jobs": 100, "seed": 3},
        {"yu-rr": {"avg_jct_s": 1234.5, "makespan_s": 9e4}, "fifo": {"avg_jct_s": 2000.25}},
    )  # fmt: skip
    stored = store.add_replay_run(run)
    assert store.replay_runs() == (stored,)
    assert stored.results == run.results and stored.config == run.config
