"""A model's first request, rehearsed in process against a canned answer, so no run pays for it.

A provider SDK builds much of itself on first use: the OpenAI SDK defers building its response
types' validators, both SDKs cache how they read request types, pydantic-ai completes its usage and
message models. A fresh service's first run, sent once it was warm, took 81–95 ms against 26–30 ms
for the tenth, much of it for that (benchmarks/README.md). The rehearsal sends, through the same
model class and SDK client class as an agent's model, a request with a tool that is answered with a
tool call, then the tool's result that is answered with text — the two shapes of an agent's turn.
An HTTP transport in this process answers them: nothing leaves the machine, no key is used, no
tokens are spent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from pydantic_ai.direct import model_request
from pydantic_ai.messages import ModelRequest, ToolCallPart, ToolReturnPart, UserPromptPart
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

from vectorstep.spec.service import ProviderSpec

REHEARSAL_URL = "http://rehearsal.invalid"
_TOOL = ToolDefinition(
    name="look",
    description="Look something up.",
    parameters_json_schema={"type": "object", "properties": {"query": {"type": "string"}}},
)


def _openai_answer(asked: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": '{"summary": "ok"}'}
    if asked.get("tools"):
        call = {"id": "call_1", "type": "function", "function": {"name": _TOOL.name, "arguments": '{"query": "x"}'}}
        message = {"role": "assistant", "content": None, "tool_calls": [call]}
    usage = {
        "prompt_tokens": 1,
        "completion_tokens": 1,
        "total_tokens": 2,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    finish = "tool_calls" if asked.get("tools") else "stop"
    choice = {"index": 0, "finish_reason": finish, "message": message}
    return {"id": "r", "object": "chat.completion", "created": 0, "model": "r", "choices": [choice], "usage": usage}


def _anthropic_answer(asked: dict[str, Any]) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": '{"summary": "ok"}'}]
    if asked.get("tools"):
        content = [{"type": "tool_use", "id": "toolu_1", "name": _TOOL.name, "input": {"query": "x"}}]
    usage = {"input_tokens": 1, "output_tokens": 1, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}
    stop = "tool_use" if asked.get("tools") else "end_turn"
    return {
        "id": "r",
        "type": "message",
        "role": "assistant",
        "model": "r",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


_ANSWERS: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "/chat/completions": _openai_answer,
    "/messages": _anthropic_answer,
}


def rehearsal_client() -> Any:
    """An SDK's HTTP client class whose transport answers in process (the SDKs send through httpx2)."""
    import httpx2  # noqa: PLC0415 - loaded with the SDKs, only when a model is built

    def answer(request: Any) -> Any:
        shape = next((make for path, make in _ANSWERS.items() if request.url.path.endswith(path)), None)
        if shape is None:
            return httpx2.Response(404, json={"error": {"message": "not rehearsed"}})
        return httpx2.Response(200, json=shape(json.loads(request.content or b"{}")))

    return httpx2.AsyncClient(transport=httpx2.MockTransport(answer))


REHEARSAL_SPEC = ProviderSpec(base_url=REHEARSAL_URL, api_key="rehearsal")


async def rehearse(model: Model) -> None:
    """One turn with a tool call and one with text through `model` (built on `rehearsal_client`)."""
    asked = ModelRequest(parts=[UserPromptPart(content="rehearsal")], instructions="Answer in JSON.")
    with_tool = ModelRequestParameters(function_tools=[_TOOL], allow_text_output=True)
    called = await model_request(model, [asked], model_request_parameters=with_tool)
    calls = [part for part in called.parts if isinstance(part, ToolCallPart)]
    returns = ModelRequest(
        parts=[ToolReturnPart(call.tool_name, "found", tool_call_id=call.tool_call_id) for call in calls]
    )
    await model_request(model, [asked, called, returns], model_request_parameters=ModelRequestParameters())
