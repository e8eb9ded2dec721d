"""Append-only state history, back-filled; index for the reservation query.

Every decision gets a ``planned`` transition at its creation time and, when its state has
moved on, one more with its current state, time and detail (all that revision 0001 kept).

Revision ID: 0002
Revises: 0001
Create Date: 2026-03-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    transitions = op.create_table(
        "decision_transitions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("decision_id", sa.Integer(), sa.ForeignKey("decisions.id"), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("at", sa.DateTime(), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
    )
    op.create_index("ix_decision_transitions_decision_id", "decision_transitions", ["decision_id"])
    op.create_index("ix_decisions_cluster_state_end", "decisions", ["cluster", "state", "end_at"])
    decisions = sa.table(
        "decisions",
        sa.column("id", sa.Integer()),
        sa.column("created_at", sa.DateTime()),
        sa.column("state", sa.String()),
        sa.column("state_changed_at", sa.DateTime()),
        sa.column("state_detail", sa.Text()),
    )
    conn = op.get_bind()
    rows = conn.execute(sa.select(decisions).order_by(decisions.c.id)).all()
    history: list[dict[str, object]] = []
    for row in rows:
        history.append({"decision_id": row.id, "state": "planned", "at": row.created_at,
                        "detail": ""})  # fmt: skip
        if row.state != "planned":
            history.append({"decision_id": row.id, "state": row.state,
                            "at": row.state_changed_at, "detail": row.state_detail})  # fmt: skip
    if history:
        op.bulk_insert(transitions, history)


def downgrade() -> None:
    op.drop_index("ix_decisions_cluster_state_end", "decisions")
    op.drop_index("ix_decision_transitions_decision_id", "decision_transitions")
    op.drop_table("decision_transitions")
