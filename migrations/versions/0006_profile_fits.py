"""Predictions that learn (issue 20): per-model speed factors fitted from real runtimes.

``profile_fits`` holds one row per fit (``mlsub calibrate``): the cluster, the model name,
its scope ('' for every user, ``user:NAME`` for one user's runs),
the factor applied to the model's speed profile (``model/calibration.py``), how many
completed runs it came from and the median relative error of the runtime prediction
before and after. Append-only: the newest row of a (cluster, model, scope) is in force; a
reset is a row with factor 1 and no samples. Its id is the fit's version, which a decision that
used it names in its notes.

On PostgreSQL every role of ``mlsub_users`` may read the fits (planning applies them) and
only ``mlsub_admins`` may add one.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "profile_fits",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("cluster", sa.String(200), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("scope", sa.String(200), nullable=False, server_default=""),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("created_by", sa.String(200), nullable=False),
        sa.Column("factor", sa.Float(), nullable=False),
        sa.Column("samples", sa.Integer(), nullable=False),
        sa.Column("error_before", sa.Float(), nullable=True),
        sa.Column("error_after", sa.Float(), nullable=True),
    )
    op.create_index("ix_profile_fits_cluster_model", "profile_fits", ["cluster", "model"])
    if op.get_bind().dialect.name == "postgresql":
        op.execute("GRANT SELECT ON profile_fits TO mlsub_users, mlsub_admins")
        op.execute("GRANT INSERT ON profile_fits TO mlsub_admins")
        op.execute("GRANT USAGE ON profile_fits_id_seq TO mlsub_admins")


def downgrade() -> None:
    op.drop_index("ix_profile_fits_cluster_model", table_name="profile_fits")
    op.drop_table("profile_fits")
