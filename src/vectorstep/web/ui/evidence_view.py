"""Where each claim's evidence is in a step's trace: a link from the claim, a highlight in the result.

A grounding report gives, per claim, an evidence pointer into the *whole* tool result. The stored
trace holds the runtime's capped copy, whose head is the whole result's head: a span inside it is
highlighted in place; a span past it is said to be so, and its excerpt (kept in the report) shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vectorstep.domain.trace import TraceEvent, without_cap_marker


@dataclass(frozen=True)
class EvidenceLink:
    target: str  # the element id to go to: the highlighted span, or the tool call when it is not stored
    tool: str
    where: str  # "characters 1,203–1,290 of 11,555"
    excerpt: str
    stored: bool  # the span is inside the stored copy of the result (and highlighted there)
    found_by: str


@dataclass(frozen=True)
class Highlight:
    start: int
    end: int
    element_id: str


def call_element_id(step_index: int, position: int) -> str:
    return f"s{step_index}-call-{position}"


def evidence_links(
    step_index: int, trace: Sequence[TraceEvent], claims: Sequence[Mapping[str, Any]]
) -> tuple[list[EvidenceLink | None], dict[str, list[Highlight]]]:
    """Per claim its link (or None), and per call id the spans to highlight in its stored result."""
    positions = {event.call_id: n for n, event in enumerate(_calls(trace), start=1) if event.call_id}
    stored = {event.call_id: event for event in trace if event.type == "tool_result" and event.call_id}
    links: list[EvidenceLink | None] = []
    highlights: dict[str, list[Highlight]] = {}
    for number, claim in enumerate(claims, start=1):
        pointer = claim.get("evidence_pointer") or (claim.get("local") or {}).get("pointer")
        call_id = pointer.get("call_id") if isinstance(pointer, Mapping) else None
        if not isinstance(pointer, Mapping) or call_id not in positions:
            links.append(None)
            continue
        start, end = int(pointer["start"]), int(pointer["end"])
        result = stored.get(call_id)
        content = without_cap_marker(result.content or "") if result is not None else ""
        whole = result.original_chars if result is not None and result.original_chars else len(content)
        inside = end <= len(content)
        element = f"s{step_index}-evidence-{number}" if inside else call_element_id(step_index, positions[call_id])
        if inside:
            highlights.setdefault(call_id, []).append(Highlight(start, end, element))
        where = f"characters {start:,}–{end:,} of {whole:,}"
        links.append(
            EvidenceLink(
                element,
                str(pointer.get("tool") or ""),
                where,
                str(pointer.get("excerpt") or ""),
                inside,
                str(pointer.get("found_by") or ""),
            )
        )
    return links, highlights


def marked(content: str, highlights: Sequence[Highlight]) -> list[tuple[str, str | None]]:
    """`content` in pieces, each highlighted piece with its element id (where spans overlap, the first wins)."""
    pieces: list[tuple[str, str | None]] = []
    position = 0
    for highlight in sorted(highlights, key=lambda each: each.start):
        start = max(highlight.start, position)
        if start > position:
            pieces.append((content[position:start], None))
        # A span inside one already marked still gets its (empty) element, so its link lands there.
        pieces.append((content[start : max(start, highlight.end)], highlight.element_id))
        position = max(position, highlight.end)
    if position < len(content):
        pieces.append((content[position:], None))
    return pieces


def _calls(trace: Sequence[TraceEvent]) -> list[TraceEvent]:
    return [event for event in trace if event.type == "tool_call"]
