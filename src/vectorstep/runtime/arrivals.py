"""Trace events as a gateway sends them, made whole: numbered, stamped, and each result paired with its call.

Our gateway sends every event with `seq`, `ts`, `call_id`, `args` and token counts. Existing
gateways (SYSTEM.md §13.2) send none of those: tool arguments come as `input`, token usage as
`usage: {input_tokens, output_tokens}`, and results are capped with `… [truncated]`. Such events
are numbered in the order they arrive and stamped with the time they arrived; a result without a
`call_id` is paired with the earliest waiting call of the same tool. When more than one call of that
tool was waiting, the order is a guess, and the result says so in its `note` — never silently wrong.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, get_args

from vectorstep.domain.trace import GATEWAY_CAP_MARKER, TraceEvent, TraceEventType

KNOWN_TYPES = frozenset(get_args(TraceEventType))
# A gateway's values are untrusted: each field keeps the type the rest of VectorStep reads it as.
_TEXT = ("call_id", "name", "content", "reason", "model", "provider", "stop_reason", "note", "capped_by")
_COUNTS = ("original_chars", "input_tokens", "output_tokens")


class MalformedEvent(ValueError):
    """A trace event that is not an object."""


class Arrivals:
    def __init__(self, now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._now = now
        self._count = 0
        self._calls = 0
        self._waiting: dict[str, deque[str]] = defaultdict(deque)

    def accept(self, raw: Any) -> TraceEvent | None:
        """The event made whole; None for an event type this version does not know (it is skipped)."""
        if not isinstance(raw, Mapping):
            raise MalformedEvent(f"a trace event must be an object, got {json.dumps(raw)[:200]}")
        kind = raw.get("type")
        if kind not in KNOWN_TYPES:
            return None
        self._count += 1
        fields = _typed(raw)
        fields["type"] = kind
        fields["seq"] = raw["seq"] if isinstance(raw.get("seq"), int) else self._count
        fields["ts"] = raw["ts"] if isinstance(raw.get("ts"), str) else self._now().isoformat()
        if not isinstance(fields.get("args"), Mapping) and "input" in raw:
            fields["args"] = _arguments(raw["input"])
        fields.update(_tokens(raw))
        if kind == "tool_call":
            self._call(fields)
        elif kind in ("tool_result", "tool_denied"):
            self._pair(fields)
        if kind == "tool_result" and str(fields.get("content") or "").endswith(GATEWAY_CAP_MARKER):
            fields.setdefault("capped_by", "gateway")
        return TraceEvent(**fields)

    def _call(self, fields: dict[str, Any]) -> None:
        if not fields.get("call_id"):
            self._calls += 1
            fields["call_id"] = f"gw{self._calls}"
            self._waiting[str(fields.get("name"))].append(fields["call_id"])

    def _pair(self, fields: dict[str, Any]) -> None:
        if fields.get("call_id"):
            return
        name = str(fields.get("name"))
        waiting = self._waiting.get(name)
        if not waiting:
            fields["note"] = f"no call of {name} was waiting for this result: it is paired with none"
            return
        if len(waiting) > 1:
            fields["note"] = (
                f"paired by order: {len(waiting)} calls of {name} were waiting and the gateway sends no call "
                "ids, so this result is taken to answer the earliest"
            )
        fields["call_id"] = waiting.popleft()


def _typed(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The event's fields as TraceEvent types them: text as text (structured content as JSON), counts
    as whole numbers, a duration as a number; anything else is dropped."""
    fields: dict[str, Any] = {}
    for key in _TEXT:
        value = raw.get(key)
        if isinstance(value, str):
            fields[key] = value
        elif value is not None:
            fields[key] = json.dumps(value, ensure_ascii=False, default=str)[:100_000]
    for key in _COUNTS:
        if _number(raw.get(key)):
            fields[key] = int(raw[key])
    if _number(raw.get("duration_ms")):
        fields["duration_ms"] = float(raw["duration_ms"])
    if isinstance(raw.get("is_error"), bool):
        fields["is_error"] = raw["is_error"]
    if isinstance(raw.get("args"), Mapping):
        fields["args"] = dict(raw["args"])
    return fields


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e15


def _arguments(given: Any) -> dict[str, Any]:
    if isinstance(given, Mapping):
        return dict(given)
    if isinstance(given, str):
        try:
            parsed = json.loads(given)
        except ValueError:
            return {"input": given}
        return dict(parsed) if isinstance(parsed, dict) else {"input": parsed}
    return {} if given is None else {"input": given}


def _tokens(raw: Mapping[str, Any]) -> dict[str, int]:
    usage = raw.get("usage")
    if not isinstance(usage, Mapping):
        return {}
    found = {}
    for ours, theirs in (("input_tokens", "input_tokens"), ("output_tokens", "output_tokens")):
        value = raw.get(ours) if isinstance(raw.get(ours), int) else usage.get(theirs)
        if isinstance(value, int) and not isinstance(value, bool):
            found[ours] = value
    return found
