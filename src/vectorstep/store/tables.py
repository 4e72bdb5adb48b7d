"""The tables (SYSTEM.md §14). Column names are the spec's names: users query them directly."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    UniqueConstraint,
)

from vectorstep.store.types import JSONDocument, NameString, StorableString, StorableText, UTCDateTime

metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
    }
)

pipeline_runs = Table(
    "pipeline_runs",
    metadata,
    Column("id", NameString(64), primary_key=True),
    Column("pipeline_name", NameString(200), nullable=False),
    Column("status", NameString(20), nullable=False),
    Column("stage", NameString(20), nullable=False),
    Column("source", NameString(40), nullable=False),
    Column("team", StorableString(100)),
    Column("fingerprint", StorableString(200)),
    Column("context", JSONDocument, nullable=False),
    Column("error", StorableText),
    Column("parent_run_id", NameString(64)),
    Column("parent_step", NameString(200)),  # the step of the parent run that started this one
    Column("input_tokens", Integer, nullable=False, default=0),
    Column("output_tokens", Integer, nullable=False, default=0),
    Column("cost", Float),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("spec", JSONDocument),  # the pipeline as it ran: a resumed run continues the same pipeline
    Column("lease_owner", NameString(200)),  # the process driving the run (a waiting run stays leased)
    Column("lease_expires_at", UTCDateTime),
    Index(None, "started_at"),
    Index(None, "status", "started_at"),
    Index(None, "pipeline_name", "started_at"),
    Index(None, "parent_run_id"),
)

pipeline_steps = Table(
    "pipeline_steps",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", NameString(64), ForeignKey("pipeline_runs.id", ondelete="CASCADE"), nullable=False),
    Column("step_index", Integer, nullable=False),
    Column("step_name", NameString(200), nullable=False),
    Column("status", NameString(20), nullable=False),
    Column("executor", NameString(40), nullable=False),
    Column("agent", NameString(200)),
    Column("model", NameString(200)),
    Column("provider", NameString(100)),
    Column("agent_version", NameString(32)),
    Column("prompt", StorableText),
    Column("prompt_hash", NameString(64)),
    Column("raw_output", StorableText),
    Column("parsed_output", JSONDocument),
    Column("agent_trace", JSONDocument),
    Column("primary_confidence", Float),
    Column("verifier_confidence", Float),
    Column("effective_confidence", Float),
    Column("combined_trust", Float),
    Column("grounding_score", Float),
    Column("deterministic_passed", Boolean),
    Column("gate_outcome", NameString(20)),
    Column("trust_report", JSONDocument),
    Column("verifier_mode", NameString(20)),
    Column("verifier_agent", NameString(200)),
    Column("verifier_model", NameString(200)),
    Column("verifier_provider", NameString(100)),
    Column("verifier_prompt", StorableText),
    Column("grounding_model", NameString(200)),
    Column("grounding_provider", NameString(100)),
    Column("input_tokens", Integer, nullable=False, default=0),
    Column("output_tokens", Integer, nullable=False, default=0),
    Column("verifier_input_tokens", Integer),
    Column("verifier_output_tokens", Integer),
    Column("grounding_input_tokens", Integer),
    Column("grounding_output_tokens", Integer),
    Column("cost", Float),
    Column("duration_ms", Float, nullable=False),
    Column("attempts", Integer, nullable=False, default=0),
    Column("iterations", Integer, nullable=False, default=0),
    Column("warnings", JSONDocument),
    Column("error_kind", NameString(40)),
    Column("error", StorableText),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime, nullable=False),
    # Calibration: the counters this step is counted in, and the label it is counted with (null: none).
    Column("calibration_bucket", NameString(64)),
    Column("calibration_cell", Integer),
    Column("calibration_label", Float),
    UniqueConstraint("run_id", "step_name"),
    Index(None, "step_name", "agent_version", "prompt_hash"),
    Index(None, "agent", "agent_version"),  # an agent's version history
    Index(None, "started_at"),  # insights: steps over a period
)

# Insights (docs/insights.md): per step, the calls of each tool its agent made, written with the step so
# tool figures are a GROUP BY here rather than a read of every trace.
step_tool_calls = Table(
    "step_tool_calls",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", NameString(64), ForeignKey("pipeline_runs.id", ondelete="CASCADE"), nullable=False),
    Column("step_name", NameString(200), nullable=False),
    Column("tool_name", StorableString(200), nullable=False),  # an agent may call a tool by any name
    Column("calls", Integer, nullable=False),
    Column("errors", Integer, nullable=False),  # results marked as errors (denials included)
    Column("denied", Integer, nullable=False),  # refused by the tool policy
    Column("started_at", UTCDateTime, nullable=False),  # the step's
    Index(None, "started_at", "tool_name"),
    Index(None, "run_id"),
)

# The hours ('YYYY-MM-DD HH', UTC) whose insight rows are out of date: every write that changes a run,
# a step or an approval marks its hour (one insert that does nothing when the hour is already marked),
# and the insights reader recomputes a marked hour from the rows before it reads.
insight_dirty_hours = Table("insight_dirty_hours", metadata, Column("hour", NameString(13), primary_key=True))


def _insight_table(name: str, keys: list[str], *figures: Column[Any]) -> Table:
    """Figures per time bucket ('h' rows per hour, 'd' rows per day, summed from the hours) and per key."""
    return Table(
        name,
        metadata,
        Column("grain", NameString(1), primary_key=True),
        Column("bucket", NameString(13), primary_key=True),
        # "" for none. Storable: the name a page asks for is compared as the stored names were written
        # (a NUL in a URL would otherwise be an error on PostgreSQL, not an empty page).
        *[Column(key, StorableString(200), primary_key=True) for key in keys],
        *figures,
    )


_DIMENSIONS = ["pipeline", "team", "step", "agent", "model"]
insight_runs = _insight_table(
    "insight_runs",
    ["pipeline", "team", "status"],
    Column("runs", Integer, nullable=False),
    Column("input_tokens", BigInteger, nullable=False),
    Column("output_tokens", BigInteger, nullable=False),
    Column("cost", Float, nullable=False),
    Column("max_tokens", BigInteger, nullable=False),  # of one run
    Column("max_cost", Float, nullable=False),
)
insight_steps = _insight_table(
    "insight_steps",
    _DIMENSIONS,
    Column("steps", Integer, nullable=False),
    Column("trust_sum", Float, nullable=False),
    Column("trusted", Integer, nullable=False),  # steps with a combined trust
    Column("escalated", Integer, nullable=False),
    Column("graded", Integer, nullable=False),  # steps with both S and G
    Column("divergent", Integer, nullable=False),  # ... whose S and G are far apart
    Column("verified", Integer, nullable=False),
    Column("overridden", Integer, nullable=False),  # the verifier lowered the confidence
    Column("checked", Integer, nullable=False),
    Column("check_failures", Integer, nullable=False),
    Column("input_tokens", BigInteger, nullable=False),
    Column("output_tokens", BigInteger, nullable=False),
    Column("cost", Float, nullable=False),
)
insight_scatter = _insight_table(
    "insight_scatter",
    _DIMENSIONS,
    Column("s_cell", Integer, primary_key=True),  # tenths: 0 is 0.0–0.1, 9 is 0.9–1.0
    Column("g_cell", Integer, primary_key=True),
    Column("steps", Integer, nullable=False),
)
insight_tools = _insight_table(
    "insight_tools",
    [*_DIMENSIONS, "tool"],
    Column("calls", Integer, nullable=False),
    Column("errors", Integer, nullable=False),
    Column("denied", Integer, nullable=False),
)
insight_approvals = _insight_table(
    "insight_approvals",
    ["pipeline", "team", "step"],
    Column("asked", Integer, nullable=False),
    Column("decided", Integer, nullable=False),  # by a person
    Column("timed_out", Integer, nullable=False),  # decided by the clock
    Column("latency_sum_s", Float, nullable=False),  # of the decisions people made
    Column("latency_max_s", Float, nullable=False),
)

# Per calibration bucket and cell of 0.01 of predicted trust: how many labelled production steps, and
# the sum of their labels. Kept up to date when a step or a mark lands, so the gate reads a few rows.
calibration_cells = Table(
    "calibration_cells",
    metadata,
    Column("bucket_key", NameString(64), primary_key=True),
    Column("cell", Integer, primary_key=True),
    Column("n", Integer, nullable=False),
    Column("total", Float, nullable=False),
)

pipeline_run_events = Table(
    "pipeline_run_events",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", NameString(64), ForeignKey("pipeline_runs.id", ondelete="CASCADE"), nullable=False),
    Column("ts", UTCDateTime, nullable=False),
    Column("level", NameString(10), nullable=False),
    Column("event", NameString(40), nullable=False),
    Column("step_name", NameString(200)),
    Column("message", StorableText, nullable=False),
    Column("data", JSONDocument),
    Index(None, "run_id", "id"),
)

approvals = Table(
    "approvals",
    metadata,
    Column("id", NameString(64), primary_key=True),
    Column("run_id", NameString(64), ForeignKey("pipeline_runs.id", ondelete="CASCADE"), nullable=False),
    Column("pipeline_name", NameString(200), nullable=False),
    Column("step_name", NameString(200), nullable=False),
    Column("check_name", NameString(200), nullable=False),  # "" for `executor: human`
    Column("message", StorableText, nullable=False),
    Column("team", StorableString(100)),
    Column("stage", NameString(20), nullable=False),
    Column("channel", NameString(20), nullable=False),
    Column("status", NameString(20), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("decided_at", UTCDateTime),
    Column("decided_by", NameString(200)),
    Column("checkpoint", JSONDocument),
    UniqueConstraint("run_id", "step_name", "check_name"),
    Index(None, "status", "created_at"),
    Index(None, "created_at"),  # insights: approvals asked in an hour
)

# One row per (pipeline, fingerprint): its primary key is what makes dedup hold under concurrency.
run_dedup = Table(
    "run_dedup",
    metadata,
    Column("dedup_key", StorableString(500), primary_key=True),
    Column("run_id", NameString(64), nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
)

run_feedback = Table(
    "run_feedback",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", NameString(64), ForeignKey("pipeline_runs.id", ondelete="CASCADE"), nullable=False),
    Column("label", NameString(20), nullable=False),
    Column("comment", StorableText),
    Column("marked_by", NameString(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index(None, "run_id"),
)

step_feedback = Table(
    "step_feedback",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", NameString(64), ForeignKey("pipeline_runs.id", ondelete="CASCADE"), nullable=False),
    Column("step_name", NameString(200), nullable=False),
    Column("label", NameString(20), nullable=False),
    Column("comment", StorableText),
    Column("marked_by", NameString(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index(None, "run_id", "step_name"),
)

# UI sign-ins: the cookie names a row here, so signing out ends a session in every process.
ui_sessions = Table(
    "ui_sessions",
    metadata,
    Column("id", NameString(64), primary_key=True),
    Column("principal", NameString(200), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=False),
    Column("ended_at", UTCDateTime),
    Index(None, "expires_at"),
)

# Version history (docs/service.md#version-history): each prompt template a step ran with, and each
# agent version, once, with its text (null: it ran before texts were kept) and when it was first and
# last seen. The runs that used one are found through `pipeline_steps`.
step_prompt_versions = Table(
    "step_prompt_versions",
    metadata,
    Column("pipeline_name", NameString(200), primary_key=True),
    Column("step_name", NameString(200), primary_key=True),
    Column("prompt_hash", NameString(64), primary_key=True),
    Column("template", StorableText),
    Column("first_seen", UTCDateTime, nullable=False),
    Column("last_seen", UTCDateTime, nullable=False),
)

agent_versions = Table(
    "agent_versions",
    metadata,
    Column("agent_name", NameString(200), primary_key=True),
    Column("agent_version", NameString(32), primary_key=True),
    Column("definition", StorableText),  # the settings as hashed (indented JSON), then the instructions
    Column("first_seen", UTCDateTime, nullable=False),
    Column("last_seen", UTCDateTime, nullable=False),
)

# An answer's `artifacts`, beside its step (the step's `parsed_output` refers to them by name).
step_artifacts = Table(
    "step_artifacts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("run_id", NameString(64), ForeignKey("pipeline_runs.id", ondelete="CASCADE"), nullable=False),
    Column("step_name", NameString(200), nullable=False),
    Column("name", NameString(100), nullable=False),
    Column("size", Integer, nullable=False),  # bytes of the text the agent wrote
    Column("truncated", Boolean, nullable=False),
    Column("content", StorableText, nullable=False),  # as served: truncated, with its marker line, when `truncated`
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("run_id", "step_name", "name"),
)
