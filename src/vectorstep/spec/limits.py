"""Limits of `vectorstep.yaml`: the agent runtime's (`limits`), runs at once (`concurrency`), `dedup`."""

from __future__ import annotations

from pydantic import Field

from vectorstep.domain.artifacts import DEFAULT_MAX_BYTES, DEFAULT_MAX_PER_STEP
from vectorstep.spec.base import SpecModel


class LimitsSpec(SpecModel):
    max_agent_iterations: int = Field(
        default=20,
        ge=1,
        le=500,
        description=(
            "The most model calls in one agent turn. On the last one the model is offered no tools "
            "and is told to answer. An agent still calling tools at that point fails the attempt "
            "(`runtime_error`). An agent's own `max_iterations` overrides this limit."
        ),
    )
    request_timeout_seconds: float = Field(default=180.0, gt=0, description="Timeout of one LLM request (one attempt).")
    mcp_tool_timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description=(
            "Timeout of one tool call. When it runs out, the model gets an error result `tool "
            "<server>__<tool> timed out after Ns`."
        ),
    )
    llm_retry_attempts: int = Field(
        default=2,
        ge=0,
        le=10,
        description=(
            "Retries of an LLM request on 429, 5xx, a timeout or a broken connection, each recorded "
            "as an `llm_retry` trace event. Then the agent's `model_fallbacks` take over."
        ),
    )
    llm_retry_base_delay_seconds: float = Field(
        default=1.0,
        ge=0,
        description=(
            "First delay of those retries; it doubles each time, with jitter, unless the provider says `Retry-After`."
        ),
    )
    max_concurrent_runs: int = Field(
        default=10,
        ge=1,
        description=(
            "The most agent turns that run at once in the embedded runtime. Further turns wait for a free slot."
        ),
    )
    trace_tool_result_max_chars: int = Field(
        default=3000,
        ge=100,
        description=(
            "How much of each tool result the step's trace keeps. Longer results are cut, with a "
            "marker such as `… [trace copy cut: 9,120 of 12,120 characters omitted after the first "
            "3,000]`. This limit applies only to the trace copy: the model always receives the whole "
            "result. A gateway step can override it with `executor_config.trace_max_chars`."
        ),
    )
    max_run_seconds: float | None = Field(
        default=None,
        gt=0,
        description=(
            "A cap on every agent turn: a step's, a verifier's and a grounding judge's. A turn's time "
            "limit is the smaller of this value and the limit of the request: the step's "
            "`timeout_seconds`, else the gateway's `executor_config.timeout_seconds` (1200 s by "
            "default), or for a verifier or judge its own `timeout_seconds`. A primary turn that runs "
            "out fails the attempt with `timeout` (`agent 'investigator' did not answer within "
            "300s`). A verifier or judge that runs out fails softly."
        ),
    )
    # How deep `executor: pipeline` may nest: a parent, its child, the child's child, …
    max_pipeline_depth: int = Field(
        default=5,
        ge=1,
        le=50,
        description=(
            "How deep [sub-pipelines](#pipeline) may nest: a pipeline, its child, the child's child… "
            "Deeper nesting is a load error."
        ),
    )
    # An answer's `artifacts` (docs/configuration.md#artifacts): one longer than this (UTF-8 bytes) is
    # stored truncated, with a line saying so; beyond the count, the rest are left out with a warning.
    max_artifact_bytes: int = Field(
        default=DEFAULT_MAX_BYTES,
        ge=1024,
        le=67_108_864,
        description=(
            "The most bytes (UTF-8) of one [artifact](#artifacts) that are stored. A longer one is "
            "stored truncated, with a line saying so, and the step gets a warning."
        ),
        json_schema_extra={"doc_default": "`1048576` (1 MiB)"},
    )
    max_artifacts_per_step: int = Field(
        default=DEFAULT_MAX_PER_STEP,
        ge=0,
        le=1000,
        description=(
            "The most artifacts stored of one answer, in the order written; the rest are left out, "
            "each with a warning. `0` stores none."
        ),
    )


class ServiceDedupSpec(SpecModel):
    enabled: bool = Field(default=True, description="turn deduplication on or off")
    window_seconds: int = Field(default=300, ge=0, description="how long after a run starts a duplicate is suppressed")


class ConcurrencySpec(SpecModel):
    max_runs: int = Field(
        default=10,
        ge=1,
        description=(
            "the most runs one process drives at once. On SQLite, triggers beyond it are refused as "
            "`overloaded` (HTTP 429); on PostgreSQL they wait in the job queue for a worker with room "
            "(`vectorstep worker --concurrency N` overrides it for one worker)."
        ),
    )  # runs one process drives at once
    max_queued: int = Field(
        default=1000,
        ge=1,
        description=(
            "PostgreSQL: the most runs waiting in the queue for a worker; triggers beyond it are "
            "refused as `overloaded` (HTTP 429, `Retry-After: 5`). Counted once a second."
        ),
    )  # PostgreSQL: runs waiting for a worker before webhooks get 429
    # On SIGTERM, runs in flight get this long to finish; then they are interrupted (SQLite) or left
    # for another worker to take up (PostgreSQL).
    shutdown_grace_seconds: float = Field(
        default=10,
        ge=0,
        le=3600,
        description=(
            "on `SIGTERM`/`SIGINT`, how long runs in flight get to finish; then, on SQLite, they are "
            "marked `interrupted`, and on PostgreSQL they are left for another worker to take up "
            "after their last finished step"
        ),
    )
