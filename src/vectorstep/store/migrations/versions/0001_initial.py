"""The first schema: runs, steps and the run log.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from vectorstep.store.types import JSONDocument, UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "pipeline_runs",
        sa.Column("id", sa.String(64), primary_key=True),
        sa.Column("pipeline_name", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("stage", sa.String(20), nullable=False),
        sa.Column("source", sa.String(40), nullable=False),
        sa.Column("team", sa.String(100)),
        sa.Column("fingerprint", sa.String(200)),
        sa.Column("context", JSONDocument, nullable=False),
        sa.Column("error", sa.Text),
        sa.Column("parent_run_id", sa.String(64)),
        sa.Column("input_tokens", sa.Integer, nullable=False),
        sa.Column("output_tokens", sa.Integer, nullable=False),
        sa.Column("cost", sa.Float),
        sa.Column("started_at", UTCDateTime, nullable=False),
        sa.Column("finished_at", UTCDateTime),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_pipeline_runs"),
    )
    op.create_index("ix_pipeline_runs_started_at", "pipeline_runs", ["started_at"])
    op.create_index("ix_pipeline_runs_status_started_at", "pipeline_runs", ["status", "started_at"])
    op.create_index("ix_pipeline_runs_pipeline_name_started_at", "pipeline_runs", ["pipeline_name", "started_at"])
    op.create_table(
        "pipeline_steps",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("step_index", sa.Integer, nullable=False),
        sa.Column("step_name", sa.String(200), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("executor", sa.String(40), nullable=False),
        sa.Column("agent", sa.String(200)),
        sa.Column("model", sa.String(200)),
        sa.Column("provider", sa.String(100)),
        sa.Column("agent_version", sa.String(32)),
        sa.Column("prompt", sa.Text),
        sa.Column("prompt_hash", sa.String(64)),
        sa.Column("raw_output", sa.Text),
        sa.Column("parsed_output", JSONDocument),
        sa.Column("agent_trace", JSONDocument),
        sa.Column("primary_confidence", sa.Float),
        sa.Column("verifier_confidence", sa.Float),
        sa.Column("effective_confidence", sa.Float),
        sa.Column("combined_trust", sa.Float),
        sa.Column("grounding_score", sa.Float),
        sa.Column("deterministic_passed", sa.Boolean),
        sa.Column("gate_outcome", sa.String(20)),
        sa.Column("trust_report", JSONDocument),
        sa.Column("verifier_mode", sa.String(20)),
        sa.Column("verifier_agent", sa.String(200)),
        sa.Column("verifier_model", sa.String(200)),
        sa.Column("verifier_provider", sa.String(100)),
        sa.Column("verifier_prompt", sa.Text),
        sa.Column("grounding_model", sa.String(200)),
        sa.Column("grounding_provider", sa.String(100)),
        sa.Column("input_tokens", sa.Integer, nullable=False),
        sa.Column("output_tokens", sa.Integer, nullable=False),
        sa.Column("verifier_input_tokens", sa.Integer),
        sa.Column("verifier_output_tokens", sa.Integer),
        sa.Column("grounding_input_tokens", sa.Integer),
        sa.Column("grounding_output_tokens", sa.Integer),
        sa.Column("cost", sa.Float),
        sa.Column("duration_ms", sa.Float, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("iterations", sa.Integer, nullable=False),
        sa.Column("warnings", JSONDocument),
        sa.Column("error_kind", sa.String(40)),
        sa.Column("error", sa.Text),
        sa.Column("started_at", UTCDateTime, nullable=False),
        sa.Column("finished_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_pipeline_steps"),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["pipeline_runs.id"],
            name="fk_pipeline_steps_run_id_pipeline_runs",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint("run_id", "step_name", name="uq_pipeline_steps_run_id_step_name"),
    )
    op.create_index(
        "ix_pipeline_steps_step_name_agent_version_prompt_hash",
        "pipeline_steps",
        ["step_name", "agent_version", "prompt_hash"],
    )
    op.create_table(
        "pipeline_run_events",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("ts", UTCDateTime, nullable=False),
        sa.Column("level", sa.String(10), nullable=False),
        sa.Column("event", sa.String(40), nullable=False),
        sa.Column("step_name", sa.String(200)),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("data", JSONDocument),
        sa.PrimaryKeyConstraint("id", name="pk_pipeline_run_events"),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["pipeline_runs.id"],
            name="fk_pipeline_run_events_run_id_pipeline_runs",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_pipeline_run_events_run_id_id", "pipeline_run_events", ["run_id", "id"])


def downgrade() -> None:
    op.drop_table("pipeline_run_events")
    op.drop_table("pipeline_steps")
    op.drop_table("pipeline_runs")
