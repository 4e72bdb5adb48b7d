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
    attempts: int = Field(default=3, ge=1, le=20, description="total attempts, the first one included")
    backoff: Literal["exponential", "fixed"] = Field(default="exponential", description="how the delay grows")
    delay_seconds: float = Field(default=1.0, ge=0.0, le=3600.0, description="the delay after the first failed attempt")


class HttpCallSpec(SpecModel):
    url: str = Field(min_length=1, description="where to send the request")
    method: HttpMethod = Field(default="POST", description="the HTTP method")
    headers: dict[str, str] = Field(default_factory=dict, description="request headers")
    payload: Any = Field(default=None, description="the JSON body")
    timeout_seconds: float = Field(default=10.0, gt=0, description="the request timeout")


class OnFailureSpec(SpecModel):
    policy: Literal["abort", "continue"] = Field(
        default="abort",
        description=(
            "`abort` ends the run as `failed`. `continue` records the failed step and goes on with the next item."
        ),
    )
    webhook: HttpCallSpec | None = Field(
        default=None,
        description="A request sent when the step fails, whatever the policy. Not sent in stage `testing`.",
    )


class LoopUntilSpec(SpecModel):
    confidence: Score = Field(description="the target")
    max_iterations: int = Field(
        default=3, ge=1, le=50, description="most runs of the primary call, the first one included"
    )


class TrustedWorkSpec(ExecutorBound):
    """What a sequential step, a branch and a fan-out branch share: an executor call and its trust blocks."""

    executor: ExecutorName = Field(description="what does the work ([executors](#executors-and-executor_config))")
    executor_config: ExecutorConfig = Field(
        description="the executor's settings. Its required keys must be present.",
        json_schema_extra={"doc_default": "`{}`", "doc_type": "mapping", "doc_rule": "the keys of the chosen executor"},
    )
    prompt_template: str = Field(
        default="",
        description=(
            "The prompt, rendered for each attempt. The `gateway` executor sends it to the agent, and "
            "`webhook` sends it as the request body. See [Templates](#templates-and-expressions)."
        ),
        json_schema_extra={"doc_rule": "must compile as Jinja"},
    )
    timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        description="time limit of one executor attempt ([timeouts and retry](#timeout_seconds-and-retry))",
    )
    retry: RetrySpec | None = Field(
        default=None, description="retry failed attempts ([retry](#timeout_seconds-and-retry))"
    )
    verifier: VerifierSpec | None = Field(default=None, description="a second-opinion agent, V ([verifier](#verifier))")
    grounding: GroundingSpec | None = Field(default=None, description="a grounding judge, G ([grounding](#grounding))")
    deterministic_checks: list[CheckSpec] = Field(
        default_factory=list,
        description=(
            "machine checks, D: any failed check sets trust to 0 ([deterministic_checks](#deterministic_checks))"
        ),
        json_schema_extra={"doc_type": "list of checks", "doc_rule": "check names unique in the step"},
    )
    calibration: CalibrationSpec | None = Field(
        default=None, description="calibration from the step's marked history ([calibration](#calibration))"
    )
    readiness: ReadinessBlock = Field(
        default_factory=ReadinessSpec,
        description="the step's own promotion readiness tiers; `null` opts it out ([readiness](#readiness))",
        json_schema_extra={"doc_default": "inherits the pipeline's", "doc_type": "mapping or `null`"},
    )  # advisory (spec/readiness.py)

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

    name: StepName = Field(
        description=(
            "Identifies the step in the run record and in templates: `steps.first_line_triage`, with "
            "hyphens written as underscores."
        )
    )
    description: str = Field(default="", description="informational")
    tags: list[str] = Field(default_factory=list, description="informational")
    confidence_threshold: Score = Field(
        default=0.75,
        description=(
            "the step's `combined_trust` must reach this value to pass the gate. Without trust "
            "blocks, `combined_trust` is the answer's `confidence`."
        ),
    )
    on_low_confidence: OnLowConfidence = Field(
        default="escalate", description="what happens below the threshold ([gate](#evaluation-order-and-statuses))"
    )
    on_abort: str = Field(
        default="notify", description="the [notification](#notifications) action sent when the step aborts"
    )
    when: str | None = Field(
        default=None,
        description="when false, the step is `skipped` ([when](#when))",
        json_schema_extra={"doc_type": "string (bare expression)", "doc_rule": "must compile"},
    )
    on_failure: OnFailureSpec = Field(
        default_factory=OnFailureSpec,
        description="what a failed step does to the run ([on_failure](#on_failure))",
        json_schema_extra={"doc_default": "`abort`", "doc_type": "`abort` \\| `continue` \\| mapping"},
    )
    loop_until: LoopUntilSpec | None = Field(
        default=None, description="rerun the step until its confidence reaches a target ([loop_until](#loop_until))"
    )

    @field_validator("on_failure", mode="before")
    @classmethod
    def _policy_shorthand(cls, value: Any) -> Any:
        return {"policy": value} if isinstance(value, str) else value


class BranchSpec(TrustedWorkSpec):
    """A branch of a parallel group: gated with the group, so it has no threshold or failure policy of its own."""

    name: StepName = Field(
        description="recorded and addressed as `<group>/<name>`", json_schema_extra={"doc_rule": "unique in the group"}
    )
    description: str = Field(default="", description="informational, as for a step")
    tags: list[str] = Field(default_factory=list, description="informational, as for a step")
    when: str | None = Field(
        default=None,
        description="when false, the branch is `skipped` and left out of the join",
        json_schema_extra={"doc_type": "string (bare expression)", "doc_rule": "must compile"},
    )
    weight: float = Field(default=1.0, gt=0, description="the branch's weight in `weighted_average`")


class ParallelSpec(SpecModel):
    name: StepName = Field(description="the group's name. Branches are recorded as `<group>/<branch>`.")
    steps: list[BranchSpec] = Field(
        min_length=1,
        description="the branches",
        json_schema_extra={"doc_type": "list of branches, at least 1", "doc_rule": "branch names unique in the group"},
    )
    join: JoinStrategy = Field(
        default="all_must_pass",
        description="how the branches' combined trust values are joined ([join strategies](#join-strategies))",
    )
    confidence_threshold: Score = Field(default=0.75, description="the joined value must reach this to pass")
    on_low_confidence: OnLowConfidence = Field(default="escalate", description="what happens below the threshold")
    on_abort: str = Field(
        default="notify", description="the [notification](#notifications) action sent when the group aborts"
    )
    timeout_seconds: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Time limit of the whole group, each branch's verifier, judge and checks included. A "
            "branch still running when it runs out is cancelled, records no step, and counts as 0; "
            "the group records a warning that names it."
        ),
    )
    when: str | None = Field(
        default=None,
        description="when false, the whole group is `skipped`",
        json_schema_extra={"doc_type": "string (bare expression)"},
    )
    readiness: ReadinessBlock = Field(
        default_factory=ReadinessSpec,
        description=(
            "promotion readiness tiers for its branches, between the pipeline's and each branch's own "
            "([readiness](#readiness))"
        ),
        json_schema_extra={"doc_default": "inherits the pipeline's", "doc_type": "mapping or `null`"},
    )  # for its branches (spec/readiness.py)

    @field_validator("steps")
    @classmethod
    def _unique_branch_names(cls, branches: list[BranchSpec]) -> list[BranchSpec]:
        names = [branch.name for branch in branches]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"branch names must be unique in a group; repeated: {', '.join(duplicates)}")
        return branches


class FanOutSpec(TrustedWorkSpec):
    name: StepName = Field(description="Branches are recorded as `<name>/0`, `<name>/1`, …")
    over: str = Field(
        min_length=1,
        description=(
            "The items. It must evaluate to a list. A mapping gives one item `{key, value}` per "
            "entry. Anything else fails the fan-out."
        ),
        json_schema_extra={"doc_type": "string (bare expression), at least 1 character"},
    )
    as_: str = Field(
        default="item",
        alias="as",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*$",
        description="the template name of the current item",
    )
    join: JoinStrategy = Field(
        default="all_must_pass", description="Every fan-out branch has weight 1, so `weighted_average` is the mean."
    )
    confidence_threshold: Score = Field(default=0.75, description="the joined value must reach this to pass")
    on_low_confidence: OnLowConfidence = Field(default="escalate", description="what happens below the threshold")
    on_abort: str = Field(
        default="notify", description="the [notification](#notifications) action sent when the fan-out aborts"
    )
    max_items: int = Field(
        default=20,
        ge=1,
        le=1000,
        description=("Only the first `max_items` items run. The rest are dropped with a warning on the fan-out."),
    )
    on_empty: Literal["complete", "skip", "abort"] = Field(
        default="complete",
        description=(
            "What an empty list does. `complete` finishes the fan-out with confidence 1.0 and no "
            "branches. `skip` marks it `skipped`. `abort` ends it, and the run, as `aborted`."
        ),
    )
    when: str | None = Field(
        default=None,
        description="when false, the whole fan-out is `skipped`",
        json_schema_extra={"doc_type": "string (bare expression)"},
    )


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
