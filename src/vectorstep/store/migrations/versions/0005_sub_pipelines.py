"""Sub-pipelines: the parent step a child run belongs to, and children found by their parent.

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("pipeline_runs", sa.Column("parent_step", sa.String(200)))
    op.create_index("ix_pipeline_runs_parent_run_id", "pipeline_runs", ["parent_run_id"])


def downgrade() -> None:
    op.drop_index("ix_pipeline_runs_parent_run_id", "pipeline_runs")
    with op.batch_alter_table("pipeline_runs") as batch:
        batch.drop_column("parent_step")
