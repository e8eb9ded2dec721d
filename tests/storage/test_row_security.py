"""PostgreSQL row-level security (migration 0004), against a real server: with a role of
their own in ``mlsub_users`` a user sees and changes only their own decisions, whatever
the CLI believes, while planning still sees every user's open reservations; members of
``mlsub_admins`` see all; a shared role outside both groups keeps seeing all.

The trust-model table of docs/admin-guide.md names these tests.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from typer.testing import CliRunner

from slurm_mlsched.errors import NotFoundError, StoreError
from slurm_mlsched.storage import DecisionState, HistoryFilter, NewDecision, open_store
from slurm_mlsched.storage.sqlalchemy_store import SqlDecisionStore
from tests.storage.helpers import EPOCH, NOW, new_decision
from tests.storage.postgres import PgServer

pytestmark = pytest.mark.integration

_names = itertools.count()


@dataclass(frozen=True)
class Site:
    """One store with three login roles: two users and an admin."""

    server: PgServer
    database: str

    def url(self, role: str) -> str:
        return self.server.url(self.database, role)

    def sql(self, role: str, statement: str) -> list[tuple[object, ...]]:
        import psycopg

        with psycopg.connect(
            host=self.server.host, port=self.server.port, user=role, dbname=self.database,
            autocommit=True,
        ) as conn:  # fmt: skip
            cur = conn.execute(statement)  # type: ignore[arg-type]
            return list(cur.fetchall()) if cur.description else []


@pytest.fixture
def site(pg_server: PgServer) -> Iterator[Site]:
    import psycopg

    k = next(_names)
    url = pg_server.create_database(f"rls{k}")
    open_store(url, grace_s=0).close()  # the owner (superuser 'mlsub') creates the schema
    s = Site(pg_server, f"rls{k}")
    alice, bob, carol = f"alice{k}", f"bob{k}", f"carol{k}"
    with psycopg.connect(
        host=pg_server.host, port=pg_server.port, user="mlsub", dbname="postgres", autocommit=True
    ) as conn:
        conn.execute(f"CREATE ROLE {alice} LOGIN IN ROLE mlsub_users")  # type: ignore[arg-type]
        conn.execute(f"CREATE ROLE {bob} LOGIN IN ROLE mlsub_users")  # type: ignore[arg-type]
        conn.execute(  # type: ignore[arg-type]
            f"CREATE ROLE {carol} LOGIN IN ROLE mlsub_users, mlsub_admins"
        )
        conn.execute(f"CREATE ROLE shared{k} LOGIN")  # type: ignore[arg-type]
    # a site's single shared role, outside both groups (tables granted in the store's database)
    s.sql("mlsub", f"GRANT ALL ON ALL TABLES IN SCHEMA public TO shared{k}")
    yield s


def record(store: SqlDecisionStore, new: NewDecision, cluster: str = "c1") -> int:
    with store.planning(cluster) as tx:
        return tx.record(new).decision_id


def _store(site: Site, role: str) -> SqlDecisionStore:
    return open_store(site.url(role), grace_s=0)


def _names_of(site: Site) -> tuple[str, str, str]:
    k = site.database.removeprefix("rls")
    return f"alice{k}", f"bob{k}", f"carol{k}"


def test_a_user_sees_and_changes_only_their_own_decisions(site: Site) -> None:
    alice, bob, _ = _names_of(site)
    a, b = _store(site, alice), _store(site, bob)
    try:
        mine = record(a, new_decision("j1", user=alice))
        theirs = record(b, new_decision("j2", user=bob))
        assert [s.decision_id for s in b.history()] == [theirs]
        assert [s.decision_id for s in b.history(HistoryFilter(user=alice))] == []
        with pytest.raises(NotFoundError):
            b.get(mine)
        with pytest.raises(NotFoundError):
            b.transition(mine, DecisionState.RELEASED, NOW, "by bob")
        assert a.get(mine).state == DecisionState.PLANNED  # untouched
        # the database says so, not only mlsub: bob's own SQL sees none of alice's rows
        assert site.sql(bob, "SELECT id FROM decisions") == [(theirs,)]
        assert site.sql(
            bob, f"SELECT count(*) FROM decision_transitions WHERE decision_id = {mine}"
        ) == [(0,)]
        assert (
            site.sql(bob, f"UPDATE decisions SET state = 'released' WHERE id = {mine} RETURNING id")
            == []
        )
        assert a.get(mine).state == DecisionState.PLANNED
    finally:
        a.close()
        b.close()


def test_a_user_cannot_record_a_decision_in_another_users_name(site: Site) -> None:
    alice, bob, _ = _names_of(site)
    b = _store(site, bob)
    try:
        with pytest.raises(StoreError) as caught:
            record(b, new_decision("forged", user=alice))
        assert caught.value.context["cause"] == "permission"
        assert "row-level security" in str(caught.value)
    finally:
        b.close()
    a = _store(site, alice)
    try:
        assert a.history() == ()
    finally:
        a.close()


def test_planning_still_sees_every_users_reservations(site: Site) -> None:
    """No double booking across users: the planner reads the open reservations of every
    user through the ``open_reservations`` view, and the tags of their running jobs
    through ``open_decisions``; never their scripts, requests or snapshots."""
    alice, bob, _ = _names_of(site)
    a, b = _store(site, alice), _store(site, bob)
    try:
        mine = record(a, new_decision("j1", user=alice))
        with b.planning("c1") as tx:
            held = tx.reservations(NOW, epoch=EPOCH, slot_seconds=600.0)
            assert {r.job_id for r in held} == {f"mlsub-{mine}"}
            (summary,) = tx.summaries({mine})
            assert (summary.decision_id, summary.user) == (mine, alice)
        assert b.reservations("c1", NOW, epoch=EPOCH, slot_seconds=600.0) == held
        assert site.sql(bob, "SELECT count(*) FROM open_decisions") == [(1,)]
        # the view has no script, request or snapshot; the table shows bob none of hers
        with pytest.raises(Exception, match='column "script" does not exist'):
            site.sql(bob, "SELECT script FROM open_decisions")
        assert site.sql(bob, f"SELECT script FROM decisions WHERE id = {mine}") == []
        a.transition(mine, DecisionState.RELEASED, NOW, "done")
        assert b.reservations("c1", NOW, epoch=EPOCH, slot_seconds=600.0) == ()
    finally:
        a.close()
        b.close()


def test_admins_and_a_shared_role_see_every_decision(site: Site) -> None:
    alice, bob, carol = _names_of(site)
    a, b = _store(site, alice), _store(site, bob)
    try:
        ids = {record(a, new_decision("j1", user=alice)), record(b, new_decision("j2", user=bob))}
    finally:
        a.close()
        b.close()
    c = _store(site, carol)
    try:
        assert {s.decision_id for s in c.history()} == ids
        released = min(ids)
        assert c.transition(released, DecisionState.RELEASED, NOW, "by the admin").applied
    finally:
        c.close()
    k = site.database.removeprefix("rls")
    shared = _store(site, f"shared{k}")
    try:
        assert {s.decision_id for s in shared.history()} == ids
    finally:
        shared.close()


def test_the_cli_cannot_widen_what_the_database_shows(site: Site, tmp_path: Path) -> None:
    """Even a CLI that takes bob for an admin (root setting ``MLSUB_ADMINS`` for him, as
    for support) lists and releases only what bob's database role may see."""
    if os.geteuid() != 0:
        pytest.skip("MLSUB_AS_USER and MLSUB_ADMINS are honoured for root only")
    from slurm_mlsched.cli.app import app

    alice, bob, _ = _names_of(site)
    a = _store(site, alice)
    try:
        mine = record(a, new_decision("j1", user=alice))
    finally:
        a.close()
    env = {
        "MLSUB_AS_USER": bob,
        "MLSUB_ADMINS": bob,
        "MLSUB_DB_URL": site.url(bob),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
        "MLSUB_DEBUG": "",
    }
    runner = CliRunner()
    listed = runner.invoke(app, ["history", "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    assert listed.stdout.strip() == "[]"
    released = runner.invoke(app, ["release", str(mine)], env=env)
    assert released.exit_code != 0
    assert "not found" in released.output.lower() or "no decision" in released.output.lower()
