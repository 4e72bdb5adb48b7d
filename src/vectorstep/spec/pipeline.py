"""A pipeline file (SYSTEM.md §3.1)."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from vectorstep.spec.base import RegexPattern, SpecModel
from vectorstep.spec.readiness import ReadinessBlock, ReadinessSpec
from vectorstep.spec.steps import FanOutItem, ParallelItem, PipelineItem, StepSpec

Stage = Literal["testing", "production"]
PipelineName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", max_length=120)]
MATCH_OPERATORS = ("eq", "ne", "in", "not_in", "regex", "gt", "gte", "lt", "lte")
NOTIFICATION_CHANNELS = ("log", "webhook", "slack", "telegram", "email")


class MatchOperators(SpecModel):
    """One condition: the value at a key compared with one or more operators (all must hold)."""

    eq: Any = None
    ne: Any = None
    in_: list[Any] | None = Field(default=None, alias="in")
    not_in: list[Any] | None = None
    regex: RegexPattern | None = None
    gt: float | None = None
    gte: float | None = None
    lt: float | None = None
    lte: float | None = None

    @model_validator(mode="after")
    def _at_least_one(self) -> MatchOperators:
        if not self.model_fields_set:
            raise ValueError(f"a condition needs at least one operator: {', '.join(MATCH_OPERATORS)}")
        return self


def _condition_kind(value: Any) -> str:
    return "operators" if isinstance(value, dict | MatchOperators) else "value"


# A mapping is an operator block; a plain value is shorthand for `eq`.
MatchCondition = Annotated[
    Annotated[MatchOperators, Tag("operators")] | Annotated[str | int | float | bool | None, Tag("value")],
    Discriminator(_condition_kind),
]


class DedupSpec(SpecModel):
    enabled: bool = True
    window_seconds: int = Field(default=300, ge=0)


class TriggerSpec(SpecModel):
    # None: the pipeline is never picked by matching. `{}` written out: it takes every event (a catch-all).
    match: dict[str, MatchCondition] | None = None
    dedup: DedupSpec | None = None


class ContextTemplateSpec(SpecModel):
    include: list[str] = Field(default_factory=list)


_CRON_FIELD = re.compile(r"^[0-9*/,\-A-Za-z?]+$")


class ScheduleSpec(SpecModel):
    cron: str
    summary: str = ""
    severity: str = "info"
    labels: dict[str, str] = Field(default_factory=dict)
    team: str | None = None

    @field_validator("cron")
    @classmethod
    def _five_fields(cls, cron: str) -> str:
        fields = cron.split()
        if len(fields) != 5 or not all(_CRON_FIELD.match(part) for part in fields):
            raise ValueError(f"expected a 5-field cron expression like '*/5 * * * *', got {cron!r}")
        return cron


class BudgetSpec(SpecModel):
    max_tokens: int | None = Field(default=None, ge=1)
    max_usd: float | None = Field(default=None, gt=0)
    include_approx_cost: bool = False

    @model_validator(mode="after")
    def _some_limit(self) -> BudgetSpec:
        if self.max_tokens is None and self.max_usd is None:
            raise ValueError("a budget needs at least one limit: max_tokens or max_usd")
        return self


class DurableSpec(SpecModel):
    on_interrupted: Literal["resume", "rerun", "escalate"] = "resume"
    max_resume_age_seconds: int = Field(default=3600, ge=0)


class NotificationTargetSpec(SpecModel):
    channel: Literal["log", "webhook", "slack", "telegram", "email"]
    template: str = ""
    config: dict[str, Any] = Field(default_factory=dict)


class PipelineSpec(SpecModel):
    name: PipelineName
    description: str = ""
    tags: list[str] = Field(default_factory=list)
    version: int | str = 1
    stage: Stage = "testing"
    # The team it belongs to: only that team's tokens see it and run it (none: every team's).
    team: str | None = Field(default=None, min_length=1)
    trigger: TriggerSpec = Field(default_factory=TriggerSpec)
    priority: int = 0
    vars: dict[str, Any] = Field(default_factory=dict)
    context_template: ContextTemplateSpec = Field(default_factory=ContextTemplateSpec)
    steps: list[PipelineItem] = Field(min_length=1)
    notifications: dict[str, list[NotificationTargetSpec]] = Field(default_factory=dict)
    schedule: ScheduleSpec | None = None
    budget: BudgetSpec | None = None
    # None: the database's default (PostgreSQL: durable; SQLite: not); False: never durable.
    durable: DurableSpec | Literal[False] | None = None
    # The house default of every step's promotion readiness (spec/readiness.py); advisory only.
    readiness: ReadinessBlock = Field(default_factory=ReadinessSpec)

    @field_validator("notifications", mode="before")
    @classmethod
    def _one_target_or_a_list(cls, value: Any) -> Any:
        """`escalate: {channel: telegram, template: ...}` is one target: the same as a list of one."""
        if isinstance(value, dict):
            return {event: [targets] if isinstance(targets, dict) else targets for event, targets in value.items()}
        return value

    @field_validator("durable", mode="before")
    @classmethod
    def _durable_shorthand(cls, value: Any) -> Any:
        return {} if value is True else value

    @model_validator(mode="after")
    def _unique_step_names(self) -> PipelineSpec:
        names = [name for item in self.steps for name in _names_of(item)]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"step names must be unique in a pipeline; repeated: {', '.join(duplicates)}")
        templated = {name.replace("-", "_") for name in names}
        if len(templated) != len(set(names)):
            raise ValueError("two step names differ only by '-' versus '_'; templates could not tell them apart")
        return self


def _names_of(item: StepSpec | ParallelItem | FanOutItem) -> list[str]:
    if isinstance(item, ParallelItem):
        return [
            item.parallel.name,
            *(f"{item.parallel.name}/{branch.name}" for branch in item.parallel.steps),
        ]
    if isinstance(item, FanOutItem):
        return [item.fan_out.name]
    return [item.name]
