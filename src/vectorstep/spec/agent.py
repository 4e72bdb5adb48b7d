"""`agents/<name>/agent.yaml`: an agent's model, tools and limits; a script for `model: scripted`."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from vectorstep.spec.base import SpecModel
from vectorstep.spec.executor_config import ThinkingLevel

AgentName = str


class ScriptedToolCall(SpecModel):
    name: str = Field(min_length=1, description="the tool, as `<server>__<tool>`")
    args: dict[str, Any] = Field(default_factory=dict, description="its arguments")


class ScriptTurn(SpecModel):
    """One model turn of a scripted agent: tool calls, or the answer (an object sent as JSON, or text)."""

    tool_calls: list[ScriptedToolCall] | None = Field(
        default=None,
        description="tool calls made through the real tool path",
        json_schema_extra={
            "doc_type": "list of `{name, args}`",
            "doc_rule": "exactly one of `tool_calls` or `answer`; at least one call",
        },
    )
    answer: dict[str, Any] | str | None = Field(
        default=None,
        description=(
            "The reply. A mapping is sent as JSON text, and a string is sent as written (use a string "
            "to test parse errors)."
        ),
        json_schema_extra={"doc_rule": "exactly one of `tool_calls` or `answer`"},
    )
    thinking: str | None = Field(default=None, description="recorded as a `thinking` trace event")
    text: str | None = Field(
        default=None, description="commentary before the calls or answer, recorded as a `text` event"
    )  # commentary before the tool calls, as a real model may write
    delay_seconds: float = Field(
        default=0.0, ge=0, le=3600, description="wait before this turn's reply, for example to test timeouts"
    )

    @model_validator(mode="after")
    def _one_kind(self) -> ScriptTurn:
        if (self.tool_calls is None) == (self.answer is None):
            raise ValueError("a script turn holds exactly one of `tool_calls` or `answer`")
        if self.tool_calls is not None and not self.tool_calls:
            raise ValueError("`tool_calls` must list at least one call")
        return self


def _script_ends_with_answer(script: list[ScriptTurn]) -> list[ScriptTurn]:
    if not script:
        raise ValueError("a script needs at least one turn")
    if script[-1].answer is None:
        raise ValueError("the last turn of a script must be an `answer`")
    return script


class ScriptCase(SpecModel):
    """A script played when the prompt contains `prompt_contains` (first matching case wins)."""

    prompt_contains: str = Field(
        min_length=1,
        description=("the case is played when the rendered prompt contains this text; the first matching case wins"),
    )
    script: list[ScriptTurn] = Field(
        description="the turns played, with the same rules as `script`", json_schema_extra={"doc_type": "list of turns"}
    )

    _ends = field_validator("script")(_script_ends_with_answer)


class AgentSpec(SpecModel):
    name: str | None = Field(
        default=None,
        pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        description="optional. If present, it must match the folder.",
        json_schema_extra={"doc_default": "the folder name", "doc_rule": "must equal the folder name"},
    )
    description: str = Field(default="", description="free text. It is not part of `agent_version`.")
    model: str = Field(
        min_length=1,
        description="The model ([models.md](models.md)).",
        json_schema_extra={
            "doc_rule": (
                "checked with the whole project: `scripted`, or `<provider>/<model>` with a provider of "
                "`openai`, `anthropic`, `ollama`, `openrouter`, `azure`, `google`, or one given a "
                "`base_url` under `providers:`; a provider that needs a key must have "
                "`providers.<name>.api_key` (Azure also `base_url` and `api_version`)"
            )
        },
    )
    model_fallbacks: list[str] = Field(
        default_factory=list,
        description=(
            "Models tried in order when the main one still fails after its retries (or fails in a way "
            "retrying cannot fix, like a bad key). The next model continues the same conversation, "
            "tool calls and results included; a `model_fallback` trace event says why."
        ),
        json_schema_extra={"doc_rule": "same rule as `model`"},
    )
    max_tokens: int = Field(
        default=8192,
        ge=1,
        description=(
            "The most output tokens per model call. A reply cut off by this limit is flagged "
            "(`truncated`, stop reason `length`) with a warning on the step, never passed off as "
            "complete. The scripted model is not limited by it."
        ),
    )
    temperature: float | None = Field(
        default=None,
        ge=0,
        le=2,
        description="Sampling temperature, sent with each model call. The scripted model ignores it.",
    )
    thinking_level: ThinkingLevel | None = Field(
        default=None,
        description=(
            "reasoning effort, translated for each provider (OpenAI `reasoning_effort`, Anthropic and "
            "Google thinking, Ollama, OpenRouter). An OpenAI-compatible server of your own does not "
            "get it: `validate` and the service warn at load."
        ),
    )
    max_iterations: int | None = Field(
        default=None,
        ge=1,
        le=500,
        description="the most model calls in one turn, for this agent",
        json_schema_extra={"doc_default": "`limits.max_agent_iterations`"},
    )
    tools: list[str | dict[str, list[str]]] = Field(
        default_factory=list,
        description="the tools the agent may use ([tools](#tools-grants))",
        json_schema_extra={
            "doc_type": "list of server names or `{server: [tools]}` mappings",
            "doc_rule": (
                "every server must be in `mcp_servers` (checked with the whole project and with the "
                "agent's own `agent.yaml`)"
            ),
        },
    )
    script: list[ScriptTurn] | None = Field(
        default=None,
        description="the scripted model's turns ([scripted model](#the-scripted-model))",
        json_schema_extra={
            "doc_type": "list of turns",
            "doc_rule": "**required when `model: scripted`**, not allowed otherwise; ends with an `answer`",
        },
    )
    cases: list[ScriptCase] = Field(
        default_factory=list,
        description="alternative scripts, chosen by prompt ([scripted model](#the-scripted-model))",
        json_schema_extra={"doc_rule": "only with `model: scripted`"},
    )

    @field_validator("script")
    @classmethod
    def _script_shape(cls, script: list[ScriptTurn] | None) -> list[ScriptTurn] | None:
        return None if script is None else _script_ends_with_answer(script)

    @model_validator(mode="after")
    def _script_only_when_scripted(self) -> AgentSpec:
        if self.model == "scripted" and self.script is None:
            raise ValueError("`model: scripted` needs a `script` (the turns it plays)")
        if self.model != "scripted" and (self.script is not None or self.cases):
            raise ValueError("`script` and `cases` are only for `model: scripted`")
        return self

    def tool_grants(self) -> dict[str, frozenset[str] | None]:
        """Server → the tools granted on it (None: every tool of that server)."""
        grants: dict[str, frozenset[str] | None] = {}
        for entry in self.tools:
            if isinstance(entry, str):
                grants[entry] = None
            else:
                for server, names in entry.items():
                    current = grants.get(server, frozenset())
                    grants[server] = None if current is None else current | frozenset(names)
        return grants
