"""Who is submitting a decision: the process that runs sbatch for it, and the Slurm user
its job will belong to.

``decisions.submitter`` holds ``pid=<PID> start=<TICKS> boot=<BOOT_ID>`` of the ``mlsub
submit`` process on the decision's ``host`` (``services/process_id.py``), so that
``reconcile`` marks a ``submitting`` decision stale only when that process is gone, never
by wall-clock alone. Older rows have none (reconcile falls back to their age).
``decisions.slurm_user`` is the user name the decision's Slurm job runs as (the local user,
or the SSH user of a remote submission): reconcile and the planner count a job carrying
the decision's tag as the decision's only when Slurm says it belongs to that user, so a
copied tag adopts nothing. Older rows have none (the decision's ``user`` is used).

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
        batch.add_column(sa.Column("slurm_user", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("decisions") as batch:
        batch.drop_column("slurm_user")
        batch.drop_column("submitter")
