"""`executor_config` of each executor, chosen by the sibling `executor` key."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from vectorstep.spec.base import SpecModel

ExecutorName = Literal["gateway", "openclaw", "human", "webhook", "notify", "pipeline"]
EXECUTOR_NAMES: tuple[str, ...] = ("gateway", "openclaw", "human", "webhook", "notify", "pipeline")
ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh"]
HttpMethod = Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]


class _ExecutorConfig(SpecModel):
    # Filled in from the step's own `executor` key so the union below can pick the right model;
    # users never write it.
    executor: str = Field(default="", exclude=True, repr=False)


class GatewayConfig(_ExecutorConfig):
    executor: Literal["gateway"] = Field(default="gateway", exclude=True, repr=False)
    agent: str = Field(min_length=1, description="the agent's folder name under `agents_dir`")
    model: str | None = Field(
        default=None,
        description="the model for this step only. It is not checked at load.",
        json_schema_extra={"doc_default": "the agent's `model`"},
    )
    thinking_level: ThinkingLevel | None = Field(
        default=None,
        description="reasoning effort for this step.",
        json_schema_extra={"doc_default": "the agent's setting"},
    )
    trace_max_chars: int | None = Field(
        default=None,
        ge=100,
        description="this step's trace cap for each tool result",
        json_schema_extra={"doc_default": "`limits.trace_tool_result_max_chars`"},
    )
    session_key: str | None = Field(
        default=None,
        description=(
            "the session key sent to a remote gateway, which refuses one that does not start with "
            "`agent:<agent>:`. Every turn starts fresh (no memory between turns)."
        ),
        json_schema_extra={"doc_default": "`agent:<agent>:<run id>:<step>`"},
    )
    timeout_seconds: float = Field(
        default=1200.0,
        gt=0,
        description=(
            "Time limit of the agent turn. The step's own `timeout_seconds` replaces it, and "
            "`limits.max_run_seconds` caps it. In the `executor_config` of a verifier or grounding "
            "judge it has no effect: the block's own `timeout_seconds` replaces it."
        ),
    )


class OpenClawConfig(_ExecutorConfig):
    executor: Literal["openclaw"] = Field(default="openclaw", exclude=True, repr=False)
    agent: str = Field(min_length=1, description="the gateway's agent id (`agentId`)")
    model: str | None = Field(
        default=None, description="sent as `model`", json_schema_extra={"doc_default": "the agent's own"}
    )
    thinking_level: ThinkingLevel | None = Field(
        default=None, description="sent as `thinking`", json_schema_extra={"doc_default": "the agent's own"}
    )
    session_key: str | None = Field(
        default=None,
        description="sent as `sessionKey`",
        json_schema_extra={"doc_default": "`agent:<agent>:<run id>:<step>`"},
    )
    timeout_seconds: float = Field(
        default=1200.0, gt=0, description="Time limit of the turn. The step's own `timeout_seconds` replaces it."
    )


class HumanConfig(_ExecutorConfig):
    executor: Literal["human"] = Field(default="human", exclude=True, repr=False)
    message: str | None = Field(
        default=None,
        description=(
            "What the person is asked. A template, rendered strictly (an undefined name fails the "
            "step with `template_error`). With neither, `Approve step <name>?`."
        ),
        json_schema_extra={"doc_default": "the rendered `prompt_template`"},
    )  # defaults to the rendered prompt_template
    team: str | None = Field(
        default=None,
        description="the team whose [approval route](#human_approval) is used",
        json_schema_extra={"doc_default": "the run's team"},
    )
    timeout_seconds: float = Field(
        default=3600.0,
        gt=0,
        description=(
            "How long to wait for a decision. When it runs out, the stage decides: in `testing` the "
            "step is approved; in `production` it is rejected and the step **fails** "
            "(`executor_error`: `approval b024d327f938 was not decided within 5s: rejected (stage "
            "production)`), so its `on_failure` applies."
        ),
    )


class WebhookConfig(_ExecutorConfig):
    executor: Literal["webhook"] = Field(default="webhook", exclude=True, repr=False)
    url: str = Field(min_length=1, description="the target. It is a template, rendered strictly.")
    method: HttpMethod = Field(default="POST", description="the HTTP method")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Values are templates, rendered strictly. They override `Content-Type`. An "
            "`Idempotency-Key` header is sent too (unless you set one): the same for the same run, "
            "step and attempt, so a receiver can drop a request sent again when a run is resumed "
            "after a crash."
        ),
    )
    content_type: str = Field(default="application/json", description="the `Content-Type` of the body")
    timeout_seconds: float = Field(
        default=30.0, gt=0, description="the request timeout. The step's own `timeout_seconds` replaces it."
    )


class NotifyConfig(_ExecutorConfig):
    executor: Literal["notify"] = Field(default="notify", exclude=True, repr=False)
    url: str = Field(min_length=1, description="the target. It is a template, rendered strictly.")
    method: HttpMethod = Field(default="POST", description="the HTTP method")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "Values are templates, rendered strictly. An `Idempotency-Key` header is sent too, as for `webhook`."
        ),
    )
    payload: Any = Field(
        default=None, description="The JSON body. Every string inside it, at any depth, is rendered strictly."
    )
    timeout_seconds: float = Field(
        default=30.0, gt=0, description="the request timeout. The step's own `timeout_seconds` replaces it."
    )


class PipelineConfig(_ExecutorConfig):
    executor: Literal["pipeline"] = Field(default="pipeline", exclude=True, repr=False)
    pipeline: str = Field(
        min_length=1,
        description="the child pipeline",
        json_schema_extra={"doc_rule": "the `name` of a pipeline in `pipelines_dir`"},
    )
    # Overrides of the child's context: each string is a template rendered against the parent step's
    # context; scalar fields replace the parent's, `labels` and `metadata` merge key by key.
    context: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Changes to the child's context. Every string in it is a template, rendered strictly "
            "against this step's context. `payload` is accepted as its older name."
        ),
    )

    @model_validator(mode="before")
    @classmethod
    def _payload_is_context(cls, data: Any) -> Any:
        # Files written for the existing VectorStep may call the overrides `payload`.
        if isinstance(data, dict) and "payload" in data:
            if "context" in data:
                raise ValueError("give the child's context once: `context` (or its older name `payload`), not both")
            return {**{key: value for key, value in data.items() if key != "payload"}, "context": data["payload"]}
        return data


ExecutorConfig = Annotated[
    GatewayConfig | OpenClawConfig | HumanConfig | WebhookConfig | NotifyConfig | PipelineConfig,
    Field(discriminator="executor"),
]


class ExecutorBound(SpecModel):
    """A block with `executor` and `executor_config` (a step, a fan-out, a verifier, a judge)."""

    @model_validator(mode="before")
    @classmethod
    def _tag_executor_config(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        executor = data.get("executor", cls.model_fields["executor"].default)
        config = data.get("executor_config")
        if config is None:
            config = {}
        if isinstance(executor, str) and executor in EXECUTOR_NAMES and isinstance(config, dict):
            return {**data, "executor_config": {**config, "executor": executor}}
        return data
