"""Version history (each step's prompt templates, each agent's versions) and the artifacts of answers.

The history already recorded is entered once, here: every prompt and agent version a stored step ran
with, first and last seen as its steps say, without its text — steps before this revision did not
keep it — so pages show it as "text not recorded". A version seen again later gains its text.

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from vectorstep.store.types import StorableText, UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

PROMPTS_SEEN = """
INSERT INTO step_prompt_versions (pipeline_name, step_name, prompt_hash, template, first_seen, last_seen)
SELECT runs.pipeline_name, steps.step_name, steps.prompt_hash, NULL, MIN(steps.started_at), MAX(steps.finished_at)
FROM pipeline_steps AS steps JOIN pipeline_runs AS runs ON runs.id = steps.run_id
WHERE steps.prompt_hash IS NOT NULL AND steps.prompt IS NOT NULL
GROUP BY runs.pipeline_name, steps.step_name, steps.prompt_hash
"""

AGENTS_SEEN = """
INSERT INTO agent_versions (agent_name, agent_version, definition, first_seen, last_seen)
SELECT steps.agent, steps.agent_version, NULL, MIN(steps.started_at), MAX(steps.finished_at)
FROM pipeline_steps AS steps
WHERE steps.agent IS NOT NULL AND steps.agent_version IS NOT NULL AND steps.agent_version <> ''
GROUP BY steps.agent, steps.agent_version
"""


def upgrade() -> None:
    op.create_table(
        "step_prompt_versions",
        sa.Column("pipeline_name", sa.String(200), nullable=False),
        sa.Column("step_name", sa.String(200), nullable=False),
        sa.Column("prompt_hash", sa.String(64), nullable=False),
        sa.Column("template", StorableText),
        sa.Column("first_seen", UTCDateTime, nullable=False),
        sa.Column("last_seen", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("pipeline_name", "step_name", "prompt_hash", name="pk_step_prompt_versions"),
    )
    op.create_table(
        "agent_versions",
        sa.Column("agent_name", sa.String(200), nullable=False),
        sa.Column("agent_version", sa.String(32), nullable=False),
        sa.Column("definition", StorableText),
        sa.Column("first_seen", UTCDateTime, nullable=False),
        sa.Column("last_seen", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("agent_name", "agent_version", name="pk_agent_versions"),
    )
    op.create_table(
        "step_artifacts",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(64), nullable=False),
        sa.Column("step_name", sa.String(200), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("truncated", sa.Boolean, nullable=False),
        sa.Column("content", StorableText, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_step_artifacts"),
        sa.ForeignKeyConstraint(
            ["run_id"], ["pipeline_runs.id"], name="fk_step_artifacts_run_id_pipeline_runs", ondelete="CASCADE"
        ),
        sa.UniqueConstraint("run_id", "step_name", "name", name="uq_step_artifacts_run_id_step_name_name"),
    )
    op.create_index("ix_pipeline_steps_agent_agent_version", "pipeline_steps", ["agent", "agent_version"])
    op.execute(PROMPTS_SEEN)
    op.execute(AGENTS_SEEN)


def downgrade() -> None:
    op.drop_index("ix_pipeline_steps_agent_agent_version", table_name="pipeline_steps")
    op.drop_table("step_artifacts")
    op.drop_table("agent_versions")
    op.drop_table("step_prompt_versions")
