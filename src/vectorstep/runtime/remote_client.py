"""`gateway: {mode: remote}`: agent turns run on a VectorStep gateway, over the WebSocket `/rpc` protocol.

One connection per turn: challenge → `connect` with the token → `agent` → `accepted`, the
trace as it happens, and the final answer. Closing the connection (a step timeout, a stopped
run) cancels the turn on the gateway.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

from vectorstep.domain.trace import TraceEvent
from vectorstep.errors import AgentRuntimeError, ExecutionDetails
from vectorstep.runtime import remote_protocol as rpc
from vectorstep.runtime.protocol import AgentReply, AgentRequest, TraceListener

MAX_FRAME_BYTES = 64 * 1024 * 1024  # a final answer carries whole tool results


class RemoteRuntime:
    def __init__(
        self, url: str, token: str, *, max_concurrent_turns: int = 10, connect_timeout_seconds: float = 10.0
    ) -> None:
        self._url = rpc_url(url)
        self._token = token
        self._connect_timeout = connect_timeout_seconds
        self._ids = itertools.count(1)
        self._max_concurrent = max_concurrent_turns
        self._slots: asyncio.Semaphore | None = None

    async def run(self, request: AgentRequest, on_event: TraceListener | None = None) -> AgentReply:
        # As with the embedded runtime, `limits.max_concurrent_runs` turns at once: the gateway is not flooded.
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._max_concurrent)
        async with self._slots:
            return await self._run(request, on_event)

    async def _run(self, request: AgentRequest, on_event: TraceListener | None) -> AgentReply:
        try:
            async with connect(
                self._url, open_timeout=self._connect_timeout, max_size=MAX_FRAME_BYTES, ping_interval=20
            ) as socket:
                await self._handshake(socket)
                return await self._turn(socket, request, on_event)
        except (OSError, TimeoutError, WebSocketException) as error:
            raise AgentRuntimeError(
                f"the gateway at {self._url} could not be reached: {error}", code="gateway_unreachable"
            ) from error

    async def _handshake(self, socket: ClientConnection) -> None:
        first = json.loads(await socket.recv())
        if first.get("type") != "event" or first.get("event") != rpc.CHALLENGE:
            raise AgentRuntimeError(f"{self._url} did not open with a challenge", code="protocol_error")
        frame_id = f"c{next(self._ids)}"
        params = {
            "minProtocol": rpc.PROTOCOL,
            "maxProtocol": rpc.PROTOCOL,
            "client": {"id": "vectorstep", "mode": "backend"},
            "auth": {"token": self._token},
        }
        await socket.send(json.dumps(rpc.request(frame_id, "connect", params)))
        answer = json.loads(await socket.recv())
        if not answer.get("ok"):
            error = answer.get("error") or {}
            raise AgentRuntimeError(
                f"the gateway refused the connection: {error.get('message')}", code=str(error.get("code") or "refused")
            )

    async def _turn(
        self, socket: ClientConnection, request: AgentRequest, on_event: TraceListener | None
    ) -> AgentReply:
        frame_id = f"a{next(self._ids)}"
        await socket.send(json.dumps(rpc.request(frame_id, "agent", _params(request))))
        seen: list[TraceEvent] = []
        deadline = None if request.timeout_seconds is None else request.timeout_seconds + 30
        async with asyncio.timeout(deadline):
            while True:
                frame: dict[str, Any] = json.loads(await socket.recv())
                if frame.get("type") == "event" and frame.get("event") == rpc.TRACE_EVENT:
                    trace_event = TraceEvent.from_dict((frame.get("payload") or {}).get("event") or {})
                    seen.append(trace_event)
                    if on_event is not None:
                        on_event(trace_event)
                    continue
                if frame.get("type") != "res" or frame.get("id") != frame_id:
                    continue
                if not frame.get("ok"):
                    raise _remote_error(frame.get("error") or {}, seen)
                payload = frame.get("payload") or {}
                if payload.get("status") == "accepted":
                    continue
                return rpc.reply_from_result(payload)

    def health(self) -> dict[str, object]:
        return {"mode": "remote", "url": self._url}

    async def warm_up(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


def rpc_url(url: str) -> str:
    """`http(s)://host:port` or `ws(s)://host:port[/rpc]` → the WebSocket URL of `/rpc`."""
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    path = parts.path.rstrip("/")
    return urlunsplit((scheme, parts.netloc, path if path.endswith("/rpc") else f"{path}/rpc", parts.query, ""))


def _params(request: AgentRequest) -> dict[str, Any]:
    params: dict[str, Any] = {
        "agentId": request.agent,
        "sessionKey": request.session_key,
        "message": request.message,
    }
    optional = {
        "model": request.model,
        "thinkingLevel": request.thinking_level,
        "traceToolResultMax": request.trace_tool_result_max,
        "timeoutSeconds": request.timeout_seconds,
    }
    params.update({key: value for key, value in optional.items() if value is not None})
    return params


def _remote_error(error: dict[str, Any], seen: list[TraceEvent]) -> AgentRuntimeError:
    details = error.get("details") or {}
    trace = tuple(TraceEvent.from_dict(item) for item in details.get("trace") or []) or tuple(seen)
    usage = details.get("usage") or {}
    return AgentRuntimeError(
        str(error.get("message") or "the gateway reported an error"),
        code=str(error.get("code") or "runtime_error"),
        details=ExecutionDetails(
            trace=trace,
            model=details.get("model"),
            provider=details.get("provider"),
            agent_version=details.get("agentVersion"),
            input_tokens=int(usage.get("input") or 0),
            output_tokens=int(usage.get("output") or 0),
        ),
    )
