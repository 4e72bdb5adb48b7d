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

    always: bool = Field(default=False, description="run the verifier whatever S is")
    confidence_below: Score = Field(default=1.0, description="as above")
    confidence_above: Score = Field(
        default=0.0,
        description=(
            "Otherwise, run it only when `confidence_above < S < confidence_below`. Both bounds are exclusive."
        ),
    )

    @model_validator(mode="after")
    def _a_band(self) -> VerifierTriggerSpec:
        if not self.always and self.confidence_above >= self.confidence_below:
            raise ValueError(
                f"confidence_above ({self.confidence_above:g}) must be below confidence_below "
                f"({self.confidence_below:g}), or the verifier never fires"
            )
        return self


class VerifierSpec(ExecutorBound):
    executor: AgentExecutorName = Field(
        default="gateway",
        description="Only agent executors can give a second opinion.",
        json_schema_extra={"doc_rule": "`openclaw` needs [`executors.openclaw`](#executors)"},
    )
    executor_config: ExecutorConfig = Field(
        description="Which agent verifies. Its `timeout_seconds` has no effect; the verifier's own applies.",
        json_schema_extra={"doc_type": "mapping", "doc_rule": "the keys of that executor (`agent` is required)"},
    )
    mode: Literal["critic", "independent"] = Field(
        default="critic",
        description=(
            "what the verifier is shown (below). `reviewer` is accepted as `critic`, `challenger` as "
            "`independent`. `critic` needs a primary executor that records a trace."
        ),
    )
    combination_strategy: Literal["minimum", "veto"] = Field(
        default="minimum",
        description=(
            "`minimum`: trust becomes `min(S, V)`. `veto`: S is kept unless V < `veto_floor`; then "
            "trust becomes `min(S, V)`."
        ),
    )
    veto_floor: Score = Field(default=0.60, description="used by `veto` only")
    trigger: VerifierTriggerSpec = Field(default_factory=VerifierTriggerSpec)
    max_trace_chars: int = Field(
        default=1500, ge=100, description="the budget of each entry of the transcript a critic sees"
    )
    timeout_seconds: float = Field(
        default=120.0, gt=0, description="Time limit of the verifier call. `limits.max_run_seconds` caps it too."
    )

    @field_validator("mode", mode="before")
    @classmethod
    def _accept_synonyms(cls, value: Any) -> Any:
        return _VERIFIER_MODE_SYNONYMS.get(value, value) if isinstance(value, str) else value


class GroundingSpec(ExecutorBound):
    agent: str = Field(
        default="grounding-judge",
        min_length=1,
        description=("The judge agent. It is copied into `executor_config.agent` unless you set that key yourself."),
    )
    # `local`: no judge; G comes from the model-free anchor check of the answer's own statements.
    executor: Literal["gateway", "openclaw", "local"] = Field(
        default="gateway",
        description=(
            "`local`: G from the anchor check, no model call, no tokens "
            "([trust.md](trust.md#checking-claims-without-a-model))"
        ),
        json_schema_extra={"doc_rule": "`openclaw` needs [`executors.openclaw`](#executors)"},
    )
    executor_config: ExecutorConfig | None = Field(
        default=None,
        description="Its `timeout_seconds` has no effect; the judge's own applies.",
        json_schema_extra={
            "doc_default": "`{agent: <agent>}`",
            "doc_type": "mapping",
            "doc_rule": "the keys of that executor; none with `local`",
        },
    )
    timeout_seconds: float = Field(
        default=120.0, gt=0, description="Time limit of the judge call. `limits.max_run_seconds` caps it too."
    )
    max_trace_chars: int = Field(
        default=1500,
        ge=100,
        description=(
            "the budget of each entry of the judge's transcript: each tool result and each piece of "
            "the agent's own text. With evidence windows, room a result leaves unused goes to results "
            "that still leave the answer's evidence out; the results never take more in all than this "
            "much each"
        ),
    )
    enforce: bool = Field(
        default=False,
        description="`false`: shadow mode, G is recorded and changes nothing. `true`: trust is capped at G.",
        json_schema_extra={"doc_rule": "not allowed on an executor without a trace (`webhook`, `notify`)"},
    )
    evidence_windows: bool = Field(
        default=True,
        description=(
            "How a tool result longer than `max_trace_chars` is shortened. `true`: the result is read "
            "by its shape (JSON, one object per line, logs, tables, `key: value` blocks, YAML) and "
            "the budget goes to a small head plus whole records that hold the figures, times, ids and "
            "names the answer states, each with the fields that identify it, taken from the whole "
            "result; every gap is marked (`… [3,210 characters omitted] …` between lines, `…[412 "
            "chars omitted]…` inside one). `false`: plain head truncation, the first characters and a "
            "marker. "
            "([trust.md](trust.md#evidence-windows-and-truncation-that-is-not-a-hallucination))"
        ),
    )

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
    type: Literal["shell"] = Field(description="the kind of check")
    name: str = Field(min_length=1, description="the check's name, unique in the step; failed checks are listed by it")
    run: str | None = Field(
        default=None,
        description=(
            "A command for `/bin/sh -c`. Every `{{ }}` value is shell-quoted as one word, so an "
            "agent's text can never become shell syntax; do not wrap a `{{ }}` in quotes of your own, "
            "backticks, a heredoc, `eval` or `sh -c` — `validate` warns where you do, because there "
            "the value is read as shell again. A value that would start a word with `-` (`-rf`, "
            "`--all`) fails the check, because the program would read it as an option — unless it is "
            "a number (`-5`) or comes after a `--` word you wrote (`rm -- {{ path }}`). Your own "
            "literal text is left as written. Write `$${VAR}` for a shell variable, because `${VAR}` "
            "is expanded when the file is loaded."
        ),
        json_schema_extra={"doc_rule": "exactly one of `run` or `argv`"},
    )
    argv: list[str] | None = Field(
        default=None,
        description=(
            "A program and its arguments, run without a shell. Each element is a template and becomes "
            "one argument; an element that is a whole `{{ }}` and renders to something starting with "
            '`-` fails the check (an option), unless it is a number or comes after a `"--"` element.'
        ),
        json_schema_extra={"doc_rule": "exactly one of `run` or `argv`, and not empty"},
    )
    expect: str | None = Field(
        default=None,
        description=(
            "Sees `result` (stdout, stripped), `exit_code`, `stderr` (stripped) and the step context. "
            "A non-zero exit fails the check unless `expect` mentions `exit_code`."
        ),
        json_schema_extra={
            "doc_default": "`exit_code == 0`",
            "doc_type": "string (bare expression)",
            "doc_rule": "must compile",
        },
    )
    timeout_seconds: float = Field(
        default=30.0,
        gt=0,
        description="When it runs out, the command's whole process group is killed and the check fails.",
    )

    @model_validator(mode="after")
    def _run_or_argv(self) -> ShellCheckSpec:
        if (self.run is None) == (self.argv is None):
            raise ValueError("a shell check needs exactly one of `run` (a shell command) or `argv` (a list)")
        if self.argv is not None and not self.argv:
            raise ValueError("`argv` must name a program")
        return self


class WebhookCheckSpec(SpecModel):
    type: Literal["webhook"] = Field(description="the kind of check")
    name: str = Field(min_length=1, description="the check's name, unique in the step; failed checks are listed by it")
    url: str = Field(min_length=1, description="rendered")
    method: HttpMethod = Field(default="GET", description="the HTTP method")
    headers: dict[str, str] = Field(
        default_factory=dict,
        description=(
            "values rendered; an `Idempotency-Key` (the same for the same run, step and check) is added unless set"
        ),
    )
    payload: Any = Field(default=None, description="the JSON body. Its strings are rendered.")
    expect: str = Field(
        default="response.status_code < 400",
        description=(
            "Sees `response.status_code`, `response.body` (the first 64 KiB, parsed as JSON when it "
            "is JSON, else text; none when empty), `response.headers` (names in lower case) and the "
            "step context. A non-2xx answer is not an error in itself; `expect` decides."
        ),
        json_schema_extra={"doc_type": "string (bare expression)", "doc_rule": "must compile"},
    )
    timeout_seconds: float = Field(default=30.0, gt=0, description="A timeout or a connection error fails the check.")


class HumanCheckSpec(SpecModel):
    type: Literal["human"] = Field(description="the kind of check")
    name: str = Field(min_length=1, description="the check's name, unique in the step; failed checks are listed by it")
    message: str = Field(min_length=1, description="what the person is asked (rendered)")
    team: str | None = Field(
        default=None,
        description="the team whose [approval route](#human_approval) is used",
        json_schema_extra={"doc_default": "the run's team"},
    )
    timeout_seconds: float = Field(
        default=300.0,
        gt=0,
        description=(
            "When it runs out with no decision, the stage decides: in `testing` the check passes, in "
            "`production` it fails."
        ),
    )


CheckSpec = Annotated[ShellCheckSpec | WebhookCheckSpec | HumanCheckSpec, Field(discriminator="type")]


class CalibrationSpec(SpecModel):
    enforce: bool = Field(
        default=False,
        description=("replace the value with the measured accuracy of its confidence bin, when that bin is validated"),
    )
    on_uncalibrated: Literal["proceed", "escalate"] = Field(
        default="proceed",
        description=(
            "what happens when the bin is not validated yet. `escalate` sets trust to 0.0; `proceed` "
            "leaves it unchanged."
        ),
    )
