"""The operator's tool_policy: first matching rule decides; a denied call is refused and the turn goes on."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import tool_server_config
from vectorstep.runtime.embedded import EmbeddedRuntime
from vectorstep.runtime.protocol import AgentRequest
from vectorstep.runtime.tool_policy import ToolPolicy
from vectorstep.spec.agent_files import load_agents
from vectorstep.spec.service import ServiceSpec, ToolPolicySpec
from vectorstep.testing import ProjectDir, answer

RULES: list[dict[str, Any]] = [
    {"deny": {"server": "kubectl", "tool": "delete*"}, "reason": "agents never delete cluster objects"},
    {"deny": {"server": "kubectl", "input_regex": r'"namespace":\s*"kube-system"'}, "reason": "kube-system is off"},
    {"allow": {"server": "kubectl", "agent": "sre-*"}},
]


@pytest.mark.parametrize(
    ("default", "server", "tool", "agent", "arguments", "denied"),
    [
        pytest.param("allow", "kubectl", "delete_pod", "sre-bot", {}, "agents never delete", id="glob on the tool"),
        pytest.param(
            "allow", "kubectl", "get_pods", "sre-bot", {"namespace": "kube-system"}, "kube-system", id="regex"
        ),
        pytest.param("allow", "kubectl", "get_pods", "sre-bot", {"namespace": "shop"}, None, id="allowed by a rule"),
        pytest.param("deny", "kubectl", "get_pods", "intern", {}, "default: deny", id="no rule, default deny"),
        pytest.param("allow", "metrics", "query", "intern", {}, None, id="no rule, default allow"),
        pytest.param("deny", "kubectl", "get_pods", "sre-1", {"namespace": "shop"}, None, id="allow glob on the agent"),
    ],
)
def test_the_first_matching_rule_decides(
    default: str, server: str, tool: str, agent: str, arguments: dict[str, Any], denied: str | None
) -> None:
    policy = ToolPolicy(ToolPolicySpec.model_validate({"default": default, "rules": RULES}))
    refusal = policy.decide(server, tool, agent, arguments)
    if denied is None:
        assert refusal is None
    else:
        assert refusal is not None and denied in refusal.reason


def test_what_the_model_is_shown() -> None:
    policy = ToolPolicy(ToolPolicySpec.model_validate({"default": "deny", "rules": RULES}))
    assert not policy.shows("kubectl", "delete_pod", "sre-bot")  # denied whatever the arguments
    assert policy.shows("kubectl", "get_pods", "sre-bot")  # the regex rule is decided at the call
    assert not policy.shows("metrics", "query", "sre-bot")  # default deny: only what a rule allows


async def test_a_denied_call_is_refused_recorded_and_the_turn_goes_on(project: ProjectDir) -> None:
    project.scripted_agent(
        "investigator",
        {"tool_calls": [{"name": "tools__echo", "args": {"text": "DROP TABLE runs"}}]},
        answer(0.6, "could not look"),
        tools=["tools"],
    )
    agents, _ = load_agents(project.root / "agents")
    policy = {"rules": [{"deny": {"tool": "echo", "input_regex": "DROP TABLE"}, "reason": "no SQL through echo"}]}
    spec = ServiceSpec.model_validate({"mcp_servers": tool_server_config(), "tool_policy": policy})
    runtime = EmbeddedRuntime(agents, spec)
    try:
        reply = await runtime.run(AgentRequest("investigator", "look", "agent:investigator:1"))
    finally:
        await runtime.aclose()
    kinds = [event.type for event in reply.trace]
    assert kinds == ["llm_call", "tool_call", "tool_denied", "tool_result", "llm_call", "text"]
    assert reply.trace[2].reason == "no SQL through echo (tool_policy rule 1)"
    assert reply.trace[3].is_error and reply.trace[3].content.startswith("Tool call refused: no SQL through echo")
    assert '"summary": "could not look"' in reply.text


def test_a_bad_input_regex_is_refused_at_load() -> None:
    with pytest.raises(ValueError, match=r"input_regex\n  Value error, invalid regular expression"):
        ToolPolicySpec.model_validate({"rules": [{"deny": {"input_regex": "("}, "reason": "x"}]})
