"""The WebSocket `/rpc` frame protocol of VectorStep gateways: frames, and agent replies to and from JSON.

Frames are JSON text: a request `{type: "req", id, method, params}`, its response
`{type: "res", id, ok, payload | error}` and events `{type: "event", event, payload, seq}`.
A connection opens with the gateway's `connect.challenge` event; the client answers with a
`connect` request carrying `auth.token`; then each `agent` request gets an `accepted` response,
`trace_event` events as the agent works, and a final response with the same id.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from typing import Any

from vectorstep.domain.execution import ModelUsage, Usage
from vectorstep.domain.trace import TraceEvent
from vectorstep.runtime.protocol import AgentReply

PROTOCOL = 3
CHALLENGE = "connect.challenge"
TRACE_EVENT = "trace_event"


class ProtocolError(Exception):
    """A frame that breaks the protocol, with the error code sent back."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def challenge() -> dict[str, Any]:
    return event(CHALLENGE, {"nonce": secrets.token_hex(16), "ts": int(time.time() * 1000)})


def request(frame_id: str, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "req", "id": frame_id, "method": method, "params": dict(params)}


def response(frame_id: str, payload: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "res", "id": frame_id, "ok": True, "payload": dict(payload)}


def failure(frame_id: str | None, code: str, message: str, details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if details:
        error["details"] = dict(details)
    return {"type": "res", "id": frame_id, "ok": False, "error": error}


def event(name: str, payload: Mapping[str, Any], seq: int | None = None) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": "event", "event": name, "payload": dict(payload)}
    if seq is not None:
        frame["seq"] = seq
    return frame


def parse_request(frame: Any) -> tuple[str, str, dict[str, Any]]:
    if not isinstance(frame, dict) or frame.get("type") != "req":
        raise ProtocolError("invalid_request", "expected a request frame {type: 'req', id, method, params}")
    frame_id, method, params = frame.get("id"), frame.get("method"), frame.get("params") or {}
    if not isinstance(frame_id, str) or not frame_id or not isinstance(method, str) or not isinstance(params, dict):
        raise ProtocolError("invalid_request", "a request needs a string `id`, a string `method` and object `params`")
    return frame_id, method, params


# -- agent replies ---------------------------------------------------------------------------------


def reply_result(run_id: str, reply: AgentReply) -> dict[str, Any]:
    """The final payload of an `agent` request."""
    return {
        "runId": run_id,
        "status": "ok",
        "result": {
            "payloads": [{"text": reply.text}],
            "meta": {
                "durationMs": reply.duration_ms,
                "agentMeta": {
                    "provider": reply.provider,
                    "model": reply.model,
                    "agentVersion": reply.agent_version,
                    "usage": usage_json(reply.usage),
                },
                "stopReason": reply.stop_reason,
                "truncated": reply.truncated,
            },
            "trace": [item.as_dict() for item in reply.trace],
            # Whole tool results (the trace holds capped copies): what a grounding judge reads.
            "fullToolResults": dict(reply.full_tool_results),
        },
    }


def reply_from_result(payload: Mapping[str, Any]) -> AgentReply:
    result = payload.get("result") or {}
    meta = result.get("meta") or {}
    agent_meta = meta.get("agentMeta") or {}
    return AgentReply(
        text="".join(str(part.get("text") or "") for part in result.get("payloads") or []),
        trace=tuple(TraceEvent.from_dict(item) for item in result.get("trace") or []),
        usage=usage_from_json(agent_meta.get("usage") or {}, str(agent_meta.get("model") or "")),
        model=str(agent_meta.get("model") or ""),
        provider=str(agent_meta.get("provider") or ""),
        agent_version=str(agent_meta.get("agentVersion") or ""),
        duration_ms=float(meta.get("durationMs") or 0.0),
        stop_reason=meta.get("stopReason"),
        truncated=bool(meta.get("truncated")),
        full_tool_results=dict(result.get("fullToolResults") or {}),
    )


def usage_json(usage: Usage) -> dict[str, Any]:
    by_model = usage.as_dict()
    return {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "cacheRead": sum(model["cached_input_tokens"] for model in by_model.values()),
        "total": usage.input_tokens + usage.output_tokens,
        "byModel": by_model,
    }


def usage_from_json(data: Mapping[str, Any], model: str) -> Usage:
    by_model = data.get("byModel")
    if isinstance(by_model, dict) and by_model:
        return Usage(
            {
                name: ModelUsage(
                    int(counts.get("input_tokens") or 0),
                    int(counts.get("output_tokens") or 0),
                    int(counts.get("requests") or 0),
                    int(counts.get("cached_input_tokens") or 0),
                )
                for name, counts in by_model.items()
            }
        )
    # A gateway that reports totals only: they are booked on the model it names.
    totals = ModelUsage(int(data.get("input") or 0), int(data.get("output") or 0), 1, int(data.get("cacheRead") or 0))
    return Usage({model or "unknown": totals})
