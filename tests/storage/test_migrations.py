"""Migrations: models match head; a database at the first revision holding decisions
upgrades to head with every row intact; out-of-date and foreign databases are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import MetaData, Table, create_engine, insert, select, text

from slurm_mlsched.errors import SchemaOutOfDateError, StoreError
from slurm_mlsched.services.decisions import resolve
from slurm_mlsched.storage import DecisionState, codec, open_store
from slurm_mlsched.storage.database import (
    HEAD_REVISION,
    alembic_config,
    head_revision,
    make_engine,
    migrations_dir,
    upgrade,
)
from slurm_mlsched.storage.models import Base
from tests.storage.helpers import NOW, new_decision

FIRST = "0001"


def test_head_is_the_fourth_revision_and_the_dir_is_the_checkout() -> None:
    assert head_revision() == HEAD_REVISION == "0007"  # the constant follows migrations/
    assert migrations_dir() == Path(__file__).resolve().parents[2] / "migrations"


def test_models_match_head(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'x.db'}"
    open_store(url, grace_s=0).close()
    with create_engine(url).connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert diff == []


def _old_row(new: Any, state: str, detail: str) -> dict[str, Any]:
    """A decisions row as revision 0001 wrote it."""
    d, snap = new.decision, new.snapshot
    snapshot_json = codec.dumps(codec.encode_snapshot(snap))
    naive = lambda t: t.replace(tzinfo=None)  # noqa: E731
    return {
        "cluster": "c1", "created_at": naive(new.created_at), "user": new.user,
        "host": new.host, "job_id": new.request.job_id, "job_name": new.request.name,
        "policy": d.policy, "form": d.form.value, "mode": d.mode.value, "seed": d.seed,
        "params_json": codec.dumps(codec.encode_params(new.params)),
        "request_json": codec.dumps(codec.encode_request(new.request)),
        "snapshot_json": snapshot_json, "snapshot_sha256": codec.digest(snapshot_json),
        "decision_json": codec.dumps(codec.encode_decision(d)),
        "placement_json": codec.dumps(
            [{"node": r.node, "role": r.role.value, "count": r.count} for r in d.placement]
        ),
        "solver": d.solver, "solver_version": d.solver_version,
        "packages_json": codec.dumps([list(p) for p in new.packages]),
        "lp_deadline_slot": d.lp_deadline, "lp_value": d.lp_value, "trials": d.trials,
        "repair_actions_json": codec.dumps(list(d.repair_actions)),
        "start_slot": d.start_slot, "end_slot": d.end_slot,
        "start_at": naive(new.start), "end_at": naive(new.end), "script": "#!/bin/sh\n",
        "slurm_job_id": "99" if state != "planned" else None, "state": state,
        "state_changed_at": naive(NOW), "state_detail": detail,
    }  # fmt: skip


def _dump(url: str, table: str) -> list[tuple[Any, ...]]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(text(f"SELECT * FROM {table} ORDER BY id"))]
    engine.dispose()
    return rows


def test_first_revision_database_upgrades_with_every_row_intact(db_url: str) -> None:
    engine = make_engine(db_url)
    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), FIRST)
        meta = MetaData()
        decisions = Table("decisions", meta, autoload_with=conn)
        reservations = Table("decision_reservations", meta, autoload_with=conn)
        news = [new_decision(f"j{k}", seed=k, workload=1000.0 + k / 3) for k in range(3)]
        states = [("planned", ""), ("completed", "exit 0"), ("submit-failed", "sbatch: boom")]
        for new, (state, detail) in zip(news, states, strict=True):
            rid = conn.execute(insert(decisions).values(**_old_row(new, state, detail)))
            did = rid.inserted_primary_key[0]
            for r in new.decision.reservations(new.request):
                conn.execute(insert(reservations).values(
                    decision_id=did, node=r.machine, gpu=r.usage.gpu, cpu=r.usage.cpu,
                    mem=r.usage.mem,
                    start_at=new.snapshot.slot_start(r.start_slot).replace(tzinfo=None),
                    end_at=new.snapshot.slot_start(r.end_slot).replace(tzinfo=None),
                ))  # fmt: skip
    before = {t: _dump(db_url, t) for t in ("decisions", "decision_reservations")}

    with pytest.raises(SchemaOutOfDateError) as err:
        open_store(db_url, grace_s=600)
    assert err.value.exit_code == 7 and "mlsub db upgrade" in err.value.hint

    assert upgrade(engine, db_url) == (FIRST, head_revision())
    engine.dispose()
    for table, rows in before.items():
        after = _dump(db_url, table)
        if table == "decisions":  # revisions 0003 (submitter, slurm_user), 0005
            # (launch_json, earlier_job_ids_json) and 0007 (resumed_request_json) append
            # columns: empty here
            assert all(r[-5:] == (None,) * 5 for r in after)
            after = [r[:-5] for r in after]
        assert after == rows, table
    store = open_store(db_url, grace_s=600)
    for k, (new, (state, detail)) in enumerate(zip(news, states, strict=True), start=1):
        rec = store.get(k)
        assert (rec.request, rec.snapshot, rec.decision) == (
            new.request,
            new.snapshot,
            new.decision,
        )
        assert rec.state == DecisionState(state) and rec.script == "#!/bin/sh\n"
        expected = [("planned", NOW, "")] + ([] if state == "planned" else [(state, NOW, detail)])
        assert [(t.state.value, t.at, t.detail) for t in rec.transitions] == expected
        assert resolve(rec).reproduced is True
    assert len(store.reservations("c1", NOW, epoch=news[0].snapshot.epoch, slot_seconds=600)) > 0


def test_a_foreign_database_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'other.db'}"
    with create_engine(url).begin() as conn:
        conn.execute(text("CREATE TABLE stuff (x INTEGER)"))
    with pytest.raises(StoreError, match="not an mlsub decision store"):
        open_store(url, grace_s=0)


def test_a_newer_database_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    open_store(url, grace_s=0).close()
    with create_engine(url).begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    with pytest.raises(StoreError, match="does not know") as err:
        open_store(url, grace_s=0)
    assert not isinstance(err.value, SchemaOutOfDateError)


def test_fresh_database_is_created_at_head_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "state" / "mlsched" / "decisions.db"
    open_store(f"sqlite:///{path}", grace_s=0).close()
    assert path.stat().st_mode & 0o777 == 0o600
    assert path.parent.stat().st_mode & 0o777 == 0o700
    engine = create_engine(f"sqlite:///{path}")
    with engine.connect() as conn:
        assert (
            conn.execute(select(text("version_num")).select_from(text("alembic_version"))).scalar()
            == "0007"
        )
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
    engine.dispose()
