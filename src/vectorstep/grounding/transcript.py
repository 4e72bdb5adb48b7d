"""A step's trace as a transcript for a judge or a critic: one entry per event, each within a budget.

Tool calls (arguments capped), tool results (within the budget, by evidence windows or head
truncation), refused calls and the agent's own text, in order. Thinking and bookkeeping are left
out, and so is the final answer (the judge gets it separately). Every cut is marked in place and
counted, and we remember whether the cut was ours or the runtime's (its capped trace copy).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from vectorstep.domain.trace import TraceEvent
from vectorstep.grounding.anchors import Anchor
from vectorstep.grounding.evidence import StepEvidence, ToolResult
from vectorstep.grounding.finding import ResultIndex
from vectorstep.grounding.windows import ResultWindows, answer_anchors, head_only

ARGUMENTS_MAX_CHARS = 300
MIN_LOAN = 40  # less unused room than this is not worth choosing windows again


@dataclass(frozen=True)
class Transcript:
    entries: tuple[str, ...]
    truncated_events: int  # entries shortened, by us or (for tool results) by the runtime before us
    cut_by_runtime: int  # tool results the runtime capped and whose whole was not available here
    shortened: tuple[tuple[str, str], ...] = ()  # (whole result, what was shown) of each shortened result
    result_entries: Mapping[int, str | None] = field(default_factory=dict)  # entry number → its call's id
    evidence: StepEvidence | None = field(default=None, repr=False, compare=False)  # the results, read already

    def hides(self, anchor: Anchor) -> bool:
        """True when `anchor` is in a tool result but not in what the reader was shown of it."""
        return any(whole.find(anchor) and not shown.find(anchor) for whole, shown in self._shortened_indexes)

    @cached_property
    def _shortened_indexes(self) -> list[tuple[ResultIndex, ResultIndex]]:
        pairs = []
        for whole, shown in self.shortened:
            read = _read(self.evidence, whole)
            pairs.append((read.index if read is not None else ResultIndex(whole), ResultIndex(shown)))
        return pairs

    @property
    def text(self) -> str:
        return "\n".join(self.entries)


def build_transcript(
    trace: Sequence[TraceEvent],
    full_results: Mapping[str, str],
    answer: Mapping[str, Any],
    *,
    max_chars: int,
    evidence_windows: bool = True,
    evidence: StepEvidence | None = None,
) -> Transcript:
    """`evidence`, when the step's results were read for the anchor check already: they are not read again."""
    denied = {event.call_id for event in trace if event.type == "tool_denied"}
    anchors = answer_anchors(answer) if evidence_windows else []
    last_model_call = max((event.seq for event in trace if event.type == "llm_call"), default=0)
    entries: list[str] = []
    call_entry: dict[str | None, int] = {}  # results arrive in the order they finish: name the call
    truncated = cut_by_runtime = 0
    shortened: list[tuple[str, str]] = []
    result_entries: dict[int, str | None] = {}
    shown_of = (
        _shown_results(trace, full_results, denied, anchors, max_chars, evidence=evidence) if evidence_windows else {}
    )
    for event in trace:
        if event.type == "tool_call":
            call_entry[event.call_id] = len(entries) + 1
            entries.append(f"[{len(entries) + 1}] call {event.name} {_arguments(event.args)}")
        elif event.type == "tool_denied":
            entries.append(f"[{len(entries) + 1}] refused {event.name}: {event.reason}")
        elif event.type == "tool_result" and event.call_id not in denied:
            whole = full_results.get(event.call_id or "")
            source = whole if whole is not None else event.content or ""
            shown = shown_of[id(event)] if evidence_windows else head_only(source, max_chars)
            runtime_cut = whole is None and event.was_capped
            cut = runtime_cut or shown != source
            truncated += cut
            cut_by_runtime += runtime_cut
            if shown != source:
                shortened.append((source, shown))
            status = "error" if event.is_error else "ok"
            if runtime_cut:  # the judge must know the rest of this result exists and was not shown to it
                status += ", cut by the gateway" if event.capped_by == "gateway" else ", cut by the runtime"
            of = f" of [{call_entry[event.call_id]}]" if event.call_id in call_entry else ""
            result_entries[len(entries) + 1] = event.call_id
            entries.append(f"[{len(entries) + 1}] result{of} {event.name} ({status}): {shown}")
        elif event.type == "text" and event.seq < last_model_call and event.content:
            shown = head_only(event.content, max_chars)
            truncated += shown != event.content
            entries.append(f"[{len(entries) + 1}] agent: {shown}")
    return Transcript(tuple(entries), truncated, cut_by_runtime, tuple(shortened), result_entries, evidence)


def _shown_results(
    trace: Sequence[TraceEvent],
    full_results: Mapping[str, str],
    denied: set[str | None],
    anchors: list[Anchor],
    max_chars: int,
    *,
    evidence: StepEvidence | None,
) -> dict[int, str]:
    """What is shown of each tool result: its windows within `max_chars`, and then, for results that
    still hide some of the answer's anchors (those hiding most first), the room the others left
    unused — never more in all than `max_chars` of each result, which is what head truncation shows."""
    sources = {
        id(event): full_results.get(event.call_id or "") or event.content or ""
        for event in trace
        if event.type == "tool_result" and event.call_id not in denied
    }
    shown = {key: source for key, source in sources.items() if len(source) <= max_chars}
    readers = {
        key: _windows(source, anchors, _read(evidence, source)) for key, source in sources.items() if key not in shown
    }
    hidden: dict[int, int] = {}
    for key, reader in readers.items():
        shown[key], hidden[key] = reader.choose(max_chars)
    spare = sum(min(len(source), max_chars) - len(shown[key]) for key, source in sources.items())
    for key in sorted((key for key in hidden if hidden[key]), key=lambda key: -hidden[key]):
        if spare < MIN_LOAN:
            break
        wider, _ = readers[key].choose(len(shown[key]) + spare)
        spare -= len(wider) - len(shown[key])
        shown[key] = wider
    return shown


def _arguments(args: Mapping[str, Any] | None) -> str:
    text = json.dumps(dict(args or {}), ensure_ascii=False, separators=(",", ":"))
    return text if len(text) <= ARGUMENTS_MAX_CHARS else text[:ARGUMENTS_MAX_CHARS] + "…"


def _read(evidence: StepEvidence | None, text: str) -> ToolResult | None:
    return evidence.reading(text) if evidence is not None else None


def _windows(source: str, anchors: list[Anchor], read: ToolResult | None) -> ResultWindows:
    if read is None:
        return ResultWindows(source, anchors)
    return ResultWindows(source, anchors, read.shape, read.index)
