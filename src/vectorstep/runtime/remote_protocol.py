"""The WebSocket `/rpc` frame protocol of VectorStep gateways (SYSTEM.md §13.2): frames, and agent
replies to and from JSON.

Frames are JSON text: a request `{type: "req", id, method, params}`, its response
`{type: "res", id, ok, payload | error}` and events `{type: "event", event, payload}`. A connection
opens with the gateway's `challenge` event (OpenClaw's name, `connect.challenge`, is accepted too);
the client answers with a `connect` request carrying `auth.token`; then each `agent` request gets an
`accepted` response, a `trace_event` response per event as the agent works, and a final `ok`
response, all with the request's id. What we send carries the existing gateways' fields (`input`,
`usage.input_tokens`) and ours (`args`, `seq`, `ts`, `call_id`, per-model usage) side by side.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from vectorstep.domain.execution import ModelUsage, Usage
from vectorstep.domain.trace import TraceEvent
from vectorstep.runtime.arrivals import Arrivals
from vectorstep.runtime.protocol import AgentReply

PROTOCOL = 3
CHALLENGE = "challenge"
CHALLENGES = ("challenge", "connect.challenge")
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


def dialect_event(trace_event: TraceEvent) -> dict[str, Any]:
    """An event as both dialects read it: ours, plus `input` and `usage` of the existing gateways."""
    shaped = trace_event.as_dict()
    if trace_event.type == "tool_call":
        shaped["input"] = dict(trace_event.args or {})
    if trace_event.input_tokens is not None or trace_event.output_tokens is not None:
        shaped["usage"] = {
            "input_tokens": trace_event.input_tokens or 0,
            "output_tokens": trace_event.output_tokens or 0,
        }
    return shaped


def reply_result(run_id: str, reply: AgentReply) -> dict[str, Any]:
    """The final payload of an `agent` request."""
    return {
        "runId": run_id,
        "status": "ok",
        "result": {
            "payloads": [{"text": reply.text}],
            "meta": {
                "durationMs": reply.duration_ms,
                "aborted": False,
                "agentMeta": {
                    "provider": reply.provider,
                    "model": reply.model,
                    "agentVersion": reply.agent_version,
                    "usage": usage_json(reply.usage),
                },
                "stopReason": reply.stop_reason,
                "truncated": reply.truncated,
            },
            "trace": [dialect_event(item) for item in reply.trace],
            # Whole tool results (the trace holds capped copies): what a grounding judge reads.
            "fullToolResults": dict(reply.full_tool_results),
        },
    }


def reply_from_result(payload: Mapping[str, Any], streamed: Sequence[TraceEvent] = ()) -> AgentReply:
    """The reply in a final payload. Its trace: the result's own when every event in it is whole (our
    gateway's), else the events as they streamed in, made whole on arrival (`arrivals`)."""
    result = _mapping(payload.get("result"))
    meta = _mapping(result.get("meta"))
    agent_meta = _mapping(meta.get("agentMeta"))
    if meta.get("aborted"):
        raise ProtocolError("aborted", "the gateway aborted the run")
    given = result.get("payloads")
    payloads: list[Any] = given if isinstance(given, list) else []
    return AgentReply(
        text="".join(str(part.get("text") or "") for part in payloads if isinstance(part, Mapping)),
        trace=_trace(result.get("trace"), streamed),
        usage=usage_from_json(_mapping(agent_meta.get("usage")), str(agent_meta.get("model") or "")),
        model=str(agent_meta.get("model") or ""),
        provider=str(agent_meta.get("provider") or ""),
        agent_version=str(agent_meta.get("agentVersion") or ""),
        duration_ms=float(meta.get("durationMs") or 0.0),
        stop_reason=meta.get("stopReason"),
        truncated=bool(meta.get("truncated")),
        full_tool_results=dict(_mapping(result.get("fullToolResults"))),
    )


def _trace(given: Any, streamed: Sequence[TraceEvent]) -> tuple[TraceEvent, ...]:
    items = [item for item in given if isinstance(item, Mapping)] if isinstance(given, list) else []
    whole = items and all(isinstance(item.get("seq"), int) and isinstance(item.get("ts"), str) for item in items)
    if not whole and (streamed or not items):
        return tuple(streamed)
    return made_whole(items)


def made_whole(items: Sequence[Any]) -> tuple[TraceEvent, ...]:
    """Trace events as a gateway sent them (its values typed and checked, see `arrivals`)."""
    arrivals = Arrivals()
    return tuple(found for item in items if isinstance(item, Mapping) and (found := arrivals.accept(item)) is not None)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def usage_json(usage: Usage) -> dict[str, Any]:
    by_model = usage.as_dict()
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
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
                    _count(counts.get("input_tokens")),
                    _count(counts.get("output_tokens")),
                    _count(counts.get("requests")),
                    _count(counts.get("cached_input_tokens")),
                )
                for name, counts in by_model.items()
                if isinstance(counts, Mapping)
            }
        )
    # A gateway that reports totals only (`input_tokens`/`output_tokens`, or our `input`/`output`):
    # they are booked on the model it names.
    given_input = data.get("input_tokens", data.get("input"))
    given_output = data.get("output_tokens", data.get("output"))
    totals = ModelUsage(_count(given_input), _count(given_output), 1, _count(data.get("cacheRead")))
    return Usage({model or "unknown": totals})


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0
