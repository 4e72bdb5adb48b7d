"""An agent's trace for reading: each tool call shown with its result (or its denial), in order."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from vectorstep.domain.trace import TraceEvent
from vectorstep.web.ui.evidence_view import Highlight, call_element_id, marked


@dataclass(frozen=True)
class TraceItem:
    kind: str  # llm_call | text | thinking | tool | llm_retry | model_fallback
    title: str
    body: str | None = None
    result: str | None = None
    failed: bool = False
    note: str | None = None
    element_id: str | None = None  # a tool call's, for the Trust panel's evidence links
    result_parts: list[tuple[str, str | None]] = field(default_factory=list)  # the result, with highlights


def trace_items(
    trace: Sequence[TraceEvent], step_index: int = 0, highlights: Mapping[str, list[Highlight]] | None = None
) -> list[TraceItem]:
    answers = {
        event.call_id: event for event in trace if event.type in ("tool_result", "tool_denied") and event.call_id
    }
    called = {event.call_id for event in trace if event.type == "tool_call"}
    items: list[TraceItem] = []
    calls = 0
    for event in trace:
        if event.type == "tool_call":
            calls += 1
            item = _tool(event, answers.get(event.call_id or ""))
            marks = (highlights or {}).get(event.call_id or "", [])
            parts = marked(item.result, marks) if item.result is not None and marks else []
            items.append(replace(item, element_id=call_element_id(step_index, calls), result_parts=parts))
        elif event.type == "llm_call":
            tokens = f"{event.input_tokens or 0:,} in / {event.output_tokens or 0:,} out"
            took = f", {event.duration_ms:.0f} ms" if event.duration_ms is not None else ""
            items.append(TraceItem("llm_call", f"model call · {event.model or '?'} · {tokens}{took}"))
        elif event.type in ("text", "thinking"):
            items.append(TraceItem(event.type, event.type, event.content))
        elif event.type in ("llm_retry", "model_fallback"):
            items.append(
                TraceItem(event.type, event.type.replace("_", " "), event.reason or event.content, failed=True)
            )
        elif event.call_id not in called:
            items.append(TraceItem("tool", f"{event.type} without its call", event.content, failed=True))
    return items


def _tool(call: TraceEvent, answer: TraceEvent | None) -> TraceItem:
    arguments = json.dumps(dict(call.args or {}), indent=2, ensure_ascii=False)
    took = f" · {answer.duration_ms:.0f} ms" if answer is not None and answer.duration_ms is not None else ""
    if answer is None:
        return TraceItem("tool", f"{call.name}(…)", arguments, None, True, "no result recorded")
    if answer.type == "tool_denied":
        return TraceItem("tool", f"{call.name} — denied", arguments, None, True, answer.reason)
    note = f"stored copy cut from {answer.original_chars:,} characters" if answer.original_chars else None
    return TraceItem("tool", f"{call.name}{took}", arguments, answer.content, bool(answer.is_error), note)
