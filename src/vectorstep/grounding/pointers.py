"""Where a judge's evidence is: the place in the whole tool result that its quote or its anchors point to.

A judge marks a claim supported and quotes its evidence ("[4] max_conns=4 min_conns=0"). The quote
is looked up in the step's tool results — exactly, then ignoring case and spacing, piece by piece
when the judge abbreviated it or quoted across an omission marker — preferring the result of the
transcript entry it names. When nothing it quotes is found, the claim's and the evidence's anchors
are looked up together (`together`). No place found while the judge quoted something is itself a
finding: `evidence_not_found`, a cheap check on a judge that invents its evidence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from vectorstep.domain.signals import EvidencePointer
from vectorstep.grounding.anchors import statement_anchors
from vectorstep.grounding.evidence import StepEvidence
from vectorstep.grounding.together import find_together

MIN_FRAGMENT_CHARS = 6
MIN_QUOTE_CHARS = 16
MAX_SPREAD_CHARS = 3000  # pieces of one quote further apart than this are not one quote
_ENTRY = re.compile(r"^\s*\[(\d{1,9})\]")
_QUOTED = re.compile(r"[\"'`\u201c\u2018]([^\"`\u201d\u2019\n]{4,})[\"'`\u201d\u2019]")
_BREAKS = re.compile(r"\s*(?:…\s*\[[\d,]+ (?:characters|chars) omitted\]\s*…|\.{3}|…)\s*")
_PREFIX = re.compile(
    r"^\s*(?:\[\d+\]\s*)?(?:(?:result of|from|in)\s+)?(?:\[\d+\]\s*)?(?:[\w.-]+__[\w.-]+\s*[:\-–]?\s*)?"
)


@dataclass(frozen=True)
class Located:
    pointer: EvidencePointer | None
    not_found: bool  # the judge quoted evidence that is in no tool result (nor in the task)


def locate(claim: str, quoted: str, evidence: StepEvidence, entry_calls: Mapping[int, str | None]) -> Located:
    fragments = _fragments(quoted)
    preferred = _preferred(quoted, entry_calls)
    results = sorted(evidence.usable, key=lambda result: result.call_id != preferred)  # an error backs nothing
    for result in results:
        span = _quote_span(result.text, fragments)
        if span is not None:
            return Located(result.pointer(*span, "quote"), False)
    anchors = [anchor for anchor in statement_anchors(f"{claim}\n{quoted}") if anchor.hard]
    for result in results:
        group = find_together(result, anchors) if anchors else None
        if group is not None:
            record = group.nearest_record()
            node = record if record.end - record.start <= MAX_SPREAD_CHARS else group
            return Located(result.node_pointer(node, "anchors"), False)
    given = any(_quote_span(evidence.task, [fragment]) for fragment in fragments)
    return Located(None, bool(fragments) and not given)


def _preferred(quoted: str, entry_calls: Mapping[int, str | None]) -> str | None:
    # An entry's number, as the transcript writes it; a judge's quote is untrusted, so only so many digits.
    match = _ENTRY.match(quoted) or re.search(r"\[(\d{1,9})\]", quoted)
    return entry_calls.get(int(match.group(1))) if match else None


def _fragments(quoted: str) -> list[str]:
    """What to look for, best first: the evidence as written, its pieces between ellipses, its quotes."""
    text = _PREFIX.sub("", quoted, count=1).strip()
    # A quoted key ("version") alone points nowhere: a quote counts when it says something specific.
    quotes = [match.group(1) for match in _QUOTED.finditer(text)]
    specific = [
        quote for quote in quotes if len(quote) >= MIN_QUOTE_CHARS or any(a.hard for a in statement_anchors(quote))
    ]
    fragments: list[str] = []
    for candidate in [text, *_BREAKS.split(text), *specific]:
        piece = candidate.strip(" ,;")
        if len(piece) >= MIN_FRAGMENT_CHARS and piece not in fragments:
            fragments.append(piece)
    return fragments


def _quote_span(text: str, fragments: list[str]) -> tuple[int, int] | None:
    """Where the evidence is in `text`: all of it; else the span of its pieces; else its longest quote."""
    if not fragments:
        return None
    whole = _find(text, fragments[0])
    if whole is not None:
        return whole
    spans = [span for span in (_find(text, fragment) for fragment in fragments[1:]) if span is not None]
    if not spans:
        return None
    start, end = min(span[0] for span in spans), max(span[1] for span in spans)
    if end - start <= MAX_SPREAD_CHARS:
        return start, end
    return max(spans, key=lambda span: span[1] - span[0])


def _find(text: str, fragment: str) -> tuple[int, int] | None:
    position = text.find(fragment)
    if position != -1:
        return position, position + len(fragment)
    words = fragment.split()
    if not words:
        return None
    pattern = r"\s+".join(re.escape(word) for word in words)
    match = re.search(pattern, text, re.IGNORECASE)
    return match.span() if match else None
