"""Human approvals, and what a waiting run needs to resume: its pipeline and a lease.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from vectorstep.store.types import JSONDocument, UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("pipeline_runs") as batch:
        batch.add_column(sa.Column("spec", JSONDocument))
        batch.add_column(sa.Column("lease_owner", sa.String(200)))
        batch.add_column(sa.Column("lease_expires_at", UTCDateTime))
    op.create_table(
        "approvals",
        sa.Column("id", sa.String(64), nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("pipeline_name", sa.String(200), nullable=False),
        sa.Column("step_name", sa.String(200), nullable=False),
        sa.Column("check_name", sa.String(200), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("team", sa.String(100)),
        sa.Column("stage", sa.String(20), nullable=False),
        sa.Column("channel", sa.String(20), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=False),
        sa.Column("decided_at", UTCDateTime),
        sa.Column("decided_by", sa.String(200)),
        sa.Column("checkpoint", JSONDocument),
        sa.PrimaryKeyConstraint("id", name="pk_approvals"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["pipeline_runs.id"], name="fk_approvals_run_id_pipeline_runs", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("run_id", "step_name", "check_name", name="uq_approvals_run_id_step_name_check_name"),
    )
    op.create_index("ix_approvals_status_created_at", "approvals", ["status", "created_at"])


def downgrade() -> None:
    op.drop_table("approvals")
    with op.batch_alter_table("pipeline_runs") as batch:
        batch.drop_column("lease_expires_at")
        batch.drop_column("lease_owner")
        batch.drop_column("spec")
