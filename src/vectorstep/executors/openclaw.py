"""`executor: openclaw`: one agent turn on an OpenClaw gateway, over its WebSocket protocol (version 3).

The gateway opens with a `connect.challenge` event carrying a nonce; we answer with `connect`, signed
by the device identity (`openclaw_identity`); then `agent` runs the turn, and the text of its final
payloads is parsed as the step's answer. An OpenClaw gateway reports no trace, so a step on it takes
no grounding and no critic verifier (refused at load).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
import uuid
from collections.abc import Mapping
from importlib.metadata import version
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, WebSocketException

from vectorstep.domain.execution import ExecutionResult, ExecutorCapabilities
from vectorstep.domain.llm_output import parse_llm_output
from vectorstep.errors import ExecutionDetails, ExecutorError, ExecutorTimeout
from vectorstep.executors.base import StepCall
from vectorstep.executors.openclaw_identity import SignedConnect, load_identity
from vectorstep.spec.executor_config import OpenClawConfig
from vectorstep.spec.service import OpenClawSpec

PROTOCOL = 3
CHALLENGES = ("connect.challenge", "challenge")
MAX_FRAME_BYTES = 16 * 1024 * 1024


class OpenClawExecutor:
    capabilities = ExecutorCapabilities()

    def __init__(self, settings: OpenClawSpec, base_dir: Path) -> None:
        self._settings = settings
        self._identity_dir = (base_dir / Path(settings.identity_dir).expanduser()).resolve()
        self._ids = itertools.count(1)

    async def execute(self, call: StepCall) -> ExecutionResult:
        config = call.config
        if not isinstance(config, OpenClawConfig):
            raise ExecutorError(f"the openclaw executor got a {type(config).__name__}")
        if not self._settings.url:
            raise ExecutorError("executors.openclaw.url is not set in the settings")
        url = ws_url(self._settings.url)
        started = time.monotonic()
        timeout = call.timeout_seconds or config.timeout_seconds
        try:
            async with (
                asyncio.timeout(timeout + self._settings.connect_timeout_seconds),
                connect(url, open_timeout=self._settings.connect_timeout_seconds, max_size=MAX_FRAME_BYTES) as socket,
            ):
                await self._connect(socket, url)
                payload = await self._turn(socket, url, call, config)
        except TimeoutError:
            raise ExecutorTimeout(f"the OpenClaw gateway at {url} did not answer within {timeout:g}s") from None
        except ConnectionClosed as closed:
            raise ExecutorError(f"the OpenClaw gateway at {url} closed the connection: {closed}") from None
        except (OSError, WebSocketException) as error:
            raise ExecutorError(f"the OpenClaw gateway at {url} could not be reached: {error}") from None
        text = final_text(payload)
        meta = _agent_meta(payload)
        details = ExecutionDetails(
            prompt=call.prompt, response_text=text, model=meta.get("model"), provider=meta.get("provider")
        )
        try:
            output = parse_llm_output(text)
        except ExecutorError as error:  # the raw answer is kept, as for any other agent
            error.details = details
            raise
        return ExecutionResult(
            output=output,
            prompt=call.prompt,
            response_text=text,
            duration_ms=round((time.monotonic() - started) * 1000, 3),
            model=_text(meta.get("model")),
            provider=_text(meta.get("provider")),
            agent=config.agent,
        )

    async def _connect(self, socket: ClientConnection, url: str) -> None:
        first = _frame(await socket.recv(), url)
        if first.get("type") != "event" or first.get("event") not in CHALLENGES:
            raise ExecutorError(f"the OpenClaw gateway at {url} did not open with a challenge: {_shown(first)}")
        nonce = (first.get("payload") or {}).get("nonce")
        if not isinstance(nonce, str) or not nonce:
            raise ExecutorError(f"the OpenClaw gateway at {url} sent a challenge without a nonce")
        identity = load_identity(self._identity_dir, self._settings.role)
        token = self._settings.token or identity.token or ""
        signed = SignedConnect(
            client_id=self._settings.client_id,
            client_mode=self._settings.client_mode,
            role=self._settings.role,
            scopes=tuple(self._settings.scopes),
            signed_at_ms=int(time.time() * 1000),
            token=token,
            nonce=nonce,
            platform=sys.platform,
        )
        params = {
            "minProtocol": PROTOCOL,
            "maxProtocol": PROTOCOL,
            "client": {
                "id": signed.client_id,
                "version": version("vectorstep"),
                "platform": signed.platform,
                "mode": signed.client_mode,
            },
            "role": signed.role,
            "scopes": list(signed.scopes),
            "auth": {"token": token},
            "userAgent": f"vectorstep/{version('vectorstep')}",
            "device": {
                "id": identity.device_id,
                "publicKey": identity.public_key,
                "signature": identity.sign(signed),
                "signedAt": signed.signed_at_ms,
                "nonce": nonce,
            },
        }
        answer = await self._request(socket, url, "connect", params)
        protocol = answer.get("protocol")
        if protocol != PROTOCOL:
            raise ExecutorError(
                f"the OpenClaw gateway at {url} speaks protocol {protocol!r}; VectorStep speaks {PROTOCOL}"
            )

    async def _turn(
        self, socket: ClientConnection, url: str, call: StepCall, config: OpenClawConfig
    ) -> Mapping[str, Any]:
        params: dict[str, Any] = {
            "agentId": config.agent,
            "sessionKey": config.session_key or f"agent:{config.agent}:{call.run_id}:{call.step}",
            "message": call.prompt,
            "idempotencyKey": uuid.uuid5(uuid.NAMESPACE_URL, f"{call.run_id}/{call.step}/{call.attempt}").hex,
        }
        if config.model:
            params["model"] = config.model
        if config.thinking_level:
            params["thinking"] = config.thinking_level
        return await self._request(socket, url, "agent", params)

    async def _request(
        self,
        socket: ClientConnection,
        url: str,
        method: str,
        params: Mapping[str, Any],
    ) -> Mapping[str, Any]:
        """Send a request; its answer's payload once final (an `accepted` answer is not final)."""
        frame_id = f"vectorstep-{next(self._ids)}"
        await socket.send(json.dumps({"type": "req", "id": frame_id, "method": method, "params": dict(params)}))
        while True:
            frame = _frame(await socket.recv(), url)
            kind = frame.get("type")
            if kind not in ("event", "res"):
                raise ExecutorError(f"the OpenClaw gateway at {url} sent a frame of unknown type: {_shown(frame)}")
            if kind == "event" or frame.get("id") != frame_id:
                continue  # agent stream events and ticks: the final answer carries what we need
            if not frame.get("ok"):
                message = (frame.get("error") or {}).get("message") or "no reason given"
                verb = "refused the connection" if method == "connect" else f"failed the {method} request"
                raise ExecutorError(f"the OpenClaw gateway at {url} {verb}: {message}")
            payload = frame.get("payload")
            if not isinstance(payload, Mapping):
                raise ExecutorError(f"the OpenClaw gateway at {url} answered {method} without a payload")
            if payload.get("status") == "accepted":
                continue
            return payload


def final_text(payload: Mapping[str, Any]) -> str:
    """The answer's text: the final payloads' texts (the §13.2 shape), or a bare `text`."""
    result = payload.get("result") if isinstance(payload.get("result"), Mapping) else payload
    pieces = result.get("payloads") if isinstance(result, Mapping) else None
    if isinstance(pieces, list):
        texts = [piece.get("text") for piece in pieces if isinstance(piece, Mapping)]
        return "\n".join(text for text in texts if isinstance(text, str))
    text = result.get("text") if isinstance(result, Mapping) else None
    return text if isinstance(text, str) else ""


def _agent_meta(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    result = payload.get("result")
    meta = result.get("meta") if isinstance(result, Mapping) else None
    agent_meta = meta.get("agentMeta") if isinstance(meta, Mapping) else None
    return agent_meta if isinstance(agent_meta, Mapping) else {}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _frame(raw: str | bytes, url: str) -> dict[str, Any]:
    try:
        frame = json.loads(raw)
    except ValueError:
        raise ExecutorError(
            f"the OpenClaw gateway at {url} sent a frame that is not JSON: {str(raw)[:200]!r}"
        ) from None
    if not isinstance(frame, dict):
        raise ExecutorError(f"the OpenClaw gateway at {url} sent a frame that is not an object: {str(raw)[:200]!r}")
    return frame


def _shown(frame: Mapping[str, Any]) -> str:
    return json.dumps(frame, ensure_ascii=False)[:200]


def ws_url(url: str) -> str:
    parts = urlsplit(url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme)
    return urlunsplit((scheme, parts.netloc, parts.path, parts.query, ""))
