"""The agent runtime embedded in this process (the default `gateway: {mode: embedded}`).

The model layer (pydantic-ai) is imported on the first agent turn, or by `warm_up()`: a process
that only serves pages, or is starting, does not wait half a second for it. A service warms up
right after it starts: the model layer, every agent's models (each provider's SDK and HTTP client,
and a rehearsal of its first request) and the tool servers, so that a run that arrives once it is
warm is nearly as quick as the tenth.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from vectorstep.clock import Clock, SystemClock
from vectorstep.errors import AgentRuntimeError
from vectorstep.runtime.mcp_servers import ToolInfo
from vectorstep.runtime.protocol import AgentReply, AgentRequest, TraceListener
from vectorstep.runtime.tool_policy import ToolPolicy
from vectorstep.runtime.toolbox import ToolHub
from vectorstep.spec.agent_files import AgentDefinition
from vectorstep.spec.service import LimitsSpec, ServiceSpec

if TYPE_CHECKING:
    from vectorstep.runtime.models import ModelFactory, ModelResolver

log = logging.getLogger(__name__)
TURN_MODULE = "vectorstep.runtime.embedded_turn"


class EmbeddedRuntime:
    def __init__(
        self,
        agents: Mapping[str, AgentDefinition],
        service: ServiceSpec,
        *,
        clock: Clock | None = None,
        models: ModelResolver | None = None,
        base_dir: Path | None = None,  # where `python_tools` modules are imported from
    ) -> None:
        self._agents = agents
        self._models = models
        self._factory: ModelFactory | None = None  # the models this runtime built itself, and closes
        self._service = service
        self._limits: LimitsSpec = service.limits
        self._hub = ToolHub(service.mcp_servers, service.python_tools, base_dir)
        self._policy = ToolPolicy(service.tool_policy)
        self._clock = clock or SystemClock()
        self._slots: asyncio.Semaphore | None = None

    def agent(self, name: str) -> AgentDefinition:
        found = self._agents.get(name)
        if found is None:
            known = ", ".join(sorted(self._agents)) or "none"
            raise AgentRuntimeError(f"no agent {name!r} on this runtime (agents: {known})", code="unknown_agent")
        return found

    def health(self) -> dict[str, object]:
        return {"mode": "embedded", "tool_servers": self._hub.status()}

    def tool_status(self) -> dict[str, dict[str, Any]]:
        return self._hub.status()

    async def tool_listing(self) -> dict[str, list[ToolInfo]]:
        return await self._hub.listing()

    async def warm_up(self) -> None:
        """Load the model layer and build every agent's models in a worker thread, rehearse each
        provider's first request (rehearsal.py), then start the tool servers, so the first run does
        not pay for them. What cannot be built or started here fails on first use, where the run says why."""
        turn = await asyncio.to_thread(importlib.import_module, TURN_MODULE)
        await asyncio.to_thread(_build_models, self._resolver(turn), list(self._agents.values()))
        factory = self._factory
        if factory is not None:
            # Its own loop in the worker thread: the service's loop stays free to answer meanwhile. The
            # coroutine is made there too, so a warm-up cancelled before the thread starts leaves none behind.
            rehearsed = await asyncio.to_thread(lambda: asyncio.run(factory.rehearse()))
            for model, failure in rehearsed.items():
                if failure is not None:
                    log.debug("rehearsing %s failed (its first request will be slower): %s", model, failure)
        # After the import, not beside it: started together, they slow the service's own start.
        listed = await self._hub.listing()
        if any(listed.values()):
            # The MCP client checks a tool's structured result with jsonschema, which it imports on the
            # first tool call (~30 ms that the first run would otherwise pay).
            await asyncio.to_thread(importlib.import_module, "jsonschema")

    async def run(self, request: AgentRequest, on_event: TraceListener | None = None) -> AgentReply:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._limits.max_concurrent_runs)
        agent = self.agent(request.agent)
        turn = importlib.import_module(TURN_MODULE)
        models = self._resolver(turn)
        async with self._slots:
            reply: AgentReply = await turn.answer(
                agent,
                request,
                on_event,
                hub=self._hub,
                policy=self._policy,
                limits=self._limits,
                clock=self._clock,
                models=models,
            )
            return reply

    def _resolver(self, turn: ModuleType) -> ModelResolver:
        if self._models is None:
            self._models = self._factory = turn.model_factory(self._service)
        return self._models

    async def aclose(self) -> None:
        await self._hub.aclose()
        if self._factory is not None:
            await self._factory.aclose()


def _build_models(models: ModelResolver, agents: list[AgentDefinition]) -> None:
    for agent in agents:
        for name in dict.fromkeys([agent.spec.model, *agent.spec.model_fallbacks]):
            with contextlib.suppress(AgentRuntimeError):
                models(agent, name)
