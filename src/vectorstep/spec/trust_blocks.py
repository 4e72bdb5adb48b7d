"""The trust blocks a step may declare: `verifier`, `grounding`, `deterministic_checks`, `calibration`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from vectorstep.spec.base import SpecModel
from vectorstep.spec.executor_config import ExecutorBound, ExecutorConfig, HttpMethod

Score = Annotated[float, Field(ge=0.0, le=1.0)]
# Second opinions and judges are agents: only agent executors can give one.
AgentExecutorName = Literal["gateway", "openclaw"]

_VERIFIER_MODE_SYNONYMS = {"reviewer": "critic", "challenger": "independent"}


class VerifierTriggerSpec(SpecModel):
    """When the verifier fires: `always`, or when `confidence_above < S < confidence_below`."""

    always: bool = False
    confidence_below: Score = 1.0
    confidence_above: Score = 0.0

    @model_validator(mode="after")
    def _a_band(self) -> VerifierTriggerSpec:
        if not self.always and self.confidence_above >= self.confidence_below:
            raise ValueError(
                f"confidence_above ({self.confidence_above:g}) must be below confidence_below "
                f"({self.confidence_below:g}), or the verifier never fires"
            )
        return self


class VerifierSpec(ExecutorBound):
    executor: AgentExecutorName = "gateway"
    executor_config: ExecutorConfig
    mode: Literal["critic", "independent"] = "critic"
    combination_strategy: Literal["minimum", "veto"] = "minimum"
    veto_floor: Score = 0.60
    trigger: VerifierTriggerSpec = Field(default_factory=VerifierTriggerSpec)
    max_trace_chars: int = Field(default=1500, ge=100)
    timeout_seconds: float = Field(default=120.0, gt=0)

    @field_validator("mode", mode="before")
    @classmethod
    def _accept_synonyms(cls, value: Any) -> Any:
        return _VERIFIER_MODE_SYNONYMS.get(value, value) if isinstance(value, str) else value


class GroundingSpec(ExecutorBound):
    agent: str = Field(default="grounding-judge", min_length=1)
    # `local`: no judge; G comes from the model-free anchor check of the answer's own statements.
    executor: Literal["gateway", "openclaw", "local"] = "gateway"
    executor_config: ExecutorConfig | None = None
    timeout_seconds: float = Field(default=120.0, gt=0)
    max_trace_chars: int = Field(default=1500, ge=100)
    enforce: bool = False
    evidence_windows: bool = True

    @model_validator(mode="before")
    @classmethod
    def _judge_agent_into_config(cls, data: Any) -> Any:
        # `grounding.agent` is the judge; the executor's own config takes it unless set there.
        if not isinstance(data, dict):
            return data
        if data.get("executor") == "local":
            if data.get("executor_config"):
                raise ValueError("`executor: local` calls no agent, so `executor_config` has nothing to configure")
            return {**data, "executor_config": None}
        config = data.get("executor_config") or {}
        if isinstance(config, dict) and "agent" not in config:
            config = {**config, "agent": data.get("agent", "grounding-judge")}
        return {**data, "executor_config": config}


class ShellCheckSpec(SpecModel):
    type: Literal["shell"]
    name: str = Field(min_length=1)
    run: str | None = None
    argv: list[str] | None = None
    expect: str | None = None
    timeout_seconds: float = Field(default=30.0, gt=0)

    @model_validator(mode="after")
    def _run_or_argv(self) -> ShellCheckSpec:
        if (self.run is None) == (self.argv is None):
            raise ValueError("a shell check needs exactly one of `run` (a shell command) or `argv` (a list)")
        if self.argv is not None and not self.argv:
            raise ValueError("`argv` must name a program")
        return self


class WebhookCheckSpec(SpecModel):
    type: Literal["webhook"]
    name: str = Field(min_length=1)
    url: str = Field(min_length=1)
    method: HttpMethod = "GET"
    headers: dict[str, str] = Field(default_factory=dict)
    payload: Any = None
    expect: str = "response.status_code < 400"
    timeout_seconds: float = Field(default=30.0, gt=0)


class HumanCheckSpec(SpecModel):
    type: Literal["human"]
    name: str = Field(min_length=1)
    message: str = Field(min_length=1)
    team: str | None = None
    timeout_seconds: float = Field(default=300.0, gt=0)


CheckSpec = Annotated[ShellCheckSpec | WebhookCheckSpec | HumanCheckSpec, Field(discriminator="type")]


class CalibrationSpec(SpecModel):
    enforce: bool = False
    on_uncalibrated: Literal["proceed", "escalate"] = "proceed"
