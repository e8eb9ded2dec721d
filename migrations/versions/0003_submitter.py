"""Who is submitting a decision: the process that runs sbatch for it.

``decisions.submitter`` holds ``pid=<PID> start=<TICKS> boot=<BOOT_ID>`` of the ``mlsub
submit`` process on the decision's ``host`` (``services/process_id.py``), so that
``reconcile`` marks a ``submitting`` decision stale only when that process is gone, never
by wall-clock alone. Older rows have none (reconcile falls back to their age).

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.add_column(sa.Column("submitter", sa.String(100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("submitter")
