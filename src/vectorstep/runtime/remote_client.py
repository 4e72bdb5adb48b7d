"""`gateway: {mode: remote}`: agent turns run on a VectorStep gateway, over the WebSocket `/rpc` protocol.

One connection per turn: challenge → `connect` with the token → `agent` → `accepted`, the
trace as it happens, and the final answer. Closing the connection (a step timeout, a stopped
run) cancels the turn on the gateway.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import WebSocketException

from vectorstep.domain.trace import TraceEvent
from vectorstep.errors import AgentRuntimeError, ExecutionDetails
from vectorstep.runtime import remote_protocol as rpc
from vectorstep.runtime.arrivals import Arrivals, MalformedEvent
from vectorstep.runtime.protocol import AgentReply, AgentRequest, TraceListener
from vectorstep.telemetry import inject

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
        first = self._frame(await socket.recv())
        if first.get("type") != "event" or first.get("event") not in rpc.CHALLENGES:
            raise self._broken(f"it did not open with a challenge but with {_shown(first)}")
        frame_id = f"c{next(self._ids)}"
        params = {
            "minProtocol": rpc.PROTOCOL,
            "maxProtocol": rpc.PROTOCOL,
            "client": {"id": "vectorstep", "mode": "backend"},
            "auth": {"token": self._token},
        }
        await socket.send(json.dumps(rpc.request(frame_id, "connect", params)))
        answer = self._frame(await socket.recv())
        if answer.get("type") != "res":
            raise self._broken(f"it answered `connect` with {_shown(answer)}")
        if not answer.get("ok"):
            error: dict[str, Any] = answer["error"] if isinstance(answer.get("error"), dict) else {}
            raise AgentRuntimeError(
                f"the gateway refused the connection: {error.get('message') or 'no reason given'}",
                code=str(error.get("code") or "unauthorized"),
            )
        protocol = (answer.get("payload") or {}).get("protocol") if isinstance(answer.get("payload"), dict) else None
        if protocol != rpc.PROTOCOL:
            raise AgentRuntimeError(
                f"the gateway at {self._url} speaks protocol {protocol!r}; VectorStep speaks {rpc.PROTOCOL}",
                code="protocol_error",
            )

    async def _turn(
        self, socket: ClientConnection, request: AgentRequest, on_event: TraceListener | None
    ) -> AgentReply:
        frame_id = f"a{next(self._ids)}"
        await socket.send(json.dumps(rpc.request(frame_id, "agent", _params(request))))
        arrivals = Arrivals()
        seen: list[TraceEvent] = []

        def arrived(raw: Any) -> None:
            try:
                trace_event = arrivals.accept(raw)
            except MalformedEvent as error:
                raise self._broken(str(error)) from None
            if trace_event is None:
                return
            seen.append(trace_event)
            if on_event is not None:
                on_event(trace_event)

        deadline = None if request.timeout_seconds is None else request.timeout_seconds + 30
        try:
            return await asyncio.wait_for(self._frames(socket, frame_id, arrived, seen), deadline)
        except TimeoutError:
            raise AgentRuntimeError(
                f"the gateway at {self._url} did not finish the turn within {deadline:g}s", code="timeout"
            ) from None

    async def _frames(
        self, socket: ClientConnection, frame_id: str, arrived: Callable[[Any], None], seen: list[TraceEvent]
    ) -> AgentReply:
        """The frames of one `agent` request, until its final answer."""
        while True:
            frame = self._frame(await socket.recv())
            kind = frame.get("type")
            if kind == "event":  # our gateway's trace frames; other events are not for us
                if frame.get("event") == rpc.TRACE_EVENT:
                    arrived((frame.get("payload") or {}).get("event"))
                continue
            if kind != "res":
                raise self._broken(f"it sent a frame of unknown type: {_shown(frame)}")
            if frame.get("id") == frame_id:
                reply = self._answer(frame, arrived, seen)
                if reply is not None:
                    return reply

    def _answer(
        self, frame: dict[str, Any], arrived: Callable[[Any], None], seen: list[TraceEvent]
    ) -> AgentReply | None:
        """A response to the request: the reply when it is the final one, None while the turn goes on."""
        if not frame.get("ok"):
            raise _remote_error(frame.get("error"), seen)
        payload = frame.get("payload")
        if not isinstance(payload, dict):
            raise self._broken(f"it answered without a payload: {_shown(frame)}")
        status = payload.get("status")
        if status == "accepted":
            return None
        if status == rpc.TRACE_EVENT:  # the existing gateways' trace frames
            arrived(payload.get("event"))
            return None
        if status != "ok":
            raise self._broken(f"it answered with status {status!r}: {_shown(frame)}")
        try:
            return rpc.reply_from_result(payload, seen)
        except rpc.ProtocolError as error:
            trace = ExecutionDetails(trace=tuple(seen))
            raise AgentRuntimeError(
                f"the gateway at {self._url}: {error.message}", code=error.code, details=trace
            ) from None

    def _frame(self, raw: str | bytes) -> dict[str, Any]:
        try:
            frame = json.loads(raw)
        except ValueError:
            raise self._broken(f"it sent a frame that is not JSON: {str(raw)[:200]!r}") from None
        if not isinstance(frame, dict):
            raise self._broken(f"it sent a frame that is not an object: {str(raw)[:200]!r}")
        return frame

    def _broken(self, what: str) -> AgentRuntimeError:
        return AgentRuntimeError(f"the gateway at {self._url} broke the protocol: {what}", code="protocol_error")

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
    carried: dict[str, str] = {}
    inject(carried)  # §13.2's `traceparent` and `tracestate`: the gateway's spans join the step's trace
    params.update(carried)
    return params


def _remote_error(given: Any, seen: list[TraceEvent]) -> AgentRuntimeError:
    """A failed run: our gateway sends a code and details; an existing one only `error.message`."""
    error: dict[str, Any] = given if isinstance(given, dict) else {}
    details: dict[str, Any] = error["details"] if isinstance(error.get("details"), dict) else {}
    given = details.get("trace")
    trace = rpc.made_whole(given) if isinstance(given, list) else ()
    usage: dict[str, Any] = details["usage"] if isinstance(details.get("usage"), dict) else {}
    spent = rpc.usage_from_json(usage, str(details.get("model") or ""))  # what is no count counts 0
    return AgentRuntimeError(
        str(error.get("message") or "the gateway reported an error"),
        code=str(error.get("code") or "runtime_error"),
        details=ExecutionDetails(
            trace=trace or tuple(seen),
            model=details.get("model"),
            provider=details.get("provider"),
            agent_version=details.get("agentVersion"),
            input_tokens=spent.input_tokens,
            output_tokens=spent.output_tokens,
        ),
    )


def _shown(frame: Any) -> str:
    return json.dumps(frame, ensure_ascii=False)[:200]
