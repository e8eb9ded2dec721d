"""Initial schema: decisions (current state only), reservations, locks, replay runs.

Revision ID: 0001
Revises:
Create Date: 2026-03-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "decisions",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("cluster", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("user", sa.String(200), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("job_id", sa.String(255), nullable=False),
        sa.Column("job_name", sa.String(255), nullable=False),
        sa.Column("policy", sa.String(100), nullable=False),
        sa.Column("form", sa.String(20), nullable=False),
        sa.Column("mode", sa.String(20), nullable=False),
        sa.Column("seed", sa.BigInteger(), nullable=False),
        sa.Column("params_json", sa.Text(), nullable=False),
        sa.Column("request_json", sa.Text(), nullable=False),
        sa.Column("snapshot_json", sa.Text(), nullable=False),
        sa.Column("snapshot_sha256", sa.String(64), nullable=False),
        sa.Column("decision_json", sa.Text(), nullable=False),
        sa.Column("placement_json", sa.Text(), nullable=False),
        sa.Column("solver", sa.String(100), nullable=False),
        sa.Column("solver_version", sa.String(100), nullable=False),
        sa.Column("packages_json", sa.Text(), nullable=False),
        sa.Column("lp_deadline_slot", sa.Integer(), nullable=True),
        sa.Column("lp_value", sa.Float(), nullable=True),
        sa.Column("trials", sa.Integer(), nullable=False),
        sa.Column("repair_actions_json", sa.Text(), nullable=False),
        sa.Column("start_slot", sa.Integer(), nullable=False),
        sa.Column("end_slot", sa.Integer(), nullable=False),
        sa.Column("start_at", sa.DateTime(), nullable=False),
        sa.Column("end_at", sa.DateTime(), nullable=False),
        sa.Column("script", sa.Text(), nullable=True),
        sa.Column("slurm_job_id", sa.String(64), nullable=True),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("state_changed_at", sa.DateTime(), nullable=False),
        sa.Column("state_detail", sa.Text(), nullable=False),
    )
    op.create_index("ix_decisions_cluster", "decisions", ["cluster"])
    op.create_index("ix_decisions_user", "decisions", ["user"])
    op.create_table(
        "decision_reservations",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("decision_id", sa.Integer(), sa.ForeignKey("decisions.id"), nullable=False),
        sa.Column("node", sa.String(255), nullable=False),
        sa.Column("start_at", sa.DateTime(), nullable=False),
        sa.Column("end_at", sa.DateTime(), nullable=False),
        sa.Column("gpu", sa.Float(), nullable=False),
        sa.Column("cpu", sa.Float(), nullable=False),
        sa.Column("mem", sa.Float(), nullable=False),
    )
    op.create_index(
        "ix_decision_reservations_decision_id", "decision_reservations", ["decision_id"]
    )
    op.create_table(
        "cluster_locks",
        sa.Column("cluster", sa.String(200), primary_key=True),
    )
    op.create_table(
        "replay_runs",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("created_at", sa.DateTime(), nullable=False),
        sa.Column("user", sa.String(200), nullable=False),
        sa.Column("trace", sa.Text(), nullable=False),
        sa.Column("config_json", sa.Text(), nullable=False),
    )
    op.create_table(
        "replay_results",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.Integer(), sa.ForeignKey("replay_runs.id"), nullable=False),
        sa.Column("policy", sa.String(100), nullable=False),
        sa.Column("metrics_json", sa.Text(), nullable=False),
    )
    op.create_index("ix_replay_results_run_id", "replay_results", ["run_id"])


def downgrade() -> None:
    op.drop_index("ix_replay_results_run_id", "replay_results")
    op.drop_table("replay_results")
    op.drop_table("replay_runs")
    op.drop_table("cluster_locks")
    op.drop_index("ix_decision_reservations_decision_id", "decision_reservations")
    op.drop_table("decision_reservations")
    op.drop_index("ix_decisions_user", "decisions")
    op.drop_index("ix_decisions_cluster", "decisions")
    op.drop_table("decisions")
