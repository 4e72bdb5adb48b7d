"""Trace events: what an agent did during one turn, in order (SYSTEM.md §13)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

TraceEventType = Literal[
    "llm_call", "llm_retry", "model_fallback", "thinking", "text", "tool_call", "tool_result", "tool_denied"
]
TOOL_EVENT_TYPES = frozenset({"tool_call", "tool_result", "tool_denied"})


@dataclass(frozen=True)
class TraceEvent:
    """One event. `call_id` pairs a tool call with its result (or its denial)."""

    type: TraceEventType
    seq: int
    ts: str
    duration_ms: float | None = None
    call_id: str | None = None
    name: str | None = None
    args: Mapping[str, Any] | None = None
    content: str | None = None
    is_error: bool | None = None
    original_chars: int | None = None  # a capped tool result: how long the whole result was
    reason: str | None = None
    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    stop_reason: str | None = None
    # Set when a gateway's event was made whole on arrival: how its result was paired, if by guess.
    note: str | None = None
    capped_by: str | None = None  # `gateway`: an existing gateway capped the result; its length is unknown

    def as_dict(self) -> dict[str, Any]:
        # Hot path (every event of every step is stored): no deep copy; `args` is a fresh shallow dict.
        found = {name: getattr(self, name) for name in _FIELDS}
        if self.args is not None:
            found["args"] = dict(self.args)
        return {key: value for key, value in found.items() if value is not None}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceEvent:
        known = cls.__dataclass_fields__
        return cls(**{key: value for key, value in data.items() if key in known})

    @property
    def was_capped(self) -> bool:
        return self.original_chars is not None or self.capped_by is not None


_FIELDS = tuple(TraceEvent.__dataclass_fields__)


def cap_text(text: str, max_chars: int) -> tuple[str, int | None]:
    """Keep the head of `text` within `max_chars`, with a marker saying how much was cut.

    Returns the text and, when cut, the original length.
    """
    if len(text) <= max_chars:
        return text, None
    cut = len(text) - max_chars
    marker = f"… [trace copy cut: {cut:,} of {len(text):,} characters omitted after the first {max_chars:,}]"
    return text[:max_chars] + marker, len(text)


GATEWAY_CAP_MARKER = "… [truncated]"  # how existing gateways end a capped tool result


def without_cap_marker(content: str) -> str:
    """A capped copy without the marker the runtime (ours, or an existing gateway's) put at its end."""
    for marker in ("… [trace copy cut:", GATEWAY_CAP_MARKER):
        cut = content.rfind(marker)
        if cut != -1:
            return content[:cut]
    return content


def has_tool_activity(trace: tuple[TraceEvent, ...] | list[TraceEvent]) -> bool:
    return any(event.type in TOOL_EVENT_TYPES for event in trace)
