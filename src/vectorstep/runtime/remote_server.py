"""`vectorstep gateway serve`: the agent runtime as its own service, in the gateways' dialect (SYSTEM.md §13.2).

Provider keys and MCP subprocesses live here, apart from the orchestrator. Every connection
must answer the challenge with the gateway token (compared in constant time); each `agent`
request runs one turn and streams its trace; a client that disconnects cancels its turns. The
REST routes existing services read (`/agents`, `/mcp/tools`, `/mcp/servers`) are served beside it,
behind the token unless `gateway.rest_auth: none`.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.metadata import version
from typing import Any

from fastapi import FastAPI, HTTPException, Request, WebSocket, WebSocketDisconnect

from vectorstep.clock import Clock
from vectorstep.domain.bounded_json import UnboundedJSON, parse_bounded_json
from vectorstep.domain.storable import LONE_SURROGATE
from vectorstep.domain.trace import TraceEvent
from vectorstep.errors import AgentRuntimeError
from vectorstep.runtime import remote_protocol as rpc
from vectorstep.runtime.embedded import EmbeddedRuntime
from vectorstep.runtime.gateway_rest import serve_rest_routes
from vectorstep.runtime.protocol import AgentRequest, AgentRuntime
from vectorstep.spec.agent_files import AgentDefinition, load_agents
from vectorstep.spec.settings import Settings

log = logging.getLogger(__name__)
CONNECT_TIMEOUT_SECONDS = 10.0
UNAUTHORIZED = 4401  # WebSocket close code: the token was missing or wrong
UNSUPPORTED_DATA = 1003  # a binary frame: the protocol is JSON text
INVALID_PAYLOAD = 1007  # text that is not JSON within bounds (too deep, NaN, ...)


def create_gateway_app(
    settings: Settings, token: str, *, runtime: EmbeddedRuntime | None = None, clock: Clock | None = None
) -> FastAPI:
    if not token.strip() or token != token.strip():
        raise ValueError("the gateway token cannot be blank or surrounded by whitespace")
    agents, problems = load_agents(settings.agents_dir)
    for problem in problems:
        log.warning("agent not loaded: %s", problem)
    served = runtime or EmbeddedRuntime(agents, settings.spec, clock=clock, base_dir=settings.base_dir)

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        warm = asyncio.create_task(served.warm_up())
        try:
            yield
        finally:
            warm.cancel()
            await served.aclose()

    app = FastAPI(
        title="VectorStep gateway",
        version=version("vectorstep"),
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,  # served below, behind the token
    )

    turns: set[asyncio.Task[None]] = set()  # every connection's turns in flight

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"status": "ok", "agents": len(agents), "turns_in_flight": len(turns), **served.health()}

    def require_token(request: Request) -> None:
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not given or not _same(given, token):
            raise HTTPException(401, detail="a valid gateway token is required", headers={"WWW-Authenticate": "Bearer"})

    serve_rest_routes(app, agents, served, settings.spec.gateway.rest_auth, require_token)

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(request: Request) -> dict[str, Any]:
        require_token(request)
        return app.openapi()

    @app.websocket("/rpc")
    async def rpc_endpoint(socket: WebSocket) -> None:
        await socket.accept()
        await Connection(socket, served, agents, token, turns).serve()

    return app


class Connection:
    """One client: the handshake, then its agent requests, each a task of its own."""

    def __init__(
        self,
        socket: WebSocket,
        runtime: AgentRuntime,
        agents: dict[str, AgentDefinition],
        token: str,
        all_turns: set[asyncio.Task[None]],
    ) -> None:
        self._socket = socket
        self._runtime = runtime
        self._agents = agents
        self._token = token
        self._outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._turns: set[asyncio.Task[None]] = set()
        self._all_turns = all_turns

    async def serve(self) -> None:
        writer = asyncio.create_task(self._write())
        try:
            if await self._handshake():
                while True:
                    frame = await self._frame()
                    if frame is None:
                        break
                    self._dispatch(frame)
        except WebSocketDisconnect:
            pass
        finally:
            for turn in self._turns:  # the client is gone: its turns stop
                turn.cancel()
            await asyncio.gather(*self._turns, return_exceptions=True)
            with contextlib.suppress(Exception):
                await self._outbox.join()
            writer.cancel()
            await asyncio.gather(writer, return_exceptions=True)

    async def _frame(self) -> Any:
        """The next frame as JSON; None (and the socket closed, one line logged) when it is malformed.

        The protocol is JSON text within bounds: a binary frame, text that is not UTF-8, or JSON
        nested too deeply or holding NaN ends the connection with a WebSocket protocol code.
        """
        message = await self._socket.receive()
        if message["type"] == "websocket.disconnect":
            raise WebSocketDisconnect(message.get("code", 1000))
        text = message.get("text")
        if text is None:
            return await self._malformed(UNSUPPORTED_DATA, "a binary frame; the protocol is JSON text")
        try:
            return parse_bounded_json(text)
        except UnboundedJSON as error:
            return await self._malformed(INVALID_PAYLOAD, str(error).replace("the body", "the frame"))

    async def _malformed(self, code: int, reason: str) -> None:
        log.warning("gateway: closing a connection (%d): %s", code, reason)
        self._send(rpc.failure(None, "invalid_frame", reason))
        await self._outbox.join()
        await self._socket.close(code=code, reason=reason[:120])

    async def _handshake(self) -> bool:
        self._send(rpc.challenge())
        try:
            frame = await asyncio.wait_for(self._frame(), CONNECT_TIMEOUT_SECONDS)
            if frame is None:
                return False
            frame_id, method, params = rpc.parse_request(frame)
        except TimeoutError:
            return await self._refuse(None, "timeout", "no connect request within 10 s")
        except rpc.ProtocolError as error:
            return await self._refuse(None, "invalid_request", str(error))
        if method != "connect":
            return await self._refuse(frame_id, "invalid_request", "the first request must be `connect`")
        given = params.get("auth")
        auth: dict[str, Any] = given if isinstance(given, dict) else {}
        if not _same(str(auth.get("token") or ""), self._token):
            return await self._refuse(frame_id, "unauthorized", "invalid operator token")
        self._send(
            rpc.response(
                frame_id,
                {
                    "type": "hello-ok",
                    "protocol": rpc.PROTOCOL,
                    "server": {"name": "vectorstep-gateway", "version": version("vectorstep")},
                },
            )
        )
        return True

    async def _refuse(self, frame_id: str | None, code: str, message: str) -> bool:
        self._send(rpc.failure(frame_id, code, message))
        await self._outbox.join()
        await self._socket.close(code=UNAUTHORIZED if code == "unauthorized" else 1008, reason=message[:120])
        return False

    def _dispatch(self, frame: Any) -> None:
        try:
            frame_id, method, params = rpc.parse_request(frame)
        except rpc.ProtocolError as error:
            self._send(rpc.failure(None, "invalid_request", str(error)))
            return
        if method != "agent":
            self._send(
                rpc.failure(frame_id, "unknown_method", f"unknown method {method!r}; this gateway serves `agent`")
            )
            return
        turn = asyncio.create_task(self._agent(frame_id, params))
        for tracked in (self._turns, self._all_turns):
            tracked.add(turn)
            turn.add_done_callback(tracked.discard)

    async def _agent(self, frame_id: str, params: dict[str, Any]) -> None:
        try:
            request = self._request(params)
        except rpc.ProtocolError as error:
            self._send(rpc.failure(frame_id, error.code, error.message))
            return
        run_id = uuid.uuid4().hex
        self._send(rpc.response(frame_id, {"runId": run_id, "status": "accepted"}))

        def forward(trace_event: TraceEvent) -> None:
            # In the dialect: a `res` frame of the request, status `trace_event` (our client reads both).
            self._send(
                rpc.response(
                    frame_id, {"status": rpc.TRACE_EVENT, "runId": run_id, "event": rpc.dialect_event(trace_event)}
                )
            )

        try:
            reply = await self._runtime.run(request, forward)
        except AgentRuntimeError as error:
            self._send(rpc.failure(frame_id, error.code, error.message, _error_details(error)))
            return
        except Exception as error:  # a bug of ours: the client still gets an answer
            log.exception("agent turn failed")
            self._send(rpc.failure(frame_id, "runtime_error", f"{type(error).__name__}: {error}"))
            return
        self._send(rpc.response(frame_id, rpc.reply_result(run_id, reply)))

    def _request(self, params: dict[str, Any]) -> AgentRequest:
        agent_id, session_key, message = params.get("agentId"), params.get("sessionKey"), params.get("message")
        if not isinstance(agent_id, str) or not isinstance(message, str) or not isinstance(session_key, str):
            raise rpc.ProtocolError("invalid_request", "`agent` needs string `agentId`, `sessionKey` and `message`")
        if not session_key.startswith(f"agent:{agent_id}:"):
            raise rpc.ProtocolError("bad_session_key", f"sessionKey must start with 'agent:{agent_id}:'")
        if agent_id not in self._agents:
            known = ", ".join(sorted(self._agents)) or "none"
            raise rpc.ProtocolError("unknown_agent", f"no agent {agent_id!r} on this gateway (agents: {known})")
        trace_max = params.get("traceToolResultMax")
        timeout = params.get("timeoutSeconds")
        return AgentRequest(
            agent=agent_id,
            message=message,
            session_key=session_key,
            model=params.get("model") if isinstance(params.get("model"), str) else None,
            thinking_level=params.get("thinkingLevel") if isinstance(params.get("thinkingLevel"), str) else None,
            trace_tool_result_max=trace_max if isinstance(trace_max, int) and trace_max >= 100 else None,
            timeout_seconds=float(timeout) if isinstance(timeout, int | float) and timeout > 0 else None,
        )

    def _send(self, frame: dict[str, Any]) -> None:
        self._outbox.put_nowait(frame)

    async def _write(self) -> None:
        """One writer keeps frames in order: a turn's trace events always precede its final answer."""
        while True:
            frame = await self._outbox.get()
            try:
                text = json.dumps(frame, ensure_ascii=False)
                if LONE_SURROGATE.search(text):  # not UTF-8: sent as JSON escapes instead
                    text = json.dumps(frame)
                await self._socket.send_text(text)
            except Exception:  # the client is gone; the reader notices and cancels the turns
                log.debug("could not send a frame: the client disconnected")
            finally:
                self._outbox.task_done()


def _error_details(error: AgentRuntimeError) -> dict[str, Any]:
    details = error.details
    if details is None:
        return {}
    return {
        "trace": [item.as_dict() if isinstance(item, TraceEvent) else item for item in details.trace],
        "model": details.model,
        "provider": details.provider,
        "agentVersion": details.agent_version,
        "usage": {"input": details.input_tokens, "output": details.output_tokens},
    }


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))
