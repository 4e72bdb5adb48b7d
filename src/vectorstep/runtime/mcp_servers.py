"""Connections to MCP tool servers (stdio or streamable HTTP), started on first use and shared by every turn.

Each connection lives in a task of its own: the MCP client's task group must be entered and left
by the same task, while tool calls arrive from whichever step is running. The `mcp` package is
imported only when a server is first used: it costs half a second and ~25 MB, which a pipeline
without tools should not pay.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import contextvars
import functools
import json
import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any, TextIO

from vectorstep.errors import ToolError
from vectorstep.spec.service import HttpServerSpec, StdioServerSpec

if TYPE_CHECKING:
    from mcp import Client
    from mcp.types import CallToolResult, Tool

log = logging.getLogger(__name__)

STDERR_TAIL_CHARS = 2000
MAX_BACKOFF_SECONDS = 60.0
PING_INTERVAL_SECONDS = 2.0
EXIT_WAIT_SECONDS = 2.0  # for a call that broke: how long the exit code may take to arrive
STDERR_SETTLE_SECONDS = 0.5  # for the last stderr lines of an exited server (a grandchild may hold it open)

# Set in a connection's own task: told about the server process the SDK starts there.
_on_spawn: contextvars.ContextVar[Callable[[Any], None] | None] = contextvars.ContextVar(
    "vectorstep_mcp_on_spawn", default=None
)


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
    """One MCP server: connected on first use, shared, and started again (with backoff) when it dies.

    A stdio server's stderr is drained line by line into our log (`vectorstep.tools.<name>`), and
    its tail is quoted when the server fails to start.
    """

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
        self._stderr = StderrDrain(name)
        self._failures = 0  # consecutive failed starts: the backoff grows with them
        self._stopping = False  # set when we end the process: its exit is ours, not news
        self._exited = ""  # how the process ended on its own ("exited with code 3"), once it did
        self._exit_watch: asyncio.Task[None] | None = None
        self._retry_at = 0.0
        self.starts = 0

    def status(self) -> dict[str, Any]:
        """For health checks: running, not started, or failing (with why and when it is tried again)."""
        if self._client is not None:
            return {"state": "running", "starts": self.starts}
        if self._failure is None:
            return {"state": "not_started", "starts": self.starts}
        return {
            "state": "failing",
            "starts": self.starts,
            "error": self._failure_message(),
            "retry_in_seconds": round(max(0.0, self._retry_at - time.monotonic()), 1),
        }

    async def tools(self) -> list[ToolInfo]:
        client = await self._connected()
        if self._tools is None:
            listing = await client.list_tools()
            self._tools = [_tool_info(self.name, tool) for tool in listing.tools]
        return self._tools

    async def call(self, tool: str, arguments: dict[str, Any], timeout_seconds: float) -> ToolOutcome:
        client = await self._connected()
        serving = self._task  # the connection this call went to, should another replace it meanwhile
        try:
            result = await asyncio.wait_for(self._call_pinging(client, tool, arguments), timeout_seconds)
        except TimeoutError:
            return ToolOutcome(f"tool {self.name}__{tool} timed out after {timeout_seconds:g}s", is_error=True)
        except Exception as error:  # the server died mid-call: say so; the next call starts it again
            exited = await self._exit_soon()
            await self._drop(error, serving)
            why = f"its server {exited}" if exited else str(_root_cause(error))
            return ToolOutcome(f"tool {self.name}__{tool} failed: {why}", is_error=True)
        return ToolOutcome(content=_result_text(result), is_error=bool(result.is_error))

    async def _call_pinging(self, client: Client, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """The call, with a ping every few seconds while it runs.

        A Python server whose tool calls `sys.exit` stops serving but does not exit: its interpreter
        waits for the thread blocked reading stdin, so the call would hang until its timeout. A ping
        unblocks that read; the process exits and the call fails at once with the connection closed.
        A live server just answers the ping, whatever its answer is not waited for.
        """
        call = asyncio.ensure_future(client.call_tool(tool, arguments))
        pings: set[asyncio.Task[Any]] = set()
        try:
            while True:
                done, _ = await asyncio.wait({call}, timeout=PING_INTERVAL_SECONDS)
                if done:
                    return call.result()
                ping = asyncio.create_task(_quietly(client.session.send_ping()))
                pings.add(ping)
                ping.add_done_callback(pings.discard)
        finally:
            call.cancel()
            for ping in list(pings):
                ping.cancel()

    async def _connected(self) -> Client:
        async with self._start_lock:
            if self._client is None and (self._task is None or self._task.done()):
                wait = self._retry_at - time.monotonic()
                if wait > 0:
                    raise ToolError(f"{self._failure_message()} (started again in {wait:.0f}s)")
                self._ready = asyncio.Event()
                self._tools = None
                self._stopping, self._exited, self._exit_watch = False, "", None
                self.starts += 1
                self._task = asyncio.create_task(self._serve(), name=f"mcp-server-{self.name}")
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._ready.wait(), self.startup_timeout)
                if self._client is None:
                    self._failures += 1
                    self._retry_at = time.monotonic() + min(2 ** (self._failures - 1), MAX_BACKOFF_SECONDS)
                    if self._failure is None:
                        self._failure = TimeoutError(f"no answer within {self.startup_timeout:g}s")
        if self._client is None:
            raise ToolError(self._failure_message())
        return self._client

    async def _drop(self, error: BaseException, serving: asyncio.Task[None] | None) -> None:
        """Forget the connection `serving` runs, which broke (the call is not repeated: it may have acted).
        Nothing happens when a newer connection has replaced it: that one is not broken."""
        if serving is not self._task:
            return
        if not self._exited:  # an exit was logged already, with its code and stderr
            log.warning("tool server %s broke: %s; it is started again on the next call", self.name, _root_cause(error))
        self._failure = _root_cause(error) if not self._exited else ToolError(self._exited)
        self._stopping = True  # what follows is our doing: not an exit to report
        task, self._client = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def _spawned(self, serving: asyncio.Task[Any] | None, process: Any) -> None:
        self._exit_watch = asyncio.create_task(self._watch_exit(process, serving), name=f"mcp-server-{self.name}-exit")

    async def _watch_exit(self, process: Any, serving: asyncio.Task[Any] | None) -> None:
        """A server process that ends on its own: its exit code and the last of its stderr go to the log."""
        code = await process.wait()
        if self._stopping or serving is not self._task:  # stopped by us, or an earlier connection's process
            return
        await self._stderr.settled()
        self._exited = _exit_text(code)
        tail = self._stderr.tail()
        log.warning(
            "tool server %s %s; it is started again on the next call%s",
            self.name,
            self._exited,
            f"\n--- its stderr ---\n{tail}" if tail else " (it wrote nothing to stderr)",
        )
        await self._drop(ToolError(self._exited), serving)

    async def _exit_soon(self) -> str:
        """How the server process ended, when a broken call suggests it did (waited for briefly)."""
        if self._exit_watch is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._exit_watch), EXIT_WAIT_SECONDS)
        return self._exited

    async def _serve(self) -> None:
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(self._open_client(stack))
                self._client, self._failure, self._failures = client, None, 0
                self._ready.set()
                await self._stop.wait()
        except Exception as error:  # the server's own failure, reported to whoever asks for a tool
            self._failure = _root_cause(error)
            log.warning("tool server %s stopped: %s", self.name, self._failure)
        finally:
            self._client = None
            self._ready.set()

    def _open_client(self, stack: contextlib.AsyncExitStack) -> Client:
        from mcp import Client, StdioServerParameters  # noqa: PLC0415 - see the module docstring
        from mcp.client.stdio import stdio_client  # noqa: PLC0415

        if isinstance(self.spec, HttpServerSpec):
            from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415
            from mcp.shared._httpx_utils import create_mcp_http_client  # noqa: PLC0415

            http = create_mcp_http_client(headers=dict(self.spec.headers))
            stack.push_async_callback(http.aclose)
            return Client(streamable_http_client(self.spec.url, http_client=http), cache=None)
        _report_spawns()
        # Set in this connection's own task (`_serve`), whose context the SDK's spawn runs in.
        _on_spawn.set(functools.partial(self._spawned, asyncio.current_task()))
        parameters = StdioServerParameters(
            command=self.spec.command, args=list(self.spec.args), env=dict(self.spec.env), cwd=self.spec.cwd
        )
        return Client(stdio_client(parameters, errlog=self._stderr.open(stack)), cache=None)

    def _failure_message(self) -> str:
        reason = str(self._failure) or type(self._failure).__name__ if self._failure else "not started"
        message = f"tool server {self.name!r} could not be started: {reason}"
        tail = self._stderr.tail()
        return f"{message}\n--- its stderr ---\n{tail}" if tail else message

    async def aclose(self) -> None:
        self._stopping = True
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 10)
        await self._stderr.aclose()


class StderrDrain:
    """A stdio server's stderr: each line into our log, the last ones kept to quote when it fails."""

    def __init__(self, server: str) -> None:
        self._log = logging.getLogger(f"vectorstep.tools.{server}")
        self._lines: collections.deque[str] = collections.deque(maxlen=40)
        self._readers: list[asyncio.Task[None]] = []

    def open(self, stack: contextlib.AsyncExitStack) -> TextIO:
        read_fd, write_fd = os.pipe()
        writer = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        stack.callback(writer.close)  # the child keeps its own copy; ours closes with the connection
        self._readers = [reader for reader in self._readers if not reader.done()]  # earlier starts' readers
        self._readers.append(asyncio.create_task(self._read(os.fdopen(read_fd, "rb"))))
        return writer

    async def _read(self, pipe: IO[bytes]) -> None:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader()
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe)
        try:
            while line := await reader.readline():
                text = line.decode("utf-8", errors="replace").rstrip()
                self._lines.append(text)
                self._log.info("%s", text)
        finally:
            transport.close()

    async def settled(self) -> None:
        """Wait (bounded) for the readers to reach the end of what the exited process wrote."""
        if self._readers:
            await asyncio.wait([asyncio.shield(reader) for reader in self._readers], timeout=STDERR_SETTLE_SECONDS)

    def tail(self) -> str:
        return "\n".join(self._lines)[-STDERR_TAIL_CHARS:].strip()

    async def aclose(self) -> None:
        for reader in self._readers:
            reader.cancel()
        await asyncio.gather(*self._readers, return_exceptions=True)


def _report_spawns() -> None:
    """Have the SDK's stdio client tell the connection that starts a server its process.

    `stdio_client` keeps the process to itself, and its exit code is what says why a server went away.
    Its spawn function is wrapped once; the wrapper hands each process to `_on_spawn` of the task that
    started it. Should the SDK rename the function, servers run as before, without exit codes.
    """
    from mcp.client import stdio  # noqa: PLC0415 - see the module docstring

    spawn = getattr(stdio, "_create_platform_compatible_process", None)
    if spawn is None or getattr(spawn, "reports_spawns", False):
        return

    async def reporting(*args: Any, **kwargs: Any) -> Any:
        process = await spawn(*args, **kwargs)
        report = _on_spawn.get()
        if report is not None:
            report(process)
        return process

    reporting.reports_spawns = True  # type: ignore[attr-defined]
    stdio._create_platform_compatible_process = reporting


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        with contextlib.suppress(ValueError):
            return f"was killed by {signal.Signals(-code).name}"
    return f"exited with code {code}"


async def _quietly(ping: Any) -> None:
    with contextlib.suppress(Exception):
        await ping


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
