"""The operator's `tool_policy`: ordered allow/deny rules over every agent's tool calls; the first match decides.

It sits on top of each agent's own `tools:` grants (a call must pass both). A denied call is not
made: the model gets an error result saying why, the trace records `tool_denied`, and the turn
goes on.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Mapping
from dataclasses import dataclass

from vectorstep.spec.patterns import compile_pattern
from vectorstep.spec.service import ToolMatchSpec, ToolPolicySpec


@dataclass(frozen=True)
class PolicyDenial:
    reason: str


class ToolPolicy:
    def __init__(self, spec: ToolPolicySpec) -> None:
        self._spec = spec
        self._patterns = {
            index: compile_pattern(rule_match.input_regex)
            for index, rule in enumerate(spec.rules)
            if (rule_match := rule.allow or rule.deny) is not None and rule_match.input_regex is not None
        }

    def decide(self, server: str, tool: str, agent: str, arguments: Mapping[str, object]) -> PolicyDenial | None:
        text = json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False) if self._patterns else ""
        for index, rule in enumerate(self._spec.rules):
            condition = rule.allow or rule.deny
            assert condition is not None  # the spec holds exactly one
            pattern = self._patterns.get(index)
            if _matches(condition, server, tool, agent) and (pattern is None or pattern.search(text)):
                return None if rule.allow is not None else PolicyDenial(f"{rule.reason} (tool_policy rule {index + 1})")
        if self._spec.default == "deny":
            return PolicyDenial("tool_policy denies tools no rule allows (default: deny)")
        return None

    def shows(self, server: str, tool: str, agent: str) -> bool:
        """Whether the model is offered the tool: a rule that depends on the arguments is decided at the call."""
        for index, rule in enumerate(self._spec.rules):
            condition = rule.allow or rule.deny
            assert condition is not None
            if not _matches(condition, server, tool, agent):
                continue
            if rule.allow is not None:
                return True
            if index not in self._patterns:
                return False
        return self._spec.default == "allow"


def _matches(condition: ToolMatchSpec, server: str, tool: str, agent: str) -> bool:
    return (
        (condition.server is None or condition.server == server)
        and (condition.tool is None or fnmatch.fnmatchcase(tool, condition.tool))
        and (condition.agent is None or fnmatch.fnmatchcase(agent, condition.agent))
    )
