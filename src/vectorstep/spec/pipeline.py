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

    eq: Any = Field(default=None, description="holds when the field's value equals it")
    ne: Any = Field(default=None, description="holds when the field's value differs from it")
    in_: list[Any] | None = Field(
        default=None, alias="in", description="holds when the field's value is one of the list"
    )
    not_in: list[Any] | None = Field(default=None, description="holds when the field's value is none of the list")
    regex: RegexPattern | None = Field(
        default=None,
        description=(
            "holds when the field's value matches the regular expression (RE2 syntax, run in linear "
            "time; checked when the file is loaded — backreferences and lookaround are refused)"
        ),
    )
    gt: float | None = Field(
        default=None,
        description=(
            "holds when the field's value is greater than, greater than or equal to, less than, or "
            "less than or equal to it"
        ),
    )
    gte: float | None = Field(
        default=None,
        description=(
            "holds when the field's value is greater than, greater than or equal to, less than, or "
            "less than or equal to it"
        ),
    )
    lt: float | None = Field(
        default=None,
        description=(
            "holds when the field's value is greater than, greater than or equal to, less than, or "
            "less than or equal to it"
        ),
    )
    lte: float | None = Field(
        default=None,
        description=(
            "holds when the field's value is greater than, greater than or equal to, less than, or "
            "less than or equal to it"
        ),
    )

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
    enabled: bool = Field(default=True, description="turn deduplication on or off for this pipeline")
    window_seconds: int = Field(default=300, ge=0, description="how long after a run starts a duplicate is suppressed")


class TriggerSpec(SpecModel):
    # None: the pipeline is never picked by matching. `{}` written out: it takes every event (a catch-all).
    match: dict[str, MatchCondition] | None = Field(
        default=None,
        description=(
            "All conditions must hold (AND). `{}` written out matches every event (a catch-all); with "
            "no `match`, the pipeline is never picked by matching. `validate` warns when a catch-all "
            "hides the pipelines tried after it."
        ),
        json_schema_extra={"doc_type": "mapping of key → condition"},
    )
    dedup: DedupSpec | None = Field(
        default=None,
        description=("`{enabled, window_seconds}` for this pipeline. Same keys, types and rules as [dedup](#dedup)."),
        json_schema_extra={"doc_default": "none (the service's `dedup` applies)"},
    )


class ContextTemplateSpec(SpecModel):
    include: list[str] = Field(default_factory=list, description="dotted paths into the normalised context")


_CRON_FIELD = re.compile(r"^[0-9*/,\-A-Za-z?]+$")


class ScheduleSpec(SpecModel):
    cron: str = Field(
        description=(
            "A 5-field cron expression (`minute hour day-of-month month day-of-week`), for example "
            "`*/15 * * * *`. Each field may use digits, `*`, `/`, `,`, `-`, `?` and names."
        )
    )
    summary: str = Field(default="", description="the event's `summary`")
    severity: str = Field(default="info", description="the event's `severity`")
    labels: dict[str, str] = Field(default_factory=dict, description="the event's `labels`")
    team: str | None = Field(default=None, description="the event's `team`")

    @field_validator("cron")
    @classmethod
    def _five_fields(cls, cron: str) -> str:
        fields = cron.split()
        if len(fields) != 5 or not all(_CRON_FIELD.match(part) for part in fields):
            raise ValueError(f"expected a 5-field cron expression like '*/5 * * * *', got {cron!r}")
        return cron


class BudgetSpec(SpecModel):
    max_tokens: int | None = Field(
        default=None,
        ge=1,
        description=(
            "most input + output tokens the run may use, summed over all steps, their verifiers and "
            "grounding judges included"
        ),
    )
    max_usd: float | None = Field(
        default=None,
        gt=0,
        description=(
            "Most cost the run may have, priced with [`pricing`](#pricing). It is checked only while "
            "every step's cost is known."
        ),
    )
    include_approx_cost: bool = Field(
        default=False,
        description=(
            "When some tokens have no price, the run's cost is unknown and `max_usd` is not checked. "
            "With `true`, it is checked against what is priced — the least the run has spent: `budget "
            "exceeded: at least 1.0000 USD spent (some tokens have no price; include_approx_cost), "
            "max_usd is 0.5`."
        ),
    )

    @model_validator(mode="after")
    def _some_limit(self) -> BudgetSpec:
        if self.max_tokens is None and self.max_usd is None:
            raise ValueError("a budget needs at least one limit: max_tokens or max_usd")
        return self


class DurableSpec(SpecModel):
    on_interrupted: Literal["resume", "rerun", "escalate"] = Field(
        default="resume",
        description=(
            "`resume`: continue at the last step boundary — steps that finished are not run again, "
            "the step that was running runs again from its start (the run log says which); `rerun`: "
            "mark the run `interrupted` and start it again as a new run (its id is in the old run's "
            "error); `escalate`: send the pipeline's `escalate` notifications and end the run "
            "`escalated`, for a person to take over"
        ),
    )
    max_resume_age_seconds: int = Field(
        default=3600, ge=0, description="a run that started longer ago than this is marked `interrupted` instead"
    )


class NotificationTargetSpec(SpecModel):
    channel: Literal["log", "webhook", "slack", "telegram", "email"] = Field(
        description=(
            "Where to send. The settings come from the service's "
            "[`notifications`](#notifications-channels) block for this channel. `log` needs none."
        )
    )
    template: str = Field(
        default="",
        description=(
            "The message, a Jinja template rendered like a prompt (an undefined name renders empty). "
            "Empty means `{{ pipeline_name }}: step {{ step_name }} {{ status }} — {{ "
            "escalation_reason }}`."
        ),
    )
    config: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Channel settings for this target only, laid over the service's block key by key: "
            '`{channel: "#payments-oncall"}` for Slack, `{to: [...]}` for email, `{url: ...}` for a '
            "webhook. The result must be complete, which is checked when the pipeline is loaded."
        ),
    )


class PipelineSpec(SpecModel):
    name: PipelineName = Field(
        description=(
            "The pipeline's id. It must match `^[A-Za-z0-9][A-Za-z0-9_.-]*$`, be at most 120 "
            "characters, and be unique among the files of `pipelines_dir` (a second file with the "
            "same name is reported as an error). `vectorstep run NAME` uses it."
        )
    )
    description: str = Field(default="", description="free text")
    tags: list[str] = Field(default_factory=list, description="free labels (informational)")
    version: int | str = Field(default=1, description="informational")
    stage: Stage = Field(default="testing", description="see [stage](#stage)")
    # The team it belongs to: only that team's tokens see it and run it (none: every team's).
    team: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "the team the pipeline belongs to: only tokens that see this team find it, start it, or "
            "see its runs; its runs belong to this team ([security.md](security.md#roles-and-teams))"
        ),
        json_schema_extra={"doc_default": "none (every team's)"},
    )
    trigger: TriggerSpec = Field(
        default_factory=TriggerSpec,
        description=(
            "which incoming events start this pipeline ([trigger](#trigger)); without one, a pipeline "
            "runs only when an event names it, by hand or on its schedule"
        ),
    )
    priority: int = Field(
        default=0,
        description=("When several pipelines match an event, the higher priority is tried first, then the file name."),
    )
    vars: dict[str, Any] = Field(
        default_factory=dict, description="pipeline variables, available by name in every template ([vars](#vars))"
    )
    context_template: ContextTemplateSpec = Field(
        default_factory=ContextTemplateSpec,
        description=("context fields lifted to top-level template names ([context_template](#context_template))"),
    )
    steps: list[PipelineItem] = Field(
        min_length=1,
        description=(
            "the steps, run in order. Each item is a [sequential step](#steps), a [`parallel:` "
            "group](#parallel-groups) or a [`fan_out:`](#fan-outs)."
        ),
        json_schema_extra={"doc_type": "list of steps, groups and fan-outs, at least 1 item"},
    )
    notifications: dict[str, list[NotificationTargetSpec]] = Field(
        default_factory=dict,
        description="messages sent on escalation, abort, stop and budget events ([notifications](#notifications))",
        json_schema_extra={"doc_type": "mapping of action → target or list of targets"},
    )
    schedule: ScheduleSpec | None = Field(default=None, description="run on a cron schedule ([schedule](#schedule))")
    budget: BudgetSpec | None = Field(default=None, description="token and cost limits for one run ([budget](#budget))")
    # None: the database's default (PostgreSQL: durable; SQLite: not); False: never durable.
    durable: DurableSpec | Literal[False] | None = Field(
        default=None,
        description="what happens to a run whose process stopped ([durable](#durable))",
        json_schema_extra={
            "doc_default": "the database's (PostgreSQL: durable; SQLite: not)",
            "doc_type": "`true`, `false` or mapping",
        },
    )
    # The house default of every step's promotion readiness (spec/readiness.py); advisory only.
    readiness: ReadinessBlock = Field(
        default_factory=ReadinessSpec,
        description=(
            "the house default of promotion readiness for every step; advisory, never gates a run "
            "([readiness](#readiness))"
        ),
        json_schema_extra={"doc_default": "none (no tier)", "doc_type": "mapping or `null`"},
    )

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
