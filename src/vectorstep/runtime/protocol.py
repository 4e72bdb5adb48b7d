"""What the agent runtime is asked, what it answers, and the interface both runtimes share."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from vectorstep.domain.execution import Usage
from vectorstep.domain.trace import TraceEvent

TraceListener = Callable[[TraceEvent], None]


@dataclass(frozen=True)
class AgentRequest:
    agent: str
    message: str
    session_key: str
    model: str | None = None
    thinking_level: str | None = None
    trace_tool_result_max: int | None = None
    timeout_seconds: float | None = None


@dataclass(frozen=True)
class AgentReply:
    text: str
    trace: tuple[TraceEvent, ...]
    usage: Usage
    model: str
    provider: str
    agent_version: str
    duration_ms: float
    stop_reason: str | None = None
    truncated: bool = False
    full_tool_results: Mapping[str, str] = field(default_factory=dict, repr=False)


class AgentRuntime(Protocol):
    """Runs one agent turn: embedded in this process, or on a remote gateway."""

    async def run(self, request: AgentRequest, on_event: TraceListener | None = None) -> AgentReply: ...

    def health(self) -> dict[str, object]:
        """What a health check shows of the runtime: its mode and its tool servers."""
        ...

    async def warm_up(self) -> None:
        """Load what the first turn would otherwise wait for (called once a service is up)."""
        ...

    async def aclose(self) -> None: ...
