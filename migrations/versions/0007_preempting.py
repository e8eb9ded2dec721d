"""Checkpoint-restart preemption on the live queue (issue 28 item 3): ``preempting``.

* ``decisions.resumed_request_json``: the request a decision that a re-plan is pausing
  waits with once it is requeued (its workload the work its run has not covered plus the
  restart charge, docs/formulation.md §16), written with the ``preempting`` state and
  moved into ``request_json`` when the decision becomes ``queued`` (cleared when it goes
  back to ``running`` or ends). Older rows have none.
* The views of revision 0005 are redefined with the new state: a ``preempting`` decision
  is open and still reserves (Slurm runs it until it has checkpointed and is requeued).

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

OLD_OPEN = "('planned', 'submitting', 'submitted', 'running', 'queued', 'starting')"
OLD_RESERVING = "('planned', 'submitting', 'submitted', 'running', 'starting')"
OPEN_STATES = (
    "('planned', 'submitting', 'submitted', 'running', 'queued', 'starting', 'preempting')"
)
RESERVING_STATES = "('planned', 'submitting', 'submitted', 'running', 'starting', 'preempting')"

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
    """(Re)define the two views as revision 0005 does, with these state lists."""
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
        batch.add_column(sa.Column("resumed_request_json", sa.Text(), nullable=True))
    _views(OPEN_STATES, RESERVING_STATES)


def downgrade() -> None:
    if _postgres():
        _views(OLD_OPEN, OLD_RESERVING)
    else:
        _drop_views()
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("resumed_request_json")
    if not _postgres():
        _views(OLD_OPEN, OLD_RESERVING)
