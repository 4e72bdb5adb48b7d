"""Steps of a pipeline: sequential steps, parallel groups and fan-outs (SYSTEM.md §3.2, §3.3)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator

from vectorstep.spec.base import SpecModel
from vectorstep.spec.executor_config import ExecutorBound, ExecutorConfig, ExecutorName, HttpMethod
from vectorstep.spec.readiness import ReadinessBlock, ReadinessSpec
from vectorstep.spec.trust_blocks import (
    CalibrationSpec,
    CheckSpec,
    GroundingSpec,
    Score,
    VerifierSpec,
)

# Step names become template names (`steps.first_line_triage`) and URL segments; `/` is kept
# for branch addresses (`group/branch`).
StepName = Annotated[str, Field(pattern=r"^[A-Za-z][A-Za-z0-9_-]*$", max_length=100)]
OnLowConfidence = Literal["escalate", "abort", "proceed"]
JoinStrategy = Literal["all_must_pass", "any_must_pass", "weighted_average"]


class RetrySpec(SpecModel):
    attempts: int = Field(default=3, ge=1, le=20)
    backoff: Literal["exponential", "fixed"] = "exponential"
    delay_seconds: float = Field(default=1.0, ge=0.0, le=3600.0)


class HttpCallSpec(SpecModel):
    url: str = Field(min_length=1)
    method: HttpMethod = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    payload: Any = None
    timeout_seconds: float = Field(default=10.0, gt=0)


class OnFailureSpec(SpecModel):
    policy: Literal["abort", "continue"] = "abort"
    webhook: HttpCallSpec | None = None


class LoopUntilSpec(SpecModel):
    confidence: Score
    max_iterations: int = Field(default=3, ge=1, le=50)


class TrustedWorkSpec(ExecutorBound):
    """What a sequential step, a branch and a fan-out branch share: an executor call and its trust blocks."""

    executor: ExecutorName
    executor_config: ExecutorConfig
    prompt_template: str = ""
    timeout_seconds: float | None = Field(default=None, gt=0)
    retry: RetrySpec | None = None
    verifier: VerifierSpec | None = None
    grounding: GroundingSpec | None = None
    deterministic_checks: list[CheckSpec] = Field(default_factory=list)
    calibration: CalibrationSpec | None = None
    readiness: ReadinessBlock = Field(default_factory=ReadinessSpec)  # advisory (spec/readiness.py)

    @field_validator("deterministic_checks")
    @classmethod
    def _unique_check_names(cls, checks: list[CheckSpec]) -> list[CheckSpec]:
        names = [check.name for check in checks]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"check names must be unique in a step; repeated: {', '.join(duplicates)}")
        return checks


class StepSpec(TrustedWorkSpec):
    """A sequential step (SYSTEM.md §3.2)."""

    name: StepName
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    confidence_threshold: Score = 0.75
    on_low_confidence: OnLowConfidence = "escalate"
    on_abort: str = "notify"
    when: str | None = None
    on_failure: OnFailureSpec = Field(default_factory=OnFailureSpec)
    loop_until: LoopUntilSpec | None = None

    @field_validator("on_failure", mode="before")
    @classmethod
    def _policy_shorthand(cls, value: Any) -> Any:
        return {"policy": value} if isinstance(value, str) else value


class BranchSpec(TrustedWorkSpec):
    """A branch of a parallel group: gated with the group, so it has no threshold or failure policy of its own."""

    name: StepName
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    when: str | None = None
    weight: float = Field(default=1.0, gt=0)


class ParallelSpec(SpecModel):
    name: StepName
    steps: list[BranchSpec] = Field(min_length=1)
    join: JoinStrategy = "all_must_pass"
    confidence_threshold: Score = 0.75
    on_low_confidence: OnLowConfidence = "escalate"
    on_abort: str = "notify"
    timeout_seconds: float | None = Field(default=None, gt=0)
    when: str | None = None
    readiness: ReadinessBlock = Field(default_factory=ReadinessSpec)  # for its branches (spec/readiness.py)

    @field_validator("steps")
    @classmethod
    def _unique_branch_names(cls, branches: list[BranchSpec]) -> list[BranchSpec]:
        names = [branch.name for branch in branches]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"branch names must be unique in a group; repeated: {', '.join(duplicates)}")
        return branches


class FanOutSpec(TrustedWorkSpec):
    name: StepName
    over: str = Field(min_length=1)
    as_: str = Field(default="item", alias="as", pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    join: JoinStrategy = "all_must_pass"
    confidence_threshold: Score = 0.75
    on_low_confidence: OnLowConfidence = "escalate"
    on_abort: str = "notify"
    max_items: int = Field(default=20, ge=1, le=1000)
    on_empty: Literal["complete", "skip", "abort"] = "complete"
    when: str | None = None


class ParallelItem(SpecModel):
    parallel: ParallelSpec


class FanOutItem(SpecModel):
    fan_out: FanOutSpec


def _step_kind(value: Any) -> str:
    if isinstance(value, dict):
        if "parallel" in value:
            return "parallel"
        if "fan_out" in value:
            return "fan_out"
    elif isinstance(value, ParallelItem):
        return "parallel"
    elif isinstance(value, FanOutItem):
        return "fan_out"
    return "step"


PipelineItem = Annotated[
    Annotated[StepSpec, Tag("step")] | Annotated[ParallelItem, Tag("parallel")] | Annotated[FanOutItem, Tag("fan_out")],
    Discriminator(_step_kind),
]
