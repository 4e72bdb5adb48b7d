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
    agent: str = Field(min_length=1)
    model: str | None = None
    thinking_level: ThinkingLevel | None = None
    trace_max_chars: int | None = Field(default=None, ge=100)
    session_key: str | None = None
    timeout_seconds: float = Field(default=1200.0, gt=0)


class OpenClawConfig(_ExecutorConfig):
    executor: Literal["openclaw"] = Field(default="openclaw", exclude=True, repr=False)
    agent: str = Field(min_length=1)
    model: str | None = None
    thinking_level: ThinkingLevel | None = None
    session_key: str | None = None
    timeout_seconds: float = Field(default=1200.0, gt=0)


class HumanConfig(_ExecutorConfig):
    executor: Literal["human"] = Field(default="human", exclude=True, repr=False)
    message: str | None = None  # defaults to the rendered prompt_template
    team: str | None = None
    timeout_seconds: float = Field(default=3600.0, gt=0)


class WebhookConfig(_ExecutorConfig):
    executor: Literal["webhook"] = Field(default="webhook", exclude=True, repr=False)
    url: str = Field(min_length=1)
    method: HttpMethod = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    content_type: str = "application/json"
    timeout_seconds: float = Field(default=30.0, gt=0)


class NotifyConfig(_ExecutorConfig):
    executor: Literal["notify"] = Field(default="notify", exclude=True, repr=False)
    url: str = Field(min_length=1)
    method: HttpMethod = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    payload: Any = None
    timeout_seconds: float = Field(default=30.0, gt=0)


class PipelineConfig(_ExecutorConfig):
    executor: Literal["pipeline"] = Field(default="pipeline", exclude=True, repr=False)
    pipeline: str = Field(min_length=1)
    # Overrides of the child's context: each string is a template rendered against the parent step's
    # context; scalar fields replace the parent's, `labels` and `metadata` merge key by key.
    context: dict[str, Any] = Field(default_factory=dict)

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
