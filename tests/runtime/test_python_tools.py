"""Python function tools: a function with type hints becomes a tool, granted and policed like any other."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RecordingServer
from tests.fixtures.fake_providers import openai_text
from vectorstep.runtime.embedded import EmbeddedRuntime
from vectorstep.runtime.protocol import AgentRequest
from vectorstep.spec.agent_files import load_agents
from vectorstep.spec.project import check_agents
from vectorstep.spec.service import ServiceSpec
from vectorstep.spec.settings import load_settings
from vectorstep.testing import ProjectDir, answer

MODULE = '''
import asyncio


def restart_count(pod: str, namespace: str = "default") -> dict:
    """How often a pod restarted in the last hour."""
    if pod == "boom":
        raise RuntimeError("the cluster API answered 503")
    return {"pod": pod, "namespace": namespace, "restarts": 7}


async def slow_lookup(seconds: float) -> str:
    """Wait, then answer."""
    await asyncio.sleep(seconds)
    return "done"
'''


def runtime(project: ProjectDir, **limits: float) -> EmbeddedRuntime:
    (project.root / "opstools").mkdir(exist_ok=True)
    (project.root / "opstools" / "k8s_helpers.py").write_text(MODULE, encoding="utf-8")
    agents, problems = load_agents(project.root / "agents")
    assert problems == []
    spec = ServiceSpec.model_validate(
        {
            "python_tools": {"ops": ["opstools.k8s_helpers:restart_count", "opstools.k8s_helpers:slow_lookup"]},
            "limits": limits,
        }
    )
    return EmbeddedRuntime(agents, spec, base_dir=project.root)


async def test_a_function_is_a_tool_with_its_signature_as_schema(project: ProjectDir) -> None:
    project.scripted_agent(
        "investigator",
        {
            "tool_calls": [
                {"name": "ops__restart_count", "args": {"pod": "checkout-7d9f"}},
                {"name": "ops__restart_count", "args": {"pod": "boom"}},
                {"name": "ops__restart_count", "args": {"namespace": "shop"}},
                {"name": "ops__slow_lookup", "args": {"seconds": 5}},
            ]
        },
        answer(0.7, "checkout-7d9f restarted 7 times"),
        tools=["ops"],
    )
    served = runtime(project, mcp_tool_timeout_seconds=0.2)
    try:
        reply = await served.run(AgentRequest("investigator", "look", "agent:investigator:1"))
    finally:
        await served.aclose()
    by_call = {event.call_id: event for event in reply.trace if event.type == "tool_result"}
    results = [by_call[event.call_id] for event in reply.trace if event.type == "tool_call"]  # in call order
    assert results[0].content == '{"pod": "checkout-7d9f", "namespace": "default", "restarts": 7}'
    assert not results[0].is_error
    assert results[1].is_error and results[1].content == "RuntimeError: the cluster API answered 503"
    assert results[2].is_error and "invalid arguments for ops__restart_count: pod: Field required" in (
        results[2].content or ""
    )
    assert results[3].is_error and results[3].content == "tool ops__slow_lookup timed out after 0.2s"


async def test_the_model_is_shown_the_signature_and_docstring(project: ProjectDir) -> None:
    provider = RecordingServer()
    provider.responses = [openai_text('{"confidence": 0.5, "summary": "s", "next_step_context": ""}')]
    project.agent("investigator", {"model": "local/any", "tools": ["ops"]})
    (project.root / "opstools").mkdir(exist_ok=True)
    (project.root / "opstools" / "k8s_helpers.py").write_text(MODULE, encoding="utf-8")
    agents, _ = load_agents(project.root / "agents")
    spec = ServiceSpec.model_validate(
        {
            "python_tools": {"ops": ["opstools.k8s_helpers:restart_count"]},
            "providers": {"local": {"base_url": f"{provider.url}/v1"}},
        }
    )
    served = EmbeddedRuntime(agents, spec, base_dir=project.root)
    try:
        await served.run(AgentRequest("investigator", "look", "agent:investigator:1"))
    finally:
        await served.aclose()
        provider.close()
    (tool,) = provider.requests[0]["body"]["tools"]
    function = tool["function"]
    assert function["name"] == "ops__restart_count"
    assert function["description"] == "How often a pod restarted in the last hour."
    assert function["parameters"]["required"] == ["pod"]
    assert function["parameters"]["properties"]["namespace"]["default"] == "default"


def test_a_group_is_granted_like_a_server_and_checked_at_load(project: ProjectDir) -> None:
    project.agent("a", {"model": "scripted", "script": [{"answer": "x"}], "tools": ["ops", "opz"]})
    project.settings({"python_tools": {"ops": ["opstools.k8s_helpers:restart_count"]}})
    agents, _ = load_agents(project.root / "agents")
    (problem,) = check_agents(agents, load_settings(project.config))
    assert "tool server 'opz' is not configured" in problem.message and "did you mean 'ops'" in problem.message


@pytest.mark.parametrize(
    ("tools", "message"),
    [
        ({"ops": ["not a reference"]}, "is not `package.module:function`"),
        ({"metrics": ["m:f"]}, "either an MCP server or a python_tools group"),
    ],
)
def test_bad_python_tools_settings_are_refused(tools: dict[str, list[str]], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ServiceSpec.model_validate({"python_tools": tools, "mcp_servers": {"metrics": {"command": "x"}}})


async def test_a_module_that_cannot_be_imported_is_reported(project: ProjectDir, tmp_path: Path) -> None:
    project.scripted_agent(
        "investigator", {"tool_calls": [{"name": "ops__f", "args": {}}]}, answer(0.5, "no tools"), tools=["ops"]
    )
    agents, _ = load_agents(project.root / "agents")
    served = EmbeddedRuntime(agents, ServiceSpec.model_validate({"python_tools": {"ops": ["missing_mod:f"]}}))
    try:
        reply = await served.run(AgentRequest("investigator", "look", "agent:investigator:1"))
        status = served.health()["tool_servers"]
    finally:
        await served.aclose()
    result = next(event for event in reply.trace if event.type == "tool_result")
    assert result.is_error and "cannot import 'missing_mod'" in (result.content or "")
    assert status["ops"]["state"] == "failing"  # type: ignore[index]
