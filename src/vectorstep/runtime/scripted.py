"""`model: scripted`: plays an agent's script through the real loop, tools and trace capture.

It is how demos, tutorials and tests run without a network or keys (SYSTEM.md §13.1).
"""

from __future__ import annotations

import asyncio
import json

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from vectorstep.runtime.final_turn import FINAL_TURN_NOTICE
from vectorstep.spec.agent import AgentSpec, ScriptTurn

SCRIPTED_MODEL = "scripted"


def scripted_model(spec: AgentSpec) -> FunctionModel:
    """A pydantic-ai model that answers each turn from the agent's script."""

    async def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        script = _script_for(spec, _first_prompt(messages))
        turn_index = sum(1 for message in messages if isinstance(message, ModelResponse))
        turn = script[min(turn_index, len(script) - 1)]
        if turn.tool_calls is not None and _told_to_answer(messages):
            # The loop's last allowed turn: answer now, as a real model must.
            turn = next(entry for entry in script[turn_index:] if entry.answer is not None)
        if turn.delay_seconds:
            await asyncio.sleep(turn.delay_seconds)
        return ModelResponse(
            parts=_parts(turn, turn_index),
            finish_reason="tool_call" if turn.tool_calls else "stop",
        )

    return FunctionModel(play, model_name=SCRIPTED_MODEL)


def _told_to_answer(messages: list[ModelMessage]) -> bool:
    last = messages[-1]
    return isinstance(last, ModelRequest) and any(
        isinstance(part, UserPromptPart) and part.content == FINAL_TURN_NOTICE for part in last.parts
    )


def _first_prompt(messages: list[ModelMessage]) -> str:
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _script_for(spec: AgentSpec, prompt: str) -> list[ScriptTurn]:
    for case in spec.cases:
        if case.prompt_contains in prompt:
            return case.script
    return spec.script or []


def _parts(turn: ScriptTurn, turn_index: int) -> list[ModelResponsePart]:
    parts: list[ModelResponsePart] = []
    if turn.thinking:
        parts.append(ThinkingPart(content=turn.thinking))
    if turn.text:
        parts.append(TextPart(content=turn.text))
    if turn.tool_calls is not None:
        parts.extend(
            ToolCallPart(tool_name=call.name, args=dict(call.args), tool_call_id=f"call_{turn_index}_{position}")
            for position, call in enumerate(turn.tool_calls)
        )
    elif isinstance(turn.answer, str):
        parts.append(TextPart(content=turn.answer))
    else:
        parts.append(TextPart(content=json.dumps(turn.answer, ensure_ascii=False, indent=2)))
    return parts
