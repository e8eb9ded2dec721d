"""Each user's decisions are theirs: two views for the planner, and on PostgreSQL
row-level security.

**Views (every backend).** The planner must see every user's open reservations, or two
users would book the same node; it must not need to read anyone's script, request or
snapshot for that. Two views carry exactly what planning reads:

* ``open_decisions``: the summary columns (id, cluster, times, user, host, job id and
  name, policy, form, mode, state, slots, placement, Slurm job id, submitter, Slurm user)
  of decisions in an open state (``planned``, ``submitting``, ``submitted``, ``running``);
* ``open_reservations``: their per-node reservations (node, window, GPU, CPU, memory) with
  the decision's id, cluster, state and predicted end.

Everything in them is also visible in ``squeue`` once the job is submitted (user, job
name, nodes, times).

**Row-level security (PostgreSQL).** Two group roles, created here if missing:

* ``mlsub_users``: a login role that is a member sees and changes only the rows of
  ``decisions`` (and their reservations and transitions, and ``replay_runs`` and their
  results) whose ``user`` is its own role name, and can insert rows only under its own
  name. It reads every user's open reservations through the two views, which run with
  their owner's rights.
* ``mlsub_admins``: a member sees and changes every row.

A role in neither group (the single shared role of a site that has not given users roles
of their own, or the owner that ran this migration) keeps seeing every row, as before;
``docs/admin-guide.md`` ("Trust model") says which setup enforces what. With per-user
roles a user's role name must be their Unix user name (peer authentication does that).

Creating the two roles needs ``CREATEROLE`` (or a superuser); when the migrating role has
neither and the roles do not exist, the migration stops with the two ``CREATE ROLE``
statements to run as a superuser first.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from __future__ import annotations

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

OPEN_STATES = "('planned', 'submitting', 'submitted', 'running')"

SUMMARY_COLUMNS = (
    'id, cluster, created_at, "user", host, job_id, job_name, policy, form, mode, state, '
    "start_at, end_at, start_slot, end_slot, placement_json, slurm_job_id, submitter, "
    "slurm_user"
)

USERS, ADMINS = "mlsub_users", "mlsub_admins"

#: Who a row is visible to and changeable by: roles outside ``mlsub_users`` (shared or
#: owner roles: unchanged), the row's own user, and ``mlsub_admins``.
VISIBLE = (
    f"(NOT pg_has_role(current_user, '{USERS}', 'MEMBER') "
    f'OR "user" = current_user '
    f"OR pg_has_role(current_user, '{ADMINS}', 'MEMBER'))"
)

#: A child row is visible when its parent is (the sub-select is itself filtered by the
#: parent's policy, for the same role).
CHILDREN = {
    "decision_reservations": "EXISTS (SELECT 1 FROM decisions d WHERE d.id = decision_id)",
    "decision_transitions": "EXISTS (SELECT 1 FROM decisions d WHERE d.id = decision_id)",
    "replay_results": "EXISTS (SELECT 1 FROM replay_runs r WHERE r.id = run_id)",
}

CREATE_ROLES = f"""
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{USERS}')
     OR NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ADMINS}') THEN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = current_user
                   AND (rolsuper OR rolcreaterole)) THEN
      RAISE EXCEPTION 'mlsub needs the roles {USERS} and {ADMINS}, and % may not create roles',
        current_user
        USING HINT = 'as a PostgreSQL superuser run: CREATE ROLE {USERS} NOLOGIN; '
                     'CREATE ROLE {ADMINS} NOLOGIN; then mlsub db upgrade again';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{USERS}') THEN
      CREATE ROLE {USERS} NOLOGIN;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{ADMINS}') THEN
      CREATE ROLE {ADMINS} NOLOGIN;
    END IF;
  END IF;
END
$$;
"""


def upgrade() -> None:
    op.execute(
        f"CREATE VIEW open_decisions AS SELECT {SUMMARY_COLUMNS} FROM decisions "
        f"WHERE state IN {OPEN_STATES}"
    )
    op.execute(
        "CREATE VIEW open_reservations AS SELECT r.id AS id, r.decision_id AS decision_id, "
        "d.cluster AS cluster, d.state AS state, d.end_at AS decision_end_at, r.node AS node, "
        "r.start_at AS start_at, r.end_at AS end_at, r.gpu AS gpu, r.cpu AS cpu, r.mem AS mem "
        "FROM decision_reservations r JOIN decisions d ON d.id = r.decision_id "
        f"WHERE d.state IN {OPEN_STATES}"
    )
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(CREATE_ROLES)
    for table in ("decisions", "replay_runs"):
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"CREATE POLICY mlsub_own ON {table} USING {VISIBLE} WITH CHECK {VISIBLE}")
    for table, parent in CHILDREN.items():
        op.execute(f"ALTER TABLE {table} ENABLE ROW LEVEL SECURITY")
        op.execute(f"CREATE POLICY mlsub_own ON {table} USING ({parent}) WITH CHECK ({parent})")
    tables = (
        "decisions, decision_reservations, decision_transitions, replay_runs, replay_results, "
        "cluster_locks"
    )
    # no DELETE for anyone but the owner: the history is append-only
    op.execute(f"GRANT SELECT, INSERT, UPDATE ON {tables} TO {USERS}, {ADMINS}")
    op.execute(f"GRANT SELECT ON open_decisions, open_reservations, alembic_version "
               f"TO {USERS}, {ADMINS}")  # fmt: skip
    sequences = ", ".join(f"{t}_id_seq" for t in ("decisions", *CHILDREN, "replay_runs"))
    op.execute(f"GRANT USAGE ON {sequences} TO {USERS}, {ADMINS}")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for table in ("decisions", "replay_runs", *CHILDREN):
            op.execute(f"DROP POLICY IF EXISTS mlsub_own ON {table}")
            op.execute(f"ALTER TABLE {table} DISABLE ROW LEVEL SECURITY")
        # the roles stay: other databases of the server may use them
    op.execute("DROP VIEW open_reservations")
    op.execute("DROP VIEW open_decisions")
