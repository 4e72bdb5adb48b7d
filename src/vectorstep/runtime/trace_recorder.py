"""Recording a turn's trace: numbered, timed events; capped tool results with the whole kept aside."""

from __future__ import annotations

from typing import Any

from vectorstep.clock import Clock
from vectorstep.domain.trace import TraceEvent, TraceEventType, cap_text
from vectorstep.runtime.protocol import TraceListener


class TraceRecorder:
    def __init__(self, clock: Clock, tool_result_cap: int, listener: TraceListener | None = None) -> None:
        self._clock = clock
        self._cap = tool_result_cap
        self._listener = listener
        self.events: list[TraceEvent] = []
        self.full_tool_results: dict[str, str] = {}

    def add(self, type_: TraceEventType, **fields: Any) -> TraceEvent:
        event = TraceEvent(type=type_, seq=len(self.events) + 1, ts=self._clock.now().isoformat(), **fields)
        self.events.append(event)
        if self._listener is not None:
            self._listener(event)
        return event

    def tool_result(self, *, call_id: str, name: str, content: str, is_error: bool, duration_ms: float) -> TraceEvent:
        """The trace keeps a capped copy; the whole result is kept in memory for the step's judges."""
        self.full_tool_results[call_id] = content
        capped, original = cap_text(content, self._cap)
        return self.add(
            "tool_result",
            call_id=call_id,
            name=name,
            content=capped,
            is_error=is_error,
            duration_ms=duration_ms,
            original_chars=original,
        )
