"""Intake and marking: dedup of events, and people's marks on runs and steps.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from vectorstep.store.types import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "run_dedup",
        sa.Column("dedup_key", sa.String(500), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("started_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("dedup_key", name="pk_run_dedup"),
    )
    for table, extra in (
        ("run_feedback", []),
        ("step_feedback", [sa.Column("step_name", sa.String(200), nullable=False)]),
    ):
        op.create_table(
            table,
            sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
            sa.Column("run_id", sa.String(64), nullable=False),
            *extra,
            sa.Column("label", sa.String(20), nullable=False),
            sa.Column("comment", sa.Text),
            sa.Column("marked_by", sa.String(200), nullable=False),
            sa.Column("created_at", UTCDateTime, nullable=False),
            sa.PrimaryKeyConstraint("id", name=f"pk_{table}"),
            sa.ForeignKeyConstraint(
                ["run_id"], ["pipeline_runs.id"], name=f"fk_{table}_run_id_pipeline_runs", ondelete="CASCADE"
            ),
        )
    op.create_index("ix_run_feedback_run_id", "run_feedback", ["run_id"])
    op.create_index("ix_step_feedback_run_id_step_name", "step_feedback", ["run_id", "step_name"])


def downgrade() -> None:
    op.drop_table("step_feedback")
    op.drop_table("run_feedback")
    op.drop_table("run_dedup")
