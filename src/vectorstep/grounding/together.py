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

from collections.abc import Sequence

from vectorstep.grounding.anchors import Anchor
from vectorstep.grounding.evidence import ToolResult
from vectorstep.grounding.shapes import Node, common_ancestor

MAX_OCCURRENCES = 40


def find_together(result: ToolResult, hard: Sequence[Anchor], soft: Sequence[Anchor] = ()) -> Node | None:
    """The smallest node of `result` holding every hard anchor (and the soft ones it mentions), if any."""
    if not hard:
        return None
    shape = result.shape
    leaves: dict[str, list[Node]] = {}
    for anchor in hard:
        found = result.index.find(anchor)[:MAX_OCCURRENCES]
        if not found:
            return None
        leaves[anchor.key] = [shape.leaf_at(start) for start, _ in found]
    _drop_bare_point_times(hard, leaves)
    if any(not found for found in leaves.values()):
        return None
    order = sorted(hard, key=lambda anchor: len(leaves[anchor.key]))
    for start in leaves[order[0].key]:
        group = _group(start, [leaves[anchor.key] for anchor in order[1:]])
        if group is not None and _mentions_soft(result, group, soft):
            return group
    return None


def _drop_bare_point_times(hard: Sequence[Anchor], leaves: dict[str, list[Node]]) -> None:
    """Every series of a range query has a point at every step: a time says something of a point
    only together with the figure at that point ("4.87s at 13:56"), never alone."""
    with_figures = {id(leaf) for anchor in hard if anchor.kind == "number" for leaf in leaves[anchor.key]}
    for anchor in hard:
        if anchor.kind == "time":
            leaves[anchor.key] = [leaf for leaf in leaves[anchor.key] if not leaf.point or id(leaf) in with_figures]


def _group(start: Node, others: list[list[Node]]) -> Node | None:
    group = start
    for occurrences in others:
        nearest = max((common_ancestor(start, other) for other in occurrences), key=_depth)
        if nearest.collection:
            return None  # its nearest occurrence is in another record
        if _depth(nearest) < _depth(group):
            group = nearest
    return group


def _depth(node: Node) -> int:
    return sum(1 for _ in node.ancestors())


def _mentions_soft(result: ToolResult, group: Node, soft: Sequence[Anchor]) -> bool:
    record = group.nearest_record()
    context = [(record.start, record.end)]
    for ancestor in record.ancestors():
        context.extend(ancestor.head)
        context.extend((each.start, each.end) for each in ancestor.identity)
    for anchor in soft:
        found = result.index.find(anchor)
        if found and not any(low <= start and end <= high for start, end in found for low, high in context):
            return False
    return True
