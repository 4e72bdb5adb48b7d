"""Checking claims without a model: are a claim's anchors in one record of one tool result?

For each claim with hard anchors (figures with units, ids, ticket keys, SHAs, pod and node names,
times), the check looks for them together in one record of one non-error tool result; anchors the
task already states are given. A figure found nowhere, or found only in another record, makes the
claim unsupported. A claim with no hard anchor ("only the eu-west pool is affected") and a causal
claim whose anchors are all there ("the deploy caused the spike") are `undecidable`: a record can
show a value, not a cause, and the check says so rather than guessing.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from vectorstep.domain.signals import EvidencePointer, LocalVerdict
from vectorstep.grounding.anchors import Anchor, Reading, statement_anchors
from vectorstep.grounding.evidence import StepEvidence, ToolResult
from vectorstep.grounding.kin import kin_of
from vectorstep.grounding.misread import MAX_PLACES, misread, written
from vectorstep.grounding.shapes import Node
from vectorstep.grounding.together import all_together, find_together

SUPPORTED, UNSUPPORTED, UNDECIDABLE = "supported", "unsupported", "undecidable"
POINTER_RECORD_MAX_CHARS = 2000
# An answer is untrusted: only so much of it is looked up.
MAX_STATEMENTS = 100
MAX_STATEMENT_CHARS = 2000
_CAUSAL = re.compile(
    r"\b(?:because|caus(?:e|es|ed|ing)|due to|led to|leads? to|lead to|result(?:s|ed)? in|as a result|"
    r"triggered|responsible for|root cause|driven by|explains?|explained|therefore|thereby|which is why|"
    r"so that|made it|makes it)\b",
    re.I,
)
_CONJUNCTIONS = re.compile(r";\s+|,?\s+(?:and|while|but|whereas|versus|vs\.?)\s+")
_CLAUSES = re.compile(r";\s+|\.\s+(?=[A-Z])|,\s+|,?\s+(?:and|while|but|whereas|versus|vs\.?)\s+")
_STANDARD_FIELDS = frozenset(
    {
        "confidence",
        "summary",
        "next_step_context",
        "proceed",
        "proceed_reason",
        "reasoning",
        "artifacts",
        "raw_response",
    }
)


def check_claim(claim: str, evidence: StepEvidence, anchors: Sequence[Anchor] | None = None) -> LocalVerdict:
    """The anchor check of one claim (`anchors` when they were not written in the claim's text).

    A claim may join facts ("X is 300 and Y holds 291"): each conjunct is checked on its own, and
    the claim is backed when every conjunct that can be looked up is.
    """
    if anchors is not None:
        return _check_clause(claim, evidence, anchors)
    return _combined([_check_clause(part, evidence, None) for part in clauses(claim, _CONJUNCTIONS)])


def _check_clause(claim: str, evidence: StepEvidence, anchors: Sequence[Anchor] | None) -> LocalVerdict:
    found = list(anchors) if anchors is not None else statement_anchors(claim)
    hard = [anchor for anchor in found if anchor.hard]
    if not hard:
        # "restarted 9 times", "the failing webhook is pod-policy.example.io": with nothing more
        # specific, the count and the names that read as identifiers are what to look for.
        hard = [anchor for anchor in found if anchor.kind == "number" or _identifier(anchor)]
    causal = bool(_CAUSAL.search(claim))
    if not hard:
        return LocalVerdict(UNDECIDABLE, "a causal link" if causal else "no figure, time or id to look for")
    given = evidence.given
    # A count that says what it counts ("restarted 3 times") is looked up by it, so it is as needed
    # as the claim's ids: "redis-0 restarted 2 times" is not backed by redis-0 alone.
    counted = [anchor for anchor in found if anchor.counted and anchor not in hard]
    needed = [anchor for anchor in [*hard, *counted] if not given(anchor)]
    if not needed:
        # Everything it names was given, unless it adds a count or a name the task does not have.
        needed = [anchor for anchor in found if anchor.kind in ("number", "name") and not given(anchor)]
        if not needed:
            return LocalVerdict(SUPPORTED, "restates the task")
    missing = [anchor for anchor in needed if not any(result.find(anchor) for result in evidence.usable)]
    if missing:
        return LocalVerdict(UNSUPPORTED, f"{_named(missing)} {_are(missing)} in no tool result")
    if causal:
        return LocalVerdict(
            UNDECIDABLE, "its figures and ids are in the tool results, but a record cannot show a cause"
        )
    # What the task names (the alert's pod, its service) must be in the record too, when the
    # result speaks of it: a figure of another pod does not back a claim about this one.
    told = [anchor for anchor in found if anchor.kind != "word" and given(anchor)]
    soft = [anchor for anchor in found if not anchor.hard and not given(anchor) and anchor not in needed] + told
    words = [anchor for anchor in found if anchor.kind == "word"]
    return _placed(claim, evidence.usable, needed, soft, words)


_IDENTIFIER = re.compile(r"[._]|[-/:@].*[-/:@]")


def _identifier(anchor: Anchor) -> bool:
    """A name that reads as one thing's identifier (`partner-portal-tls`, `discount_engin_url`,
    `validate.policy.example.dev`) rather than a service named in passing (`checkout-api`)."""
    return anchor.kind == "name" and bool(_IDENTIFIER.search(anchor.text))


def _placed(
    claim: str, usable: list[ToolResult], needed: list[Anchor], soft: list[Anchor], plain: list[Anchor]
) -> LocalVerdict:
    """Every anchor is somewhere: are they together, in a record about what the claim is about?"""
    refusal = None
    lonely = None
    for result in usable:
        group, why = _fitting(claim, result, needed, soft)
        if group is not None or why is not None:
            refusal = why
        if group is None:
            continue
        # A pair (max_conns=4), a field's number (revision 37) or a quote names what its value is.
        named = len(needed) + sum(anchor.kind in ("pair", "keyed", "quote") for anchor in needed)
        if named + _bound(result, group, soft) < 2:
            lonely = _lone(claim, result, group, needed, plain)
            if lonely.verdict == SUPPORTED:
                return lonely
            continue
        return LocalVerdict(SUPPORTED, f"{_named(needed)} together in {_tool(result)}", _pointer(result, group))
    if refusal is not None:
        return LocalVerdict(UNSUPPORTED, refusal)
    if lonely is not None:
        return lonely
    for result in usable:
        if next(_together(result, needed, ()), None) is not None:
            names = written(claim, [anchor for anchor in soft if result.find(anchor)])
            why = (
                f"{_named(needed)} {_are(needed)} in {_tool(result)}, but in a record about something else than {names}"
            )
            return LocalVerdict(UNSUPPORTED, why)
    why = f"{_named(needed)} {_are(needed)} in the tool results, but not together in one record"
    return LocalVerdict(UNSUPPORTED, why)


def _fitting(
    claim: str, result: ToolResult, needed: list[Anchor], soft: list[Anchor]
) -> tuple[Node | None, str | None]:
    """The first place in `result` where the anchors are together and are not the values of other
    fields than the claim names; else why the last place found was not."""
    refusal = None
    for place in itertools.islice(_together(result, needed, soft), MAX_PLACES):
        refusal = misread(claim, result, needed, place)
        if refusal is None:
            return place, None
    return None, refusal


def _lone(claim: str, result: ToolResult, group: Node, needed: list[Anchor], plain: list[Anchor]) -> LocalVerdict:
    """One figure, in a record that names nothing else of the claim: do the claim's words tie it there?"""
    pointer = _pointer(result, group)
    told, said = _spoken(result, group, plain)
    found = f"{_named(needed)} is in {_tool(result)}"
    if told:
        return LocalVerdict(SUPPORTED, f"{found}, in a record that speaks of {written(claim, told)}", pointer)
    if said and all(_specific(anchor) for anchor in needed):
        return LocalVerdict(SUPPORTED, f"{found}, and nothing there says otherwise", pointer)
    if plain and not said:
        why = f"{found}, but in a record that says nothing of {written(claim, plain)}"
        return LocalVerdict(UNSUPPORTED, why, pointer)
    # The record says what the claim speaks of, but so do its siblings ("deploy" in every deploy):
    # whether this one is the one meant takes reading, not matching.
    return LocalVerdict(UNDECIDABLE, f"{found}, but nothing else the claim names ties it to that record", pointer)


def _specific(anchor: Anchor) -> bool:
    """Whether finding the anchor at all says much: a hash, an id with digits, a time to the minute, a
    figure of three significant digits or more; not a small count, a round number or a date alone.
    (A `key=value`, a field's number or a quote never stands alone: it names what its value is.)"""
    if anchor.kind == "time":
        return anchor.moment is not None and anchor.moment.clock is not None
    if anchor.kind == "number":
        digits = re.sub(r"\D", "", anchor.text.split()[0])
        return anchor.hard and len(digits.strip("0")) >= 3
    return anchor.kind == "hash" or (anchor.kind == "name" and anchor.hard)


def _bound(result: ToolResult, group: Node, soft: Sequence[Anchor]) -> int:
    """How many of the claim's names and counts (not its plain words) the group's record is known by:
    said in the record, or in what names it (a series' labels for one of its points)."""
    record = group.nearest_record()
    context = [(record.start, record.end), *record.context()]
    names = [anchor for anchor in soft if anchor.kind != "word"]
    return sum(
        any(low <= start and end <= high for start, end in result.find(anchor) for low, high in context)
        for anchor in names
    )


def _kin(anchor: Anchor) -> list[Anchor]:
    return [Anchor(word, "word", False) for word in kin_of(anchor.text)]


def _spoken(result: ToolResult, group: Node, words: Sequence[Anchor]) -> tuple[list[Anchor], list[Anchor]]:
    """The claim's plain words the group's record says: those that tell it from its siblings, and all.

    A lone record (an instant query's one sample, one object) is told by anything it or its query
    says; one of many (a row, a series, a log line) only by words most of its siblings do not say:
    "node" in every row of a node table ties a figure to none of them.
    """
    record = group.nearest_record()
    siblings = _siblings(record)
    context = [(record.start, record.end), *record.context()]
    told: list[Anchor] = []
    said: list[Anchor] = []
    for anchor in words:
        found = [span for kin in _kin(anchor) for span in result.find(kin)]
        if not any(low <= start and end <= high for start, end in found for low, high in context):
            if len(siblings) < 2 and any(result.asked_index.find(kin) for kin in _kin(anchor)):
                told.append(anchor)
            continue
        said.append(anchor)
        holders = {id(sibling) for start, _ in found for sibling in siblings if sibling.start <= start < sibling.end}
        if len(siblings) < 2 or len(holders) <= max(1, len(siblings) // 3):
            told.append(anchor)
    return told, said


def _siblings(record: Node) -> list[Node]:
    parent = record.parent
    if parent is None or not parent.collection:
        return [record]
    return parent.children


def _quantities(anchor: Anchor) -> frozenset[str]:
    """What a figure measures: two of the same ("from 1,204,331 to 88,120", "from 13:40 to 13:50")
    may be two records of one subject; a window and a ratio ("the 1h error ratio is 0.12%") may not."""
    return frozenset({"time"}) if anchor.kind == "time" else frozenset(reading.family for reading in anchor.readings)


def _together(result: ToolResult, hard: Sequence[Anchor], soft: Sequence[Anchor]) -> Iterator[Node]:
    """Where anchors are together in `result`; two figures of one quantity ("from 1,204,331 to
    88,120") may be two records.

    Then each figure is looked up with the claim's ids and names, not with the other figure, and
    the first figure's place stands for them.
    """
    figures = [anchor for anchor in hard if anchor.kind in ("number", "time")]
    if len(figures) < 2 or not frozenset.intersection(*(_quantities(anchor) for anchor in figures)):
        yield from all_together(result, hard, soft)
        return
    subjects = [anchor for anchor in hard if anchor not in figures]
    first, *others = (find_together(result, [*subjects, figure], soft) for figure in figures)
    if first is not None and all(group is not None for group in others):
        yield first


def _combined(verdicts: list[LocalVerdict]) -> LocalVerdict:
    """One verdict for a claim's parts: refuted if any part is, backed if every decided part is.

    The pointer is the first part's that has one, so a refuted figure still shows where it was found.
    """
    if len(verdicts) == 1:
        return verdicts[0]
    for outcome in (UNSUPPORTED, SUPPORTED):
        decided = [verdict for verdict in verdicts if verdict.verdict == outcome]
        if decided:
            pointer = next((verdict.pointer for verdict in decided if verdict.pointer is not None), None)
            # each reason once, in order
            return LocalVerdict(outcome, "; ".join(dict.fromkeys(verdict.reason for verdict in decided)), pointer)
    return LocalVerdict(UNDECIDABLE, verdicts[0].reason, verdicts[0].pointer)


def answer_claims(answer: Mapping[str, Any]) -> list[tuple[str, list[Anchor] | None]]:
    """What an answer states as evidence: `reasoning.supports` and its extra fields (`deploy_id: …`)."""
    claims: list[tuple[str, list[Anchor] | None]] = []
    reasoning = answer.get("reasoning")
    supports = reasoning.get("supports") if isinstance(reasoning, Mapping) else None
    if isinstance(supports, str):
        supports = [supports]
    for statement in supports if isinstance(supports, list) else []:
        if isinstance(statement, str) and statement.strip():
            claims.append((statement.strip()[:MAX_STATEMENT_CHARS], None))
    for key, value in answer.items():
        if key in _STANDARD_FIELDS or isinstance(value, bool) or value is None:
            continue
        if isinstance(value, str) and value.strip():
            text = value.strip()[:MAX_STATEMENT_CHARS]
            claims.append((f"{key}: {text}", statement_anchors(text)))
        elif isinstance(value, int):  # an id or a count: exactly this number
            reading = Reading("plain", float(value), 0.0)
            claims.append((f"{key}: {value}", [Anchor(str(value), "number", True, (reading,), bare=True)]))
        elif isinstance(value, float):  # a measurement: as precise as it was written
            claims.append((f"{key}: {value}", statement_anchors(repr(value))))
    return claims[:MAX_STATEMENTS]


def check_statement(statement: str, evidence: StepEvidence, anchors: Sequence[Anchor] | None = None) -> LocalVerdict:
    """A statement of the answer may join several claims ("A rose to 4.87s, B to 3.98s"): each is checked."""
    if anchors is not None:
        return check_claim(statement, evidence, anchors)
    return _combined([check_claim(part, evidence) for part in clauses(statement, _CLAUSES)])


def clauses(statement: str, separators: re.Pattern[str]) -> list[str]:
    """The statement's clauses; a clause without a hard anchor stays with the one before it."""
    parts: list[str] = []
    for piece in separators.split(statement):
        if parts and not any(anchor.hard for anchor in statement_anchors(piece)):
            parts[-1] = f"{parts[-1]}, {piece}"
        elif piece.strip():
            parts.append(piece)
    return parts or [statement]


def _pointer(result: ToolResult, group: Node) -> EvidencePointer:
    record = group.nearest_record()
    shown = record if record.end - record.start <= POINTER_RECORD_MAX_CHARS else group
    return result.node_pointer(shown, "anchors")


def _are(anchors: Sequence[Anchor]) -> str:
    return "is" if len(anchors) == 1 else "are"


def _named(anchors: Sequence[Anchor]) -> str:
    return ", ".join(f"`{anchor.text}`" for anchor in anchors)


def _tool(result: ToolResult) -> str:
    return f"the result of {result.tool or 'a tool'}"
