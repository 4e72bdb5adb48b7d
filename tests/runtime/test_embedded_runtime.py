"""The embedded runtime: the real loop with real MCP tools over stdio, and what its trace records."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.conftest import TOOL_SERVER, tool_server_config
from vectorstep.errors import AgentRuntimeError
from vectorstep.runtime.embedded import EmbeddedRuntime
from vectorstep.runtime.models import ResolvedModel
from vectorstep.runtime.protocol import AgentRequest
from vectorstep.spec.agent_files import AgentDefinition, load_agents
from vectorstep.spec.service import ServiceSpec
from vectorstep.testing import ProjectDir, answer


def runtime_for(project: ProjectDir, servers: dict[str, Any] | None = None, **limits: Any) -> EmbeddedRuntime:
    agents, problems = load_agents(project.root / "agents")
    assert problems == []
    spec = ServiceSpec.model_validate({"mcp_servers": servers or tool_server_config(), "limits": limits})
    return EmbeddedRuntime(agents, spec)


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"name": name, "args": args}


async def test_a_scripted_agent_calls_real_tools_and_every_event_is_recorded(project: ProjectDir) -> None:
    project.scripted_agent(
        "investigator",
        {"thinking": "look first", "text": "Checking.", "tool_calls": [call("tools__echo", text="5xx at 4.2%")]},
        answer(0.9, "5xx at 4.2%"),
        tools=["tools"],
    )
    runtime = runtime_for(project)
    try:
        reply = await runtime.run(AgentRequest(agent="investigator", message="go", session_key="agent:investigator:1"))
    finally:
        await runtime.aclose()
    types = [event.type for event in reply.trace]
    assert types == ["llm_call", "thinking", "text", "tool_call", "tool_result", "llm_call", "text"]
    assert [event.seq for event in reply.trace] == list(range(1, 8))
    call_event, result_event = reply.trace[3], reply.trace[4]
    assert call_event.call_id == result_event.call_id is not None
    assert call_event.args == {"text": "5xx at 4.2%"}
    assert result_event.content == "5xx at 4.2%" and result_event.is_error is False
    assert result_event.duration_ms is not None and result_event.duration_ms > 0
    assert all(datetime.fromisoformat(event.ts).tzinfo is not None for event in reply.trace)
    assert reply.trace[0].model == "scripted" and reply.trace[0].stop_reason == "tool_call"
    assert reply.model == "scripted" and reply.provider == "scripted" and len(reply.agent_version) == 12
    assert reply.usage.input_tokens > 0 and reply.usage.by_model["scripted"].requests == 2
    assert '"summary": "5xx at 4.2%"' in reply.text


async def test_the_trace_copy_is_capped_with_a_marker_but_the_model_gets_the_whole_result(project: ProjectDir) -> None:
    seen_by_model: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [p for m in messages if isinstance(m, ModelRequest) for p in m.parts if isinstance(p, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("tools__long_text", {"chars": 5000}, tool_call_id="c1")])
        seen_by_model.append(str(returns[0].content))
        return ModelResponse(parts=[TextPart('{"confidence": 0.9, "summary": "s", "next_step_context": ""}')])

    def models(agent: AgentDefinition, name: str) -> ResolvedModel:
        return ResolvedModel(FunctionModel(model, model_name="fake-llm"), "fake", "fake-llm")

    project.agent("reader", {"model": "openai/gpt-4.1", "tools": ["tools"]})
    agents, _ = load_agents(project.root / "agents")
    runtime = EmbeddedRuntime(agents, ServiceSpec.model_validate({"mcp_servers": tool_server_config()}), models=models)
    try:
        reply = await runtime.run(
            AgentRequest(agent="reader", message="read", session_key="s", trace_tool_result_max=1000)
        )
    finally:
        await runtime.aclose()
    assert len(seen_by_model[0]) == 5000 and seen_by_model[0].endswith("EVIDENCE-42")
    (result,) = [event for event in reply.trace if event.type == "tool_result"]
    assert result.original_chars == 5000
    assert result.content is not None and result.content.startswith(seen_by_model[0][:1000])
    assert "EVIDENCE-42" not in result.content
    assert "cut: 4,000 of 5,000 characters" in result.content
    assert reply.full_tool_results["c1"] == seen_by_model[0]  # kept whole in memory for the judges


async def test_the_service_wide_cap_applies_when_the_step_sets_none(project: ProjectDir) -> None:
    project.scripted_agent(
        "reader", {"tool_calls": [call("tools__long_text", chars=400)]}, answer(0.9), tools=["tools"]
    )
    runtime = runtime_for(project, trace_tool_result_max_chars=150)
    try:
        reply = await runtime.run(AgentRequest(agent="reader", message="x", session_key="s"))
    finally:
        await runtime.aclose()
    (result,) = [event for event in reply.trace if event.type == "tool_result"]
    assert result.original_chars == 400 and "cut: 250 of 400" in (result.content or "")


async def test_a_tool_the_agent_was_not_granted_is_refused_when_called_and_the_turn_goes_on(
    project: ProjectDir,
) -> None:
    project.scripted_agent(
        "narrow",
        {"tool_calls": [call("tools__fail", reason="should never run"), call("tools__echo", text="allowed")]},
        answer(0.8, "answered anyway"),
        tools=[{"tools": ["echo"]}],
    )
    runtime = runtime_for(project)
    try:
        reply = await runtime.run(AgentRequest(agent="narrow", message="x", session_key="s"))
    finally:
        await runtime.aclose()
    denied = [event for event in reply.trace if event.type == "tool_denied"]
    assert [event.name for event in denied] == ["tools__fail"]
    assert "not granted to agent 'narrow'" in (denied[0].reason or "")
    results = {event.name: event for event in reply.trace if event.type == "tool_result"}
    assert results["tools__fail"].is_error and "refused" in (results["tools__fail"].content or "")
    assert results["tools__fail"].call_id == denied[0].call_id
    assert results["tools__echo"].content == "allowed"
    assert "answered anyway" in reply.text


async def test_a_failing_tool_is_an_error_result_for_the_model_not_a_failed_turn(project: ProjectDir) -> None:
    project.scripted_agent("a", {"tool_calls": [call("tools__fail", reason="db down")]}, answer(0.4), tools=["tools"])
    runtime = runtime_for(project)
    try:
        reply = await runtime.run(AgentRequest(agent="a", message="x", session_key="s"))
    finally:
        await runtime.aclose()
    (result,) = [event for event in reply.trace if event.type == "tool_result"]
    assert result.is_error and "fail" in (result.content or "")


async def test_a_tool_error_s_message_reaches_the_model(project: ProjectDir) -> None:
    project.scripted_agent(
        "a", {"tool_calls": [call("tools__refuse", reason="db-7 is read-only")]}, answer(0.4), tools=["tools"]
    )
    runtime = runtime_for(project)
    try:
        reply = await runtime.run(AgentRequest(agent="a", message="x", session_key="s"))
    finally:
        await runtime.aclose()
    (result,) = [event for event in reply.trace if event.type == "tool_result"]
    assert result.is_error and result.content == "Error executing tool refuse: db-7 is read-only"


async def test_a_tool_server_that_cannot_start_is_reported_to_the_agent_with_its_stderr(project: ProjectDir) -> None:
    project.scripted_agent("a", {"tool_calls": [call("broken__echo", text="x")]}, answer(0.3), tools=["broken"])
    servers = {"broken": {"command": sys.executable, "args": [str(TOOL_SERVER), "--crash"]}}
    runtime = runtime_for(project, servers)
    try:
        reply = await runtime.run(AgentRequest(agent="a", message="x", session_key="s"))
    finally:
        await runtime.aclose()
    (result,) = [event for event in reply.trace if event.type == "tool_result"]
    assert result.is_error
    assert "tool server 'broken'" in (result.content or "") and "missing credentials" in (result.content or "")


async def test_the_last_allowed_turn_offers_no_tools_so_the_agent_answers(project: ProjectDir) -> None:
    project.scripted_agent(
        "busy",
        *[{"tool_calls": [call("tools__echo", text=f"round {n}")]} for n in range(5)],
        answer(0.7, "answered at the limit"),
        tools=["tools"],
    )
    runtime = runtime_for(project, max_agent_iterations=3)
    try:
        reply = await runtime.run(AgentRequest(agent="busy", message="x", session_key="s"))
    finally:
        await runtime.aclose()
    assert [event.type for event in reply.trace].count("llm_call") == 3
    assert [event.type for event in reply.trace].count("tool_call") == 2
    assert "answered at the limit" in reply.text


async def test_a_model_that_ignores_the_limit_fails_clearly(project: ProjectDir) -> None:
    def stubborn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart("tools__echo", {"text": "again"})])

    project.agent("stubborn", {"model": "openai/gpt-4.1", "tools": ["tools"], "max_iterations": 2})
    agents, _ = load_agents(project.root / "agents")
    runtime = EmbeddedRuntime(
        agents,
        ServiceSpec.model_validate({"mcp_servers": tool_server_config()}),
        models=lambda agent, name: ResolvedModel(FunctionModel(stubborn), "fake", "fake"),
    )
    try:
        with pytest.raises(AgentRuntimeError) as raised:
            await runtime.run(AgentRequest(agent="stubborn", message="x", session_key="s"))
    finally:
        await runtime.aclose()
    assert raised.value.code == "max_iterations"
    assert raised.value.details is not None and len(raised.value.details.trace) > 0


async def test_a_turn_past_its_timeout_is_stopped_and_keeps_its_trace(project: ProjectDir) -> None:
    project.scripted_agent(
        "slow", {"tool_calls": [call("tools__echo", text="hi")]}, {**answer(0.9), "delay_seconds": 5}
    )
    runtime = runtime_for(project)
    try:
        with pytest.raises(AgentRuntimeError) as raised:
            await runtime.run(AgentRequest(agent="slow", message="x", session_key="s", timeout_seconds=0.5))
    finally:
        await runtime.aclose()
    assert raised.value.code == "timeout" and "0.5s" in raised.value.message
    assert raised.value.details is not None
    assert [event.type for event in raised.value.details.trace][:1] == ["llm_call"]


async def test_cases_pick_the_script_by_what_the_prompt_contains(project: ProjectDir) -> None:
    project.agent(
        "triage",
        {
            "model": "scripted",
            "script": [answer(0.5, "default")],
            "cases": [{"prompt_contains": "checkout", "script": [answer(0.95, "checkout case")]}],
        },
    )
    runtime = runtime_for(project)
    try:
        matched = await runtime.run(AgentRequest(agent="triage", message="alert on checkout", session_key="s"))
        default = await runtime.run(AgentRequest(agent="triage", message="alert on cart", session_key="s"))
    finally:
        await runtime.aclose()
    assert "checkout case" in matched.text and "default" in default.text


async def test_an_unknown_agent_is_a_typed_error(project: ProjectDir, tmp_path: Path) -> None:
    project.scripted_agent("known", answer(0.9))
    runtime = runtime_for(project)
    with pytest.raises(AgentRuntimeError) as raised:
        await runtime.run(AgentRequest(agent="unknown", message="x", session_key="s"))
    await runtime.aclose()
    assert raised.value.code == "unknown_agent" and "known" in raised.value.message
