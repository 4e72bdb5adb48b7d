"""Insights: per-step tool call counts, figures per hour and per day, and the hours to recompute.

Every hour that already holds a run, a step or an approval is marked, so the history is summed by
`db upgrade` (or, a few dozen hours at a time, by the insights pages). Steps stored before this
revision have no tool call rows: their traces are not read again here, so tool figures begin with it.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

from vectorstep.store.types import UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

DIMENSIONS = ["pipeline", "team", "step", "agent", "model"]
FIGURES: dict[str, list[tuple[str, Any]]] = {
    "insight_runs": [
        ("runs", sa.Integer()),
        ("input_tokens", sa.BigInteger()),
        ("output_tokens", sa.BigInteger()),
        ("cost", sa.Float()),
        ("max_tokens", sa.BigInteger()),
        ("max_cost", sa.Float()),
    ],
    "insight_steps": [
        (name, sa.Float() if name in ("trust_sum", "cost") else sa.BigInteger() if "tokens" in name else sa.Integer())
        for name in [
            "steps",
            "trust_sum",
            "trusted",
            "escalated",
            "graded",
            "divergent",
            "verified",
            "overridden",
            "checked",
            "check_failures",
            "input_tokens",
            "output_tokens",
            "cost",
        ]
    ],
    "insight_scatter": [("steps", sa.Integer())],
    "insight_tools": [("calls", sa.Integer()), ("errors", sa.Integer()), ("denied", sa.Integer())],
    "insight_approvals": [
        ("asked", sa.Integer()),
        ("decided", sa.Integer()),
        ("timed_out", sa.Integer()),
        ("latency_sum_s", sa.Float()),
        ("latency_max_s", sa.Float()),
    ],
}
KEYS: dict[str, list[tuple[str, Any]]] = {
    "insight_runs": [("pipeline", sa.String(200)), ("team", sa.String(200)), ("status", sa.String(200))],
    "insight_steps": [(name, sa.String(200)) for name in DIMENSIONS],
    "insight_scatter": [
        *[(name, sa.String(200)) for name in DIMENSIONS],
        ("s_cell", sa.Integer()),
        ("g_cell", sa.Integer()),
    ],
    "insight_tools": [*[(name, sa.String(200)) for name in DIMENSIONS], ("tool", sa.String(200))],
    "insight_approvals": [("pipeline", sa.String(200)), ("team", sa.String(200)), ("step", sa.String(200))],
}
HOURS_OF = {  # (table, column): every hour that holds a row
    "pipeline_runs": "started_at",
    "pipeline_steps": "started_at",
    "approvals": "created_at",
}


def upgrade() -> None:
    op.create_index("ix_pipeline_steps_started_at", "pipeline_steps", ["started_at"])
    op.create_index("ix_approvals_created_at", "approvals", ["created_at"])
    op.create_table(
        "step_tool_calls",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("step_name", sa.String(200), nullable=False),
        sa.Column("tool_name", sa.String(200), nullable=False),
        sa.Column("calls", sa.Integer, nullable=False),
        sa.Column("errors", sa.Integer, nullable=False),
        sa.Column("denied", sa.Integer, nullable=False),
        sa.Column("started_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_step_tool_calls"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["pipeline_runs.id"], name="fk_step_tool_calls_run_id_pipeline_runs", ondelete="CASCADE"
        ),
    )
    op.create_index("ix_step_tool_calls_started_at_tool_name", "step_tool_calls", ["started_at", "tool_name"])
    op.create_index("ix_step_tool_calls_run_id", "step_tool_calls", ["run_id"])
    op.create_table(
        "insight_dirty_hours",
        sa.Column("hour", sa.String(13), nullable=False),
        sa.PrimaryKeyConstraint("hour", name="pk_insight_dirty_hours"),
    )
    for table, figures in FIGURES.items():
        keys = [("grain", sa.String(1)), ("bucket", sa.String(13)), *KEYS[table]]
        op.create_table(
            table,
            *[sa.Column(name, kind, nullable=False) for name, kind in keys],
            *[sa.Column(name, kind, nullable=False) for name, kind in figures],
            sa.PrimaryKeyConstraint(*[name for name, _ in keys], name=f"pk_{table}"),
        )
    postgres = op.get_bind().dialect.name == "postgresql"
    for table, column in HOURS_OF.items():
        hour = f"to_char(timezone('UTC', {column}), 'YYYY-MM-DD HH24')" if postgres else f"substr({column}, 1, 13)"
        op.execute(
            f"INSERT INTO insight_dirty_hours (hour) SELECT DISTINCT {hour} FROM {table} "  # noqa: S608 - names from this file
            "WHERE true ON CONFLICT (hour) DO NOTHING"
        )


def downgrade() -> None:
    for table in FIGURES:
        op.drop_table(table)
    op.drop_table("insight_dirty_hours")
    op.drop_index("ix_step_tool_calls_run_id", table_name="step_tool_calls")
    op.drop_index("ix_step_tool_calls_started_at_tool_name", table_name="step_tool_calls")
    op.drop_table("step_tool_calls")
    op.drop_index("ix_approvals_created_at", table_name="approvals")
    op.drop_index("ix_pipeline_steps_started_at", table_name="pipeline_steps")
