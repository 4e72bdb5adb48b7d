"""Real model providers, against local servers that speak their wire formats: tools, usage, retries, fallbacks."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import RecordingServer, tool_server_config
from tests.fixtures.fake_providers import (
    anthropic_error,
    anthropic_text,
    openai_error,
    openai_text,
    openai_tool_call,
)
from vectorstep.errors import AgentRuntimeError
from vectorstep.runtime.embedded import EmbeddedRuntime
from vectorstep.runtime.models import ModelFactory
from vectorstep.runtime.protocol import AgentReply, AgentRequest
from vectorstep.spec.agent_files import load_agents
from vectorstep.spec.project import check_agents, load_project
from vectorstep.spec.service import ServiceSpec
from vectorstep.spec.settings import load_settings
from vectorstep.testing import FakeClock, ProjectDir

ANSWER = json.dumps({"confidence": 0.8, "summary": "deploy 8f3a raised 5xx", "next_step_context": "roll back"})


@pytest.fixture
def openai_server() -> Iterator[RecordingServer]:
    server = RecordingServer()
    yield server
    server.close()


@pytest.fixture
def anthropic_server() -> Iterator[RecordingServer]:
    server = RecordingServer()
    yield server
    server.close()


async def ask(
    project: ProjectDir,
    agent: dict[str, Any],
    providers: dict[str, Any],
    clock: FakeClock | None = None,
    **limits: Any,
) -> AgentReply:
    project.agent("investigator", agent, instructions="You investigate alerts.")
    agents, problems = load_agents(project.root / "agents")
    assert problems == []
    spec = ServiceSpec.model_validate(
        {"providers": providers, "mcp_servers": tool_server_config(), "limits": {"llm_retry_attempts": 2, **limits}}
    )
    runtime = EmbeddedRuntime(agents, spec, clock=clock or FakeClock())
    try:
        return await runtime.run(AgentRequest("investigator", "Why is checkout failing?", "agent:investigator:1"))
    finally:
        await runtime.aclose()


async def test_an_openai_model_calls_a_tool_and_answers(project: ProjectDir, openai_server: RecordingServer) -> None:
    openai_server.responses = [
        openai_tool_call("tools__echo", {"text": "5xx ratio 0.042"}),
        openai_text(ANSWER, usage=(300, 40), cached=256),
    ]
    reply = await ask(
        project,
        {"model": "openai/gpt-4.1", "tools": ["tools"], "max_tokens": 900, "temperature": 0.2},
        {"openai": {"api_key": "sk-test-key", "base_url": f"{openai_server.url}/v1", "headers": {"X-Team": "sre"}}},
    )
    assert reply.text == ANSWER
    assert [event.type for event in reply.trace] == ["llm_call", "tool_call", "tool_result", "llm_call", "text"]
    assert reply.trace[2].content == "5xx ratio 0.042"
    assert reply.provider == "openai" and reply.stop_reason == "stop" and not reply.truncated
    usage = reply.usage.by_model["served-model"]
    assert (usage.input_tokens, usage.output_tokens, usage.cached_input_tokens, usage.requests) == (380, 50, 256, 2)
    first, second = openai_server.requests
    headers = {name.lower(): value for name, value in first["headers"].items()}
    assert headers["authorization"] == "Bearer sk-test-key" and headers["x-team"] == "sre"
    assert first["body"]["model"] == "gpt-4.1"
    assert first["body"]["max_completion_tokens"] == 900 or first["body"].get("max_tokens") == 900
    assert first["body"]["temperature"] == 0.2
    assert first["body"]["messages"][0] == {"role": "system", "content": "You investigate alerts."}
    assert {"tools__echo", "tools__long_text"} <= {tool["function"]["name"] for tool in first["body"]["tools"]}
    tool_message = second["body"]["messages"][-1]
    assert tool_message == {"role": "tool", "tool_call_id": "call_1", "content": "5xx ratio 0.042"}


async def test_the_models_of_one_provider_share_one_pooled_connection(project: ProjectDir) -> None:
    server = RecordingServer(keep_alive=True)
    server.responses = [openai_text(ANSWER) for _ in range(3)]
    project.agent("investigator", {"model": "openai/gpt-4.1"}, instructions="You investigate alerts.")
    project.agent("reviewer", {"model": "openai/gpt-4.1-mini"}, instructions="You review.")
    agents, _ = load_agents(project.root / "agents")
    spec = ServiceSpec.model_validate({"providers": {"openai": {"api_key": "sk-test", "base_url": f"{server.url}/v1"}}})
    runtime = EmbeddedRuntime(agents, spec, clock=FakeClock())
    try:
        for agent in ("investigator", "reviewer", "investigator"):
            reply = await runtime.run(AgentRequest(agent, "Why is checkout failing?", f"agent:{agent}:1"))
            assert reply.text == ANSWER
    finally:
        await runtime.aclose()
        server.close()
    assert [request["body"]["model"] for request in server.requests] == ["gpt-4.1", "gpt-4.1-mini", "gpt-4.1"]
    assert len({request["client_port"] for request in server.requests}) == 1  # no new client, no new connection


async def test_warming_up_rehearses_each_provider_in_process_and_sends_nothing(
    project: ProjectDir, openai_server: RecordingServer, anthropic_server: RecordingServer
) -> None:
    """A fresh service's first request would pay for what the SDKs build on first use; the warm-up
    rehearses one turn with a tool call and one with text per provider, answered in process."""
    project.agent("investigator", {"model": "openai/gpt-4.1"}, instructions="You investigate alerts.")
    project.agent("reviewer", {"model": "anthropic/claude-test-model"}, instructions="You review.")
    agents, _ = load_agents(project.root / "agents")
    providers = {
        "openai": {"api_key": "sk-test", "base_url": f"{openai_server.url}/v1"},
        "anthropic": {"api_key": "sk-ant-test", "base_url": anthropic_server.url},
    }
    factory = ModelFactory(ServiceSpec.model_validate({"providers": providers}).providers)
    for agent in agents.values():
        factory(agent, agent.spec.model)
    try:
        assert await factory.rehearse() == {"openai/gpt-4.1": None, "anthropic/claude-test-model": None}
    finally:
        await factory.aclose()
    runtime = EmbeddedRuntime(agents, ServiceSpec.model_validate({"providers": providers}), clock=FakeClock())
    try:
        await runtime.warm_up()
        assert openai_server.requests == [] and anthropic_server.requests == []
        # the agents' own models still send to their provider
        openai_server.responses = [openai_text(ANSWER)]
        anthropic_server.responses = [anthropic_text(ANSWER)]
        for agent in ("investigator", "reviewer"):
            reply = await runtime.run(AgentRequest(agent, "Why is checkout failing?", f"agent:{agent}:1"))
            assert reply.text == ANSWER
    finally:
        await runtime.aclose()
    assert [request["body"]["model"] for request in openai_server.requests] == ["gpt-4.1"]
    assert [request["body"]["model"] for request in anthropic_server.requests] == ["claude-test-model"]


async def test_a_503_is_retried_and_retry_after_is_honoured(
    project: ProjectDir, openai_server: RecordingServer
) -> None:
    openai_server.responses = [
        openai_error(503, "overloaded, try again"),
        openai_error(429, "slow down", retry_after="7"),
        openai_text(ANSWER),
    ]
    clock = FakeClock()
    reply = await ask(
        project,
        {"model": "openai/gpt-4.1"},
        {"openai": {"api_key": "sk-test-key", "base_url": f"{openai_server.url}/v1"}},
        clock=clock,
        llm_retry_base_delay_seconds=1.0,
    )
    retries = [event for event in reply.trace if event.type == "llm_retry"]
    assert len(retries) == 2 and len(openai_server.requests) == 3
    assert "(503)" in (retries[0].reason or "") and "retry 1 of 2" in (retries[0].reason or "")
    assert 0.5 <= clock.sleeps[0] <= 1.0  # 1 s base, with jitter
    assert clock.sleeps[1] == 7.0  # what Retry-After asked for
    assert reply.text == ANSWER


async def test_a_failing_model_falls_back_to_another_provider_with_the_conversation_so_far(
    project: ProjectDir, openai_server: RecordingServer, anthropic_server: RecordingServer
) -> None:
    openai_server.responses = [
        openai_tool_call("tools__echo", {"text": "5xx ratio 0.042"}),
        openai_error(500, "internal error"),
        openai_error(500, "internal error"),
    ]
    anthropic_server.responses = [anthropic_text(ANSWER)]
    reply = await ask(
        project,
        {"model": "openai/gpt-4.1", "model_fallbacks": ["anthropic/claude-test-model"], "tools": ["tools"]},
        {
            "openai": {"api_key": "sk-test-key", "base_url": f"{openai_server.url}/v1"},
            "anthropic": {"api_key": "ant-test-key", "base_url": anthropic_server.url},
        },
        llm_retry_attempts=1,
    )
    kinds = [event.type for event in reply.trace]
    assert kinds == ["llm_call", "tool_call", "tool_result", "llm_retry", "model_fallback", "llm_call", "text"]
    fallback = reply.trace[4]
    assert fallback.model == "anthropic/claude-test-model" and "openai/gpt-4.1 failed" in (fallback.reason or "")
    assert reply.provider == "anthropic" and reply.text == ANSWER
    sent = anthropic_server.requests[0]
    assert any("ant-test-key" in value for value in sent["headers"].values())  # x-api-key or a Bearer token
    assert sent["body"]["system"] == "You investigate alerts." or "You investigate alerts." in json.dumps(
        sent["body"]["system"]
    )
    user, assistant, tool_result = sent["body"]["messages"]
    assert "Why is checkout failing?" in json.dumps(user)
    assert assistant["content"][0]["type"] == "tool_use" and assistant["content"][0]["id"] == "call_1"
    assert tool_result["content"][0]["type"] == "tool_result" and tool_result["content"][0]["tool_use_id"] == "call_1"
    assert set(reply.usage.by_model) == {"served-model", "claude-served"}


async def test_every_model_failing_is_a_model_error(project: ProjectDir, anthropic_server: RecordingServer) -> None:
    anthropic_server.responses = [anthropic_error(401, "invalid x-api-key")]
    with pytest.raises(AgentRuntimeError) as raised:
        await ask(
            project,
            {"model": "anthropic/claude-test-model"},
            {"anthropic": {"api_key": "wrong-key", "base_url": anthropic_server.url}},
        )
    assert raised.value.code == "model_error"
    assert "anthropic/claude-test-model" in raised.value.message and "invalid x-api-key" in raised.value.message
    assert len(anthropic_server.requests) == 1  # a bad key is not retried


async def test_an_answer_cut_by_max_tokens_is_flagged(project: ProjectDir, openai_server: RecordingServer) -> None:
    openai_server.responses = [openai_text('{"confidence": 0.9, "summary": "the cause is', finish="length")]
    reply = await ask(
        project,
        {"model": "openai/gpt-4.1", "max_tokens": 10},
        {"openai": {"api_key": "sk-test-key", "base_url": f"{openai_server.url}/v1"}},
    )
    assert reply.truncated and reply.stop_reason == "length"


async def test_any_openai_compatible_server_by_its_base_url(
    project: ProjectDir, openai_server: RecordingServer
) -> None:
    openai_server.responses = [openai_text(ANSWER)]
    reply = await ask(
        project,
        {"model": "vllm/meta-llama/Llama-3.1-8B-Instruct"},
        {"vllm": {"base_url": f"{openai_server.url}/v1"}},
    )
    assert reply.provider == "vllm" and reply.text == ANSWER
    assert openai_server.requests[0]["body"]["model"] == "meta-llama/Llama-3.1-8B-Instruct"


async def test_ollama_runs_locally_without_a_key(project: ProjectDir, openai_server: RecordingServer) -> None:
    openai_server.responses = [openai_text(ANSWER)]
    reply = await ask(project, {"model": "ollama/qwen3:8b"}, {"ollama": {"base_url": f"{openai_server.url}/v1"}})
    assert reply.provider == "ollama" and openai_server.requests[0]["body"]["model"] == "qwen3:8b"


def test_agents_are_checked_against_the_providers_at_load(project: ProjectDir) -> None:
    project.agent("a-unknown", {"model": "mistral-cloud/large"})
    project.agent(
        "b-keyless", {"model": "scripted", "script": [{"answer": "x"}], "model_fallbacks": ["openai/gpt-4.1"]}
    )
    project.agent("c-azure", {"model": "azure/my-deployment"})
    project.agent("d-fine", {"model": "vllm/llama"})
    project.settings({"providers": {"vllm": {"base_url": "http://127.0.0.1:8000/v1"}, "azure": {"api_key": "k"}}})
    agents, _ = load_agents(project.root / "agents")
    problems = {
        (problem.file.split("/")[-2], problem.key_path): problem
        for problem in check_agents(agents, load_settings(project.config))
    }
    assert set(problems) == {("a-unknown", "model"), ("b-keyless", "model_fallbacks[0]"), ("c-azure", "model")}
    assert "unknown model 'mistral-cloud/large'" in problems[("a-unknown", "model")].message
    assert "needs `providers.openai.api_key`" in problems[("b-keyless", "model_fallbacks[0]")].message
    assert "`api_version`" in problems[("c-azure", "model")].message
    assert problems[("a-unknown", "model")].line == 1


async def test_thinking_level_reaches_the_provider(project: ProjectDir, anthropic_server: RecordingServer) -> None:
    anthropic_server.responses = [anthropic_text(ANSWER)]
    await ask(
        project,
        {"model": "anthropic/claude-test-model", "thinking_level": "high", "max_tokens": 20000},
        {"anthropic": {"api_key": "ant-test-key", "base_url": anthropic_server.url}},
    )
    thinking = anthropic_server.requests[0]["body"]["thinking"]
    assert thinking["type"] in ("enabled", "adaptive")


def test_thinking_for_a_server_that_ignores_it_is_a_warning_at_load(project: ProjectDir) -> None:
    project.agent("local", {"model": "vllm/llama", "thinking_level": "high"})
    project.settings({"providers": {"vllm": {"base_url": "http://127.0.0.1:8000/v1"}}})
    loaded = load_project(load_settings(project.config))
    assert loaded.problems == ()
    (warning,) = loaded.warnings
    assert warning.key_path == "thinking_level" and "not sent to vllm/llama" in warning.message
