"""Calibration counters: per bucket and cell, labelled steps and the sum of their labels, kept as marks land.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from vectorstep.store.calibration_cells import rebuild

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("pipeline_steps", sa.Column("calibration_bucket", sa.String(64)))
    op.add_column("pipeline_steps", sa.Column("calibration_cell", sa.Integer))
    op.add_column("pipeline_steps", sa.Column("calibration_label", sa.Float))
    op.create_table(
        "calibration_cells",
        sa.Column("bucket_key", sa.String(64), nullable=False),
        sa.Column("cell", sa.Integer, nullable=False),
        sa.Column("n", sa.Integer, nullable=False),
        sa.Column("total", sa.Float, nullable=False),
        sa.PrimaryKeyConstraint("bucket_key", "cell", name="pk_calibration_cells"),
    )
    rebuild(op.get_bind())  # the history already marked is counted once, here


def downgrade() -> None:
    op.drop_table("calibration_cells")
    with op.batch_alter_table("pipeline_steps") as batch:
        batch.drop_column("calibration_label")
        batch.drop_column("calibration_cell")
        batch.drop_column("calibration_bucket")
