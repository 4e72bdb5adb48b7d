"""The tools one agent may use: what it is shown, and the grant check made when it calls one."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from vectorstep.errors import ToolError
from vectorstep.runtime.mcp_servers import McpConnection, ToolInfo, ToolOutcome
from vectorstep.runtime.python_tools import PythonToolGroup
from vectorstep.runtime.tool_policy import ToolPolicy
from vectorstep.spec.service import HttpServerSpec, StdioServerSpec

log = logging.getLogger(__name__)

SEPARATOR = "__"


class ToolSource(Protocol):
    """An MCP server or a group of Python functions: what an agent's `tools:` can grant."""

    async def tools(self) -> list[ToolInfo]: ...

    async def call(self, tool: str, arguments: dict[str, Any], timeout_seconds: float) -> ToolOutcome: ...

    def status(self) -> dict[str, Any]: ...

    async def aclose(self) -> None: ...


class ToolHub:
    """Every configured tool source, started on first use and closed once at the end."""

    def __init__(
        self,
        servers: Mapping[str, StdioServerSpec | HttpServerSpec],
        python_tools: Mapping[str, Sequence[str]] | None = None,
        base_dir: Path | None = None,
    ) -> None:
        self._connections: dict[str, ToolSource] = {name: McpConnection(name, spec) for name, spec in servers.items()}
        for name, references in (python_tools or {}).items():
            self._connections[name] = PythonToolGroup(name, references, base_dir)

    def connection(self, server: str) -> ToolSource | None:
        return self._connections.get(server)

    async def listing(self) -> dict[str, list[ToolInfo]]:
        """Every source's tools, starting those not started; one that cannot start lists none."""
        listed: dict[str, list[ToolInfo]] = {}
        for name, connection in self._connections.items():
            try:
                listed[name] = await connection.tools()
            except ToolError as error:
                log.warning("tool server %s lists no tools: %s", name, error)
                listed[name] = []
        return listed

    def status(self) -> dict[str, dict[str, Any]]:
        return {name: connection.status() for name, connection in self._connections.items()}

    async def aclose(self) -> None:
        for connection in self._connections.values():
            await connection.aclose()


@dataclass(frozen=True)
class Denial:
    reason: str


class Toolbox:
    """An agent's view of the hub: only granted tools are listed, and each call is checked again."""

    def __init__(
        self,
        hub: ToolHub,
        agent: str,
        grants: Mapping[str, frozenset[str] | None],
        *,
        tool_timeout_seconds: float,
        policy: ToolPolicy | None = None,
    ) -> None:
        self._hub = hub
        self._agent = agent
        self._grants = grants
        self._timeout = tool_timeout_seconds
        self._policy = policy
        self._listing: list[ToolInfo] | None = None
        self.unavailable: dict[str, str] = {}  # server → why its tools are missing from the listing

    async def tools(self) -> list[ToolInfo]:
        """The granted tools; a server that cannot start is noted and left out, not fatal."""
        if self._listing is None:
            # Servers start concurrently: a cold start costs the slowest server, not their sum.
            listings = await asyncio.gather(*(self._granted_on(server) for server in self._grants))
            self._listing = [tool for listing in listings for tool in listing]
        return self._listing

    async def _granted_on(self, server: str) -> list[ToolInfo]:
        connection = self._hub.connection(server)
        if connection is None:
            self.unavailable[server] = "not configured in mcp_servers"
            return []
        try:
            tools = await connection.tools()
        except ToolError as error:
            self.unavailable[server] = str(error)
            return []
        allowed = self._grants[server]
        policy = self._policy
        return [
            tool
            for tool in tools
            if (allowed is None or tool.name in allowed)
            and (policy is None or policy.shows(server, tool.name, self._agent))
        ]

    def check(self, qualified_name: str, arguments: Mapping[str, object]) -> Denial | None:
        """Refuse a call the agent's `tools:` does not grant or `tool_policy` denies (whatever the model was shown)."""
        server, separator, tool = qualified_name.partition(SEPARATOR)
        if not separator or server not in self._grants:
            granted = ", ".join(sorted(self._grants)) or "none"
            return Denial(
                f"tool {qualified_name!r} is not granted to agent {self._agent!r} (granted servers: {granted})"
            )
        allowed = self._grants[server]
        if allowed is not None and tool not in allowed:
            return Denial(
                f"tool {qualified_name!r} is not granted to agent {self._agent!r} "
                f"(granted on {server}: {', '.join(sorted(allowed))})"
            )
        if self._policy is not None and (refused := self._policy.decide(server, tool, self._agent, arguments)):
            return Denial(refused.reason)
        return None

    async def call(self, qualified_name: str, arguments: dict[str, object]) -> ToolOutcome:
        server, _, tool = qualified_name.partition(SEPARATOR)
        connection = self._hub.connection(server)
        if connection is None:
            return ToolOutcome(f"tool server {server!r} is not configured", is_error=True)
        known = {info.qualified_name for info in await self.tools()}
        if qualified_name not in known:
            why = self.unavailable.get(server)
            message = f"tool server {server!r} is unavailable: {why}" if why else f"no tool {qualified_name!r}"
            return ToolOutcome(message, is_error=True)
        try:
            return await connection.call(tool, dict(arguments), self._timeout)
        except ToolError as error:
            return ToolOutcome(str(error), is_error=True)
