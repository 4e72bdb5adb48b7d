"""Whether a statement's anchors are found together: in one record of one tool result.

"p99 of /v1/cart reached 4.87s" is not backed by a range query in which 4.87 is a point of the
`/v1/checkout/confirm` series: each anchor is in the result, but in two records. Anchors are
together when, taking for each anchor its occurrence nearest to the others, no two of them sit in
different elements of a collection (two series, two log lines, two table rows, two list items).
Within one record they may be far apart (a pod's limits and its last state), and two points of one
series are one record.

A soft anchor (a plain name or word) that the same result mentions must be mentioned by that record
too, or the statement attributes the figures to the wrong thing ("the cart route" when the 4.87 is
the confirm route's).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from vectorstep.grounding.anchors import Anchor
from vectorstep.grounding.evidence import ToolResult
from vectorstep.grounding.shapes import Node, common_ancestor

MAX_OCCURRENCES = 120


def find_together(result: ToolResult, hard: Sequence[Anchor], soft: Sequence[Anchor] = ()) -> Node | None:
    """The smallest node of `result` holding every hard anchor (and the soft ones it mentions), if any."""
    return next(all_together(result, hard, soft), None)


def all_together(result: ToolResult, hard: Sequence[Anchor], soft: Sequence[Anchor] = ()) -> Iterator[Node]:
    """Each place in `result` where the anchors are together, in the order of the rarest anchor's
    occurrences: a date in a condition's transition time and again as the renewal time is two places."""
    if not hard:
        return
    shape = result.shape
    found: dict[str, list[Occurrence]] = {}
    for anchor in hard:
        spans = result.find(anchor)[:MAX_OCCURRENCES]
        found[anchor.key] = [(shape.leaf_at(start), start) for start, _ in spans]
    _drop_bare_point_times(hard, found)
    if any(not occurrences for occurrences in found.values()):
        return
    order = sorted(hard, key=lambda anchor: len(found[anchor.key]))
    others = [found[anchor.key] for anchor in order[1:]]
    seen: set[int] = set()
    for start in found[order[0].key]:
        group = _group(result.text, start, others)
        if group is not None and id(group) not in seen and _mentions_soft(result, group, soft):
            seen.add(id(group))
            yield group


Occurrence = tuple[Node, int]  # the leaf an anchor was found in, and where


def _drop_bare_point_times(hard: Sequence[Anchor], found: dict[str, list[Occurrence]]) -> None:
    """Every series of a range query has a point at every step: a time says something of a point
    only together with the figure at that point ("4.87s at 13:56"), never alone."""
    with_figures = {id(leaf) for anchor in hard if anchor.kind == "number" for leaf, _ in found[anchor.key]}
    for anchor in hard:
        if anchor.kind == "time":
            found[anchor.key] = [
                (leaf, at) for leaf, at in found[anchor.key] if not leaf.point or id(leaf) in with_figures
            ]


def _group(text: str, start: Occurrence, others: list[list[Occurrence]]) -> Node | None:
    leaf, position = start
    group = leaf
    for occurrences in others:
        nearest = max((_common(text, leaf, position, other, at) for other, at in occurrences), key=_depth)
        if nearest.collection:
            return None  # its nearest occurrence is in another record
        if _depth(nearest) < _depth(group):
            group = nearest
    return group


def _common(text: str, leaf: Node, position: int, other: Node, at: int) -> Node:
    """Where two occurrences meet; within one long value (a ticket's description, a log message) two
    lines are two records: "Phase 1 (2024-04-02)" and "Phase 3" are not said together."""
    node = common_ancestor(leaf, other)
    if node is leaf and leaf.end - leaf.start > LONG_VALUE:
        low, high = sorted((position, at))
        between = text[low:high]
        if "\n" in between or "\\n" in between:
            return _LINES_APART
    return node


LONG_VALUE = 200
_LINES_APART = Node(0, 0, collection=True)


def _depth(node: Node) -> int:
    return sum(1 for _ in node.ancestors())


def _mentions_soft(result: ToolResult, group: Node, soft: Sequence[Anchor]) -> bool:
    record = group.nearest_record()
    context = [(record.start, record.end), *record.context()]
    for anchor in soft:
        found = result.find(anchor)
        if found and not any(low <= start and end <= high for start, end in found for low, high in context):
            return False
    return True
