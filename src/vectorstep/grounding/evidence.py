"""A step's evidence: its tool results, whole where the runtime kept them, each read once.

Both the anchor check and the evidence pointers look things up in the same results: each result
is indexed (`finding`) and shaped (`shapes`) the first time it is needed, and the task — the
agent's rendered prompt, which it was given rather than asked to discover — is indexed beside
them, because a claim that restates the task needs no evidence.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from vectorstep.domain.signals import EvidencePointer
from vectorstep.domain.trace import TraceEvent, without_cap_marker
from vectorstep.grounding.anchors import Anchor
from vectorstep.grounding.counts import MAX_COUNTED_PLACES, counts
from vectorstep.grounding.finding import ResultIndex, Span
from vectorstep.grounding.keys import FieldName, keyed_figures
from vectorstep.grounding.shapes import Node, Shape

EXCERPT_MAX_CHARS = 400


@dataclass
class ToolResult:
    call_id: str | None
    tool: str | None
    text: str
    is_error: bool
    whole: bool  # False when only the runtime's capped copy arrived
    # What the agent asked for (`promql=…`): a bare series' figure is about what its query names.
    asked: str = ""
    _counted: dict[Anchor, list[Span]] = field(default_factory=dict, init=False, repr=False, compare=False)

    @cached_property
    def index(self) -> ResultIndex:
        return ResultIndex(self.text)

    def find(self, anchor: Anchor) -> list[Span]:
        """Where the result states `anchor`; a small count only where it counts what the claim counts."""
        found = self.index.find(anchor)
        if not anchor.counted or not found:
            return found
        if anchor not in self._counted:
            places = found[:MAX_COUNTED_PLACES]
            self._counted[anchor] = [span for span in places if counts(self.index, self.shape, span, anchor.counted)]
        return self._counted[anchor]

    @cached_property
    def asked_index(self) -> ResultIndex:
        return ResultIndex(self.asked)

    @cached_property
    def shape(self) -> Shape:
        return Shape(self.text)

    @cached_property
    def keyed_figures(self) -> list[tuple[FieldName, str, int]]:
        """The figures that are a field's whole value, with the field's name (read once, for every claim)."""
        return keyed_figures(self.shape)

    def pointer(self, start: int, end: int, found_by: str) -> EvidencePointer:
        excerpt = self.text[start:end]
        if len(excerpt) > EXCERPT_MAX_CHARS:
            excerpt = excerpt[: EXCERPT_MAX_CHARS - 1] + "…"
        return EvidencePointer(self.call_id, self.tool, start, end, excerpt, found_by)

    def node_pointer(self, node: Node, found_by: str) -> EvidencePointer:
        return self.pointer(node.start, node.end, found_by)


@dataclass
class StepEvidence:
    task: str
    results: list[ToolResult] = field(default_factory=list)
    # What the agent asked its tools (the cluster, the pod, the query): chosen by it, not discovered.
    arguments: list[str] = field(default_factory=list)

    @cached_property
    def task_index(self) -> ResultIndex:
        return ResultIndex(self.task)

    @cached_property
    def arguments_index(self) -> ResultIndex:
        return ResultIndex("\n".join(self.arguments))

    def given(self, anchor: Anchor) -> bool:
        """Told, not discovered: in the task; or a name the agent chose for its own calls (the
        cluster it queried) that no result repeats.

        A figure in the arguments (`limit=25`, `step=60s`) says what was asked, not what was found.
        """
        if self.task_index.find(anchor):
            return True
        if anchor.kind in ("number", "time") or not self.arguments_index.find(anchor):
            return False
        return not any(result.find(anchor) for result in self.usable)

    def reading(self, text: str) -> ToolResult | None:
        """The result whose text this is, so whoever else reads it (the judge's transcript) reuses
        its shape and index instead of reading a long result again."""
        return next((result for result in self.results if result.text == text), None)

    @property
    def usable(self) -> list[ToolResult]:
        """What can back a claim: results that are not errors."""
        return [result for result in self.results if not result.is_error]

    @classmethod
    def of_trace(cls, task: str, trace: Sequence[TraceEvent], full_results: Mapping[str, str]) -> StepEvidence:
        denied = {event.call_id for event in trace if event.type == "tool_denied"}
        asked = {event.call_id: _arguments(event.args) for event in trace if event.type == "tool_call" and event.args}
        results = []
        for event in trace:
            if event.type != "tool_result" or event.call_id in denied:
                continue
            full = full_results.get(event.call_id or "")
            asked_of = asked.get(event.call_id, "")
            if full is not None or not event.was_capped:
                results.append(
                    ToolResult(
                        event.call_id, event.name, full or event.content or "", bool(event.is_error), True, asked_of
                    )
                )
            else:
                text = without_cap_marker(event.content or "")
                results.append(ToolResult(event.call_id, event.name, text, bool(event.is_error), False, asked_of))
        return cls(task, results, list(asked.values()))


def _arguments(args: Mapping[str, Any]) -> str:
    return " ".join(f"{key}={value}" for key, value in args.items())
