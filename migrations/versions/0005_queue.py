"""Late binding in the live queue (issue 19): queued and starting decisions.

* ``decisions.launch_json``: what a re-plan needs to render the job's script again for the
  layout it chooses when it starts a queued job (the command, name, partition, time limit,
  output, working directory, the file holding the submission's environment); see
  ``sbatch/launch.py``. Older rows have none (they are never queued).
* ``decisions.earlier_job_ids_json``: the Slurm job ids a decision had before its current
  one (a queued job whose layout changed is submitted again; its held job is cancelled),
  so that ``mlsub show`` lists every id. Older rows have none (no earlier ids).
* The views of revision 0004 are redefined with the two new states: ``open_decisions``
  shows every open decision (``queued`` and ``starting`` too), ``open_reservations`` the
  reservations of the states that reserve (``queued`` does not: a waiting job holds
  nothing).

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

OLD_OPEN = "('planned', 'submitting', 'submitted', 'running')"
OPEN_STATES = "('planned', 'submitting', 'submitted', 'running', 'queued', 'starting')"
RESERVING_STATES = "('planned', 'submitting', 'submitted', 'running', 'starting')"

SUMMARY_COLUMNS = (
    'id, cluster, created_at, "user", host, job_id, job_name, policy, form, mode, state, '
    "start_at, end_at, start_slot, end_slot, placement_json, slurm_job_id, submitter, "
    "slurm_user"
)


def _postgres() -> bool:
    return bool(op.get_bind().dialect.name == "postgresql")


def _drop_views() -> None:
    op.execute("DROP VIEW open_reservations")
    op.execute("DROP VIEW open_decisions")


def _views(decisions: str, reservations: str) -> None:
    """(Re)define the two views; PostgreSQL replaces them in place (keeping their grants),
    SQLite, which cannot replace a view, gets them dropped first by the caller."""
    create = "CREATE OR REPLACE VIEW" if _postgres() else "CREATE VIEW"
    op.execute(
        f"{create} open_decisions AS SELECT {SUMMARY_COLUMNS} FROM decisions "
        f"WHERE state IN {decisions}"
    )
    op.execute(
        f"{create} open_reservations AS SELECT r.id AS id, r.decision_id AS decision_id, "
        "d.cluster AS cluster, d.state AS state, d.end_at AS decision_end_at, r.node AS node, "
        "r.start_at AS start_at, r.end_at AS end_at, r.gpu AS gpu, r.cpu AS cpu, r.mem AS mem "
        "FROM decision_reservations r JOIN decisions d ON d.id = r.decision_id "
        f"WHERE d.state IN {reservations}"
    )


def upgrade() -> None:
    if not _postgres():
        _drop_views()  # SQLite: a table under a view is not altered
    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("launch_json", sa.Text(), nullable=True))
        batch.add_column(sa.Column("earlier_job_ids_json", sa.Text(), nullable=True))
    _views(OPEN_STATES, RESERVING_STATES)


def downgrade() -> None:
    if _postgres():
        _views(OLD_OPEN, OLD_OPEN)
    else:
        _drop_views()
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("earlier_job_ids_json")
        batch.drop_column("launch_json")
    if not _postgres():
        _views(OLD_OPEN, OLD_OPEN)
