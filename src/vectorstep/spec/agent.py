"""`agents/<name>/agent.yaml`: an agent's model, tools and limits; a script for `model: scripted`."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator, model_validator

from vectorstep.spec.base import SpecModel
from vectorstep.spec.executor_config import ThinkingLevel

AgentName = str


class ScriptedToolCall(SpecModel):
    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ScriptTurn(SpecModel):
    """One model turn of a scripted agent: tool calls, or the answer (an object sent as JSON, or text)."""

    tool_calls: list[ScriptedToolCall] | None = None
    answer: dict[str, Any] | str | None = None
    thinking: str | None = None
    text: str | None = None  # commentary before the tool calls, as a real model may write
    delay_seconds: float = Field(default=0.0, ge=0, le=3600)

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

    prompt_contains: str = Field(min_length=1)
    script: list[ScriptTurn]

    _ends = field_validator("script")(_script_ends_with_answer)


class AgentSpec(SpecModel):
    name: str | None = Field(default=None, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    description: str = ""
    model: str = Field(min_length=1)
    model_fallbacks: list[str] = Field(default_factory=list)
    max_tokens: int = Field(default=8192, ge=1)
    temperature: float | None = Field(default=None, ge=0, le=2)
    thinking_level: ThinkingLevel | None = None
    max_iterations: int | None = Field(default=None, ge=1, le=500)
    tools: list[str | dict[str, list[str]]] = Field(default_factory=list)
    script: list[ScriptTurn] | None = None
    cases: list[ScriptCase] = Field(default_factory=list)

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
