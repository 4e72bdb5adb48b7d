"""Connections to MCP tool servers (stdio), started on first use and shared by every agent turn.

Each connection lives in a task of its own: the MCP client's task group must be entered and left
by the same task, while tool calls arrive from whichever step is running. The `mcp` package is
imported only when a server is first used: it costs half a second and ~25 MB, which a pipeline
without tools should not pay.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import tempfile
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from vectorstep.errors import ToolError
from vectorstep.spec.service import HttpServerSpec, StdioServerSpec

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, Tool

log = logging.getLogger(__name__)

STDERR_TAIL_CHARS = 2000


@dataclass(frozen=True)
class ToolInfo:
    server: str
    name: str
    description: str
    input_schema: dict[str, Any]

    @property
    def qualified_name(self) -> str:
        return f"{self.server}__{self.name}"


@dataclass(frozen=True)
class ToolOutcome:
    content: str
    is_error: bool


class McpConnection:
    """One MCP server: connected lazily, listed once, closed with the hub."""

    def __init__(self, name: str, spec: StdioServerSpec | HttpServerSpec, *, startup_timeout: float = 60.0):
        self.name = name
        self.spec = spec
        self.startup_timeout = startup_timeout
        self._client: Client | None = None
        self._tools: list[ToolInfo] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._failure: BaseException | None = None
        self._start_lock = asyncio.Lock()
        self._stderr: IO[str] | None = None

    async def tools(self) -> list[ToolInfo]:
        client = await self._connected()
        if self._tools is None:
            listing = await client.list_tools()
            self._tools = [_tool_info(self.name, tool) for tool in listing.tools]
        return self._tools

    async def call(self, tool: str, arguments: dict[str, Any], timeout_seconds: float) -> ToolOutcome:
        client = await self._connected()
        try:
            result = await asyncio.wait_for(client.call_tool(tool, arguments), timeout_seconds)
        except TimeoutError:
            return ToolOutcome(f"tool {self.name}__{tool} timed out after {timeout_seconds:g}s", is_error=True)
        return ToolOutcome(content=_result_text(result), is_error=bool(result.is_error))

    async def _connected(self) -> Client:
        async with self._start_lock:
            if self._task is None:
                self._task = asyncio.create_task(self._serve(), name=f"mcp-server-{self.name}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._ready.wait(), self.startup_timeout)
        if self._client is None:
            raise ToolError(self._failure_message())
        return self._client

    async def _serve(self) -> None:
        try:
            async with self._open_client() as client:
                self._client = client
                self._ready.set()
                await self._stop.wait()
        except Exception as error:  # the server's own failure, reported to whoever asks for a tool
            self._failure = _root_cause(error)
            log.info("tool server %s stopped: %s", self.name, self._failure)
        finally:
            self._client = None
            self._ready.set()

    def _open_client(self) -> Client:
        from mcp import Client, StdioServerParameters  # noqa: PLC0415 - see the module docstring
        from mcp.client.stdio import stdio_client  # noqa: PLC0415

        if isinstance(self.spec, HttpServerSpec):
            return Client(self.spec.url, cache=None)
        # The server's stderr goes to a temporary file: kept out of the user's terminal, and
        # quoted back when the server fails to start.
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        parameters = StdioServerParameters(
            command=self.spec.command, args=list(self.spec.args), env=dict(self.spec.env), cwd=self.spec.cwd
        )
        return Client(stdio_client(parameters, errlog=self._stderr), cache=None)

    def _failure_message(self) -> str:
        if self._failure is None:
            reason = f"no answer within {self.startup_timeout:g}s"
        else:
            reason = str(self._failure) or type(self._failure).__name__
        message = f"tool server {self.name!r} could not be started: {reason}"
        tail = self._stderr_tail()
        return f"{message}\n--- its stderr ---\n{tail}" if tail else message

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        with contextlib.suppress(OSError, ValueError):
            self._stderr.flush()
            self._stderr.seek(0)
            return self._stderr.read()[-STDERR_TAIL_CHARS:].strip()
        return ""

    async def aclose(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 10)
        if self._stderr is not None:
            self._stderr.close()


def _root_cause(error: BaseException) -> BaseException:
    """The first real error inside the task groups the MCP client nests."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def _tool_info(server: str, tool: Tool) -> ToolInfo:
    return ToolInfo(
        server=server,
        name=tool.name,
        description=tool.description or "",
        input_schema=dict(tool.input_schema or {"type": "object", "properties": {}}),
    )


def _result_text(result: CallToolResult) -> str:
    from mcp.types import TextContent  # noqa: PLC0415 - see the module docstring

    parts: list[str] = []
    for item in result.content:
        if isinstance(item, TextContent):
            parts.append(item.text)
        else:
            parts.append(f"[{item.type} content]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)
