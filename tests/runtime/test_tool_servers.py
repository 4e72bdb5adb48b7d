"""Tool servers are supervised: restarted when they die, backed off when they cannot start, stderr logged;
and MCP over streamable HTTP, with the configured headers."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import TOOL_SERVER
from vectorstep.errors import ToolError
from vectorstep.runtime.mcp_servers import McpConnection
from vectorstep.spec.service import HttpServerSpec, StdioServerSpec

HTTP_TOOL_SERVER = Path(__file__).parents[1] / "fixtures" / "http_tool_server.py"


def stdio(*args: str) -> StdioServerSpec:
    return StdioServerSpec(command=sys.executable, args=[str(TOOL_SERVER), *args])


async def test_a_server_that_dies_is_started_again_on_the_next_call() -> None:
    connection = McpConnection("tools", stdio())
    try:
        died = await connection.call("die", {}, 10)
        assert died.is_error and "tools__die failed" in died.content
        again = await connection.call("echo", {"text": "still here"}, 10)
        assert again == again.__class__("still here", is_error=False)
        assert connection.starts == 2 and connection.status()["state"] == "running"
    finally:
        await connection.aclose()


async def test_a_server_that_exits_says_its_exit_code_and_stderr_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="vectorstep")
    connection = McpConnection("tools", stdio())
    try:
        died = await connection.call("die", {}, 10)
        assert died == died.__class__("tool tools__die failed: its server exited with code 9", is_error=True)
        exits = [r for r in caplog.records if r.levelno == logging.WARNING and "exited with code 9" in r.message]
        assert len(exits) == 1
        assert "--- its stderr ---\nfatal: lost the connection to the metrics backend" in exits[0].message
        assert (await connection.call("echo", {"text": "back"}, 10)).content == "back"
    finally:
        await connection.aclose()
    # Stopping it ourselves is no exit to report.
    assert len([r for r in caplog.records if "exited with code" in r.message]) == 1


async def test_a_tool_that_calls_sys_exit_fails_its_call_instead_of_hanging_it() -> None:
    # The server's interpreter would wait for its stdin reader; the call would run into its timeout.
    connection = McpConnection("tools", stdio())
    try:
        quit_call = await asyncio.wait_for(connection.call("give_up", {"code": 4}, 120), 60)
        assert quit_call == quit_call.__class__(
            "tool tools__give_up failed: its server exited with code 4", is_error=True
        )
        assert (await connection.call("echo", {"text": "back"}, 10)).content == "back"
        assert connection.starts == 2
    finally:
        await connection.aclose()


async def test_a_server_that_cannot_start_is_backed_off_and_reported() -> None:
    connection = McpConnection("tools", stdio("--crash"))
    try:
        with pytest.raises(ToolError, match="cannot start: missing credentials"):
            await connection.tools()
        with pytest.raises(ToolError, match=r"started again in \d+s"):
            await connection.tools()  # within the backoff: not started again
        status = connection.status()
        assert status["state"] == "failing" and status["starts"] == 1
        assert "missing credentials" in status["error"] and 0 < status["retry_in_seconds"] <= 1
    finally:
        await connection.aclose()


async def test_stderr_is_drained_into_the_log(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="vectorstep.tools")
    connection = McpConnection("tools", stdio())
    try:
        assert (await connection.call("shout", {"text": "disk 91% full"}, 10)).content == "shouted"
        deadline = time.monotonic() + 5
        while not any("shouting: disk 91% full" in r.message for r in caplog.records) and time.monotonic() < deadline:
            await asyncio.sleep(0.02)
    finally:
        await connection.aclose()
    record = next(r for r in caplog.records if "shouting: disk 91% full" in r.message)
    assert record.name == "vectorstep.tools.tools"


@pytest.fixture
def http_server() -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen([sys.executable, str(HTTP_TOOL_SERVER), str(port), "secret-token-123"])
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while True:
        try:
            httpx.get(url, timeout=1)
            break
        except httpx.TransportError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError("the HTTP tool server did not start") from None
            time.sleep(0.05)
    yield url
    process.terminate()
    process.wait(10)


async def test_a_streamable_http_server_gets_the_configured_headers(http_server: str) -> None:
    connection = McpConnection(
        "remote", HttpServerSpec(url=http_server, headers={"Authorization": "Bearer secret-token-123"})
    )
    refused = McpConnection("remote", HttpServerSpec(url=http_server), startup_timeout=10)
    try:
        assert [tool.name for tool in await connection.tools()] == ["echo"]
        assert (await connection.call("echo", {"text": "hi"}, 10)).content == "over http: hi"
        with pytest.raises(ToolError, match="could not be started"):
            await refused.tools()
    finally:
        await connection.aclose()
        await refused.aclose()
