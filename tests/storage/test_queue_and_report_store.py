"""The store's parts for the queue (issue 19) and the report and calibration (issue 20),
on SQLite and on a real PostgreSQL: a queued decision reserves nothing until started; a
re-plan's start replaces its plan and reserves it; the tentative plan is kept without a
transition; a new Slurm job id keeps the old one among the earlier ids; the report's bulk
read; profile fits, the newest in force per model and scope."""

from __future__ import annotations

from datetime import timedelta

import pytest

from slurm_mlsched.errors import InvalidTransitionError
from slurm_mlsched.storage import DecisionState, HistoryFilter, SqlDecisionStore, open_store
from tests.storage.helpers import EPOCH, NOW, new_decision, snapshot

S = DecisionState


@pytest.fixture
def store(db_url: str) -> SqlDecisionStore:
    return open_store(db_url, grace_s=600.0)


def held(store: SqlDecisionStore) -> set[str]:
    return {r.job_id for r in store.reservations("c1", NOW, epoch=EPOCH, slot_seconds=600.0)}


def test_a_queued_decision_reserves_nothing_until_it_is_started(store: SqlDecisionStore) -> None:
    from dataclasses import replace

    new = replace(new_decision("q1"), state=S.SUBMITTING, holds=False)
    with store.planning("c1") as tx:
        did = tx.record(new).decision_id
    store.transition(did, S.QUEUED, NOW, "sbatch --hold: job 11", slurm_job_id="11")
    assert held(store) == set()
    with store.planning("c1") as tx:
        (queued,) = tx.queued()
        assert queued.decision_id == did
        later = replace(snapshot(), now_slot=1)
        tentative = replace(queued.decision, notes=("tentative",))
        tx.set_tentative(did, request=queued.request, snapshot=later, decision=tentative)
    rec = store.get(did)
    assert rec.state == S.QUEUED and rec.decision.notes == ("tentative",)
    assert [t.state for t in rec.transitions] == [S.SUBMITTING, S.QUEUED]  # no transition
    assert held(store) == set()
    with store.planning("c1") as tx:
        tx.start(did, request=rec.request, snapshot=rec.snapshot, decision=rec.decision,
                 script="#!/bin/bash\n", at=NOW, detail="replan: starts now")  # fmt: skip
    assert store.get(did).state == S.STARTING and held(store) == {f"mlsub-{did}"}
    with store.planning("c1") as tx, pytest.raises(InvalidTransitionError):
        tx.start(did, request=rec.request, snapshot=rec.snapshot, decision=rec.decision,
                 script="x", at=NOW, detail="twice")  # fmt: skip
    store.transition(did, S.SUBMITTED, NOW, "new job", slurm_job_id="12", expected=S.STARTING)
    rec = store.get(did)
    assert rec.summary.slurm_job_id == "12" and rec.earlier_job_ids == ("11",)


def test_report_rows_and_profile_fits(store: SqlDecisionStore) -> None:
    with store.planning("c1") as tx:
        a = tx.record(new_decision("a", created_at=NOW)).decision_id
        b = tx.record(new_decision("b", user="bob", created_at=NOW + timedelta(hours=1)))
    store.transition(a, S.SUBMITTED, NOW, "sbatch", slurm_job_id="21")
    store.transition(a, S.RUNNING, NOW + timedelta(minutes=1), "running")
    rows = store.report_rows(HistoryFilter(cluster="c1"))
    assert [r.summary.decision_id for r in rows] == [a, b.decision_id]
    assert [s for s, _ in rows[0].transitions] == ["planned", "submitted", "running"]
    assert store.report_rows(HistoryFilter(cluster="c1", user="bob"))[0].summary.user == "bob"
    assert len(store.report_rows(HistoryFilter(cluster="c1", until=NOW + timedelta(minutes=5))))
    assert store.report_rows(HistoryFilter(cluster="c1", until=NOW)) == ()

    first = store.add_profile_fits("c1", [("resnet-50", "", 2.0, 6, 0.5, 0.01)], at=NOW, by="root")
    store.add_profile_fits(
        "c1",
        [("resnet-50", "user:bob", 1.0, 5, 0.02, 0.01), ("resnet-50", "", 1.5, 11, 0.3, 0.2)],
        at=NOW,
        by="root",
    )
    fits = store.profile_fits("c1")
    assert set(fits) == {"resnet-50", "resnet-50|user:bob"}
    assert fits["resnet-50"].factor == 1.5 and fits["resnet-50"].version > first[0].version
    assert store.profile_fits("other") == {}
