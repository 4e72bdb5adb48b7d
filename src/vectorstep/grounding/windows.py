"""Choosing what a judge sees of a long tool result: whole records where the answer's anchors are.

Head truncation hides evidence past the cut (the decisive log line, the events at the end of
`kubectl describe`, the spike at the end of one series among many), and fixed-width pieces of a
long line cut a record's identifying fields away from its values. Instead, the result is read by
its shape (`shapes`) and the answer's anchors are found in it (`anchors`, `finding`); the budget
goes to a small head, then to whole records that hold anchors — a log line, a table row under its
header, a JSON object within its array, a series' labels with its matching points. A record too
large to show whole is reduced field-wise: its identifying fields (id, name, labels, timestamps)
and the fields that hold anchors, each under the path that leads to it. Records are taken
greedily by the weight of the anchors they add per character (an anchor weighs more the rarer it
is in the result), so every fact gets a record before any fact gets a second one. Every omission
is marked in place with how much was left out.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vectorstep.grounding.anchors import Anchor, answer_statements, statement_anchors
from vectorstep.grounding.counts import MAX_COUNTED_PLACES, counts
from vectorstep.grounding.finding import ResultIndex
from vectorstep.grounding.shapes import Node, Shape, Span

MARKER = "… [{omitted:,} characters omitted] …"
INLINE_MARKER = "…[{omitted:,} chars omitted]…"
HEAD_SHARE = 0.1
FRAGMENT_CONTEXT = 90  # around an anchor inside a line too long to show whole
LEAF_MAX = 320
TUPLE_MAX_MEMBERS = 4
TUPLE_MEMBER_HEAD = 120
MAX_MATCHES_PER_ANCHOR = 40
MAX_CANDIDATES = 200
MARKER_ESTIMATE = 22
REPEAT = 0.15  # what an anchor is worth in a second record
MIN_SCORE = 0.005
WEIGHTS = {"hard": 4.0, "name": 2.0, "word": 1.0}
TOGETHER = 2.0  # what a statement's anchors add when one record shows them together
GROUP_MAX_CHARS = 2000


class AnswerAnchors(list[Anchor]):
    """The anchors of an answer, each once, and which of them each statement made together."""

    statements: tuple[frozenset[str], ...] = ()


def answer_anchors(answer: Mapping[str, Any] | Sequence[str]) -> AnswerAnchors:
    """The anchors of everything an answer states (or of a list of statements), each once."""
    statements = answer_statements(answer) if isinstance(answer, Mapping) else list(answer)
    anchors: dict[str, Anchor] = {}
    together: list[frozenset[str]] = []
    for statement in statements:
        found = statement_anchors(statement)
        together.append(frozenset(anchor.key for anchor in found))
        for anchor in found:
            anchors.setdefault(anchor.key, anchor)
    result = AnswerAnchors(anchors.values())
    result.statements = tuple(together)
    return result


@dataclass
class _Unit:
    spans: list[Span]
    anchors: set[str] = field(default_factory=set)
    group: int = 0  # the record (or, in one large record, the block) it shows
    statements: list[frozenset[str]] = field(default_factory=list)  # those it holds anchors of


def select_windows(text: str, anchors: Sequence[Anchor], budget: int) -> str:
    """`text` within `budget` characters: a small head, then the records that hold the anchors."""
    if len(text) <= budget:
        return text
    return ResultWindows(text, anchors).choose(budget)[0]


class ResultWindows:
    """One long result, read once (its shape, where the anchors are), its windows chosen for any budget."""

    def __init__(
        self, text: str, anchors: Sequence[Anchor], shape: Shape | None = None, index: ResultIndex | None = None
    ) -> None:
        """`shape` and `index` when `text` was read already (the step's evidence reads every result)."""
        self.text = text
        self._anchors = anchors
        # Without the statements they came from, every anchor counts as said together.
        self._statements = (
            anchors.statements if isinstance(anchors, AnswerAnchors) else (frozenset(a.key for a in anchors),)
        )
        self._shape = shape or Shape(text)
        self._index = index or ResultIndex(text)

    def choose(self, budget: int) -> tuple[str, int]:
        """What is shown within `budget`, and how many of the anchors found in the result it leaves out."""
        text, shape = self.text, self._shape
        chosen = _head(shape, budget)
        length = _rendered_length(text, chosen)
        units, weights = _units(shape, self._index, self._anchors, self._statements, budget)
        covered: set[str] = set()
        shown_in: dict[int, set[str]] = {}  # group → the anchors shown in it
        best: dict[frozenset[str], float] = {}  # statement → the most of it shown together in one group

        def score(unit: _Unit) -> float:
            gain = sum(weights[key] * (REPEAT if key in covered else 1.0) for key in unit.anchors)
            if unit.statements:
                keys = shown_in.get(unit.group, set()) | unit.anchors
                gain += TOGETHER * sum(
                    max(0.0, _together(statement, keys, weights) - best.get(statement, 0.0))
                    for statement in unit.statements
                )
            cost = _added(chosen, unit.spans)
            value = gain / (cost + 40)
            # Budget is a ceiling, not a target: a record that adds only repeats or common words costs the
            # judge more reading than it gives.
            return value if value >= MIN_SCORE and length + cost <= budget else 0.0

        # Lazy greedy: a unit's score only changes when something is chosen, so each round re-scores
        # the best candidates only, until the best one's fresh score still leads.
        queue = [(-score(unit), position) for position, unit in enumerate(units)]
        heapq.heapify(queue)
        while queue:
            _, position = heapq.heappop(queue)
            fresh = score(units[position])
            if fresh <= 0:
                continue
            if queue and -fresh > queue[0][0] + 1e-12:
                heapq.heappush(queue, (-fresh, position))
                continue
            attempt = _merge([*chosen, *units[position].spans])
            attempt_length = _rendered_length(text, attempt)
            if attempt_length <= budget:  # the estimate was close; the rendering decides
                chosen, length = attempt, attempt_length
                unit = units[position]
                covered |= unit.anchors
                keys = shown_in.setdefault(unit.group, set())
                keys |= unit.anchors
                for statement in unit.statements:
                    best[statement] = max(best.get(statement, 0.0), _together(statement, keys, weights))
        if not covered:
            return head_only(text, budget), len(weights)
        return render(text, chosen), sum(1 for key in weights if key not in covered)


def _added(chosen: list[Span], spans: list[Span]) -> int:
    """How many characters showing `spans` adds to `chosen` (sorted, disjoint): what is new, and a
    marker for each piece that does not touch what is shown already."""
    added = 0
    starts = [low for low, _ in chosen]
    for start, end in spans:
        new = end - start
        touching = False
        for low, high in chosen[max(bisect.bisect_right(starts, start) - 1, 0) :]:
            if low > end + MARKER_ESTIMATE:
                break
            new -= max(0, min(end, high) - max(start, low))
            touching = touching or start <= high + MARKER_ESTIMATE
        added += new + (0 if touching else MARKER_ESTIMATE)
    return added


def _head(shape: Shape, budget: int) -> list[Span]:
    """The first leaves, within a small share of the budget: they show what the output is."""
    limit = max(40, int(budget * HEAD_SHARE))
    end = 0
    for leaf in shape.leaves:
        if leaf.end > limit:
            break
        end = leaf.end
    return [(0, end or min(limit, len(shape.text)))]


def _units(
    shape: Shape,
    index: ResultIndex,
    anchors: Sequence[Anchor],
    statements: Sequence[frozenset[str]],
    budget: int,
) -> tuple[list[_Unit], dict[str, float]]:
    records = max(1, sum(1 for node in shape.root.walk() if node.record))
    whole_max = max(200, budget // 4)
    units: dict[tuple[Span, ...], _Unit] = {}
    weights: dict[str, float] = {}
    matches: list[tuple[str, Span]] = []
    groups: dict[int, int] = {}
    for anchor in anchors:
        found = index.find(anchor)
        if anchor.counted:  # a small count only where it counts what the answer counts
            found = [span for span in found[:MAX_COUNTED_PLACES] if counts(index, shape, span, anchor.counted)]
        found = found[:MAX_MATCHES_PER_ANCHOR]
        if not found:
            continue
        holders = {id(shape.leaf_at(start).nearest_record()) for start, _ in found}
        base = WEIGHTS["hard"] if anchor.hard else WEIGHTS["word" if anchor.kind == "word" else "name"]
        weights[anchor.key] = base * math.log(1 + records / len(holders))
        matches.extend((anchor.key, span) for span in found)
        for span in found:
            spans = _unit_spans(shape, span, whole_max)
            group = id(_group(shape.leaf_at(span[0])))
            units.setdefault(tuple(spans), _Unit(spans, group=groups.setdefault(group, len(groups))))
    matches.sort(key=lambda match: match[1])
    starts = [span[0] for _, span in matches]
    for unit in units.values():
        for low, high in unit.spans:
            first = bisect.bisect_left(starts, low)
            last = bisect.bisect_left(starts, high)
            unit.anchors.update(key for key, (_, end) in matches[first:last] if end <= high)
    said = [found for found in (statement.intersection(weights) for statement in statements) if _telling(found)]
    singles = list(units.values())
    for unit in singles:
        unit.statements = [statement for statement in said if len(statement & unit.anchors) >= 1]
    for combined in _combined(singles, said, weights):
        units.setdefault(tuple(combined.spans), combined)
    ranked = sorted(units.values(), key=lambda unit: -sum(weights[key] for key in unit.anchors))
    return ranked[:MAX_CANDIDATES], weights


def _telling(keys: frozenset[str]) -> bool:
    """Whether anchors found together say something: two or more, not all of them plain words."""
    return len(keys) >= 2 and any(not key.startswith("word:") for key in keys)


def _together(statement: frozenset[str], keys: set[str], weights: Mapping[str, float]) -> float:
    """What a statement's anchors shown together in one record weigh."""
    held = statement & keys
    return sum(weights[key] for key in held) if _telling(held) else 0.0


def _combined(singles: list[_Unit], said: list[frozenset[str]], weights: Mapping[str, float]) -> list[_Unit]:
    """For each statement and each record that holds two or more of its anchors, one unit that shows
    them all: the cheapest unit of each anchor in that record, together."""
    by_group: dict[int, list[_Unit]] = {}
    for unit in singles:
        if unit.statements:
            by_group.setdefault(unit.group, []).append(unit)
    combined: list[_Unit] = []
    for group, members in by_group.items():
        if len(members) < 2:
            continue
        for statement in {statement for unit in members for statement in unit.statements}:
            cheapest: dict[str, _Unit] = {}
            for unit in members:
                for key in unit.anchors & statement:
                    if key not in cheapest or _size(unit) < _size(cheapest[key]):
                        cheapest[key] = unit
            picked = {id(unit): unit for unit in cheapest.values()}
            if len(picked) < 2 or not _telling(frozenset(cheapest)):
                continue
            anchors = set().union(*(unit.anchors for unit in picked.values()))
            spans = _merge(span for unit in picked.values() for span in unit.spans)
            combined.append(_Unit(spans, anchors, group, [s for s in said if s & anchors]))
    return combined


def _size(unit: _Unit) -> int:
    return sum(end - start for start, end in unit.spans)


def _group(leaf: Node) -> Node:
    """What anchors must share to be together: the record that holds them or, in a record too large
    to be one fact (a whole `kubectl describe`, one big object), the largest block within it that is not."""
    group = leaf
    for node in [leaf, *leaf.ancestors()]:
        if node.end - node.start > GROUP_MAX_CHARS:
            break
        group = node
        if node.record:
            break
    return group


def _unit_spans(shape: Shape, span: Span, whole_max: int) -> list[Span]:
    """The record that holds `span` — whole if it is small, else reduced — with the path to it."""
    leaf = shape.leaf_at(span[0])
    record = leaf.nearest_record()
    if record is not shape.root and record.end - record.start <= whole_max:
        return _merge([(record.start, record.end), *record.context(LEAF_MAX)])
    if leaf.end - leaf.start <= LEAF_MAX:
        shown = [(leaf.start, leaf.end)]
    else:  # a line or a value too long to show whole: its start, and the words around the anchor
        start = _snap(shape.text, max(leaf.start, span[0] - FRAGMENT_CONTEXT), backwards=True)
        end = _snap(shape.text, min(leaf.end, span[1] + FRAGMENT_CONTEXT), backwards=False)
        shown = [(leaf.start, min(leaf.end, leaf.start + 60)), (start, end)]
    return _merge([*shown, *_tuple_members(shape, leaf), *leaf.context(LEAF_MAX)])


def _tuple_members(shape: Shape, leaf: Node) -> list[Span]:
    """The other members of the short tuple a value sits in: a log line's timestamp, a timestamp's log
    line (`[ns, line]`), a point's value. A long member is shown by its start, which says what it is."""
    tuple_ = leaf.parent
    if (
        tuple_ is None
        or tuple_.collection
        or not 2 <= len(tuple_.children) <= TUPLE_MAX_MEMBERS
        or shape.text[tuple_.start : tuple_.start + 1] != "["
        or any(member.children for member in tuple_.children)
    ):
        return []
    spans = []
    for member in tuple_.children:
        if member is not leaf:
            end = member.end
            if end - member.start > LEAF_MAX:
                end = _snap(shape.text, member.start + TUPLE_MEMBER_HEAD, backwards=False)
            spans.append((member.start, end))
    return spans


def _snap(text: str, position: int, *, backwards: bool) -> int:
    """Move a cut to the nearest separator, so that a number or a word is never split."""
    step = -1 if backwards else 1
    for _ in range(24):
        if position <= 0 or position >= len(text) or not text[position - 1 if backwards else position].isalnum():
            return position
        position += step
    return position


def _merge(spans: Iterable[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(spans):
        # A gap no longer than the marker that would replace it (on a line of its own, if the gap holds a
        # line break) is no dearer shown than marked, and showing it keeps neighbouring fields together.
        if merged and (gap := start - merged[-1][1]) <= len(MARKER.format(omitted=gap)) + 2:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        elif end > start:
            merged.append((start, end))
    return merged


def _pieces(text: str, spans: list[Span]) -> list[str]:
    pieces: list[str] = []
    position = 0
    for start, end in spans:
        if start > position:
            pieces.append(_marker(text, position, start))
        pieces.append(text[start:end])
        position = end
    if position < len(text):
        pieces.append(_marker(text, position, len(text)))
    return pieces


def _marker(text: str, start: int, end: int) -> str:
    """Omitted lines are marked on a line of their own; an omission within a line, within it."""
    if "\n" in text[start:end]:
        return "\n" + MARKER.format(omitted=end - start) + "\n"
    return INLINE_MARKER.format(omitted=end - start)


def _rendered_length(text: str, spans: list[Span]) -> int:
    return sum(len(piece) for piece in _pieces(text, spans))


def render(text: str, spans: list[Span]) -> str:
    return "".join(_pieces(text, spans)).strip("\n")


def head_only(text: str, budget: int) -> str:
    """Plain head truncation, with a marker saying how much was cut."""
    if len(text) <= budget:
        return text
    marker = MARKER.format(omitted=len(text))  # the longest the marker can be
    keep = max(0, budget - len(marker) - 1)
    return f"{text[:keep]}\n{MARKER.format(omitted=len(text) - keep)}"
