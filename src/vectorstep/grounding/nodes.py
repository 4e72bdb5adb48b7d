"""The tree a tool result is read into: nodes over its text (offsets, never copies).

A node's `head` is shown whenever anything inside it is shown, so a value never appears without
the record and the path it belongs to. A `collection`'s children are separate records: two
things found in two of them are not "together".
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

Span = tuple[int, int]


@dataclass(eq=False)
class Node:
    start: int
    end: int
    children: list[Node] = field(default_factory=list)
    head: list[Span] = field(default_factory=list)
    identity: list[Node] = field(default_factory=list)
    key: str = ""
    record: bool = False
    collection: bool = False
    point: bool = False  # a short tuple of scalars in a list of them: [1718111400, "0.21"]
    table: bool = False  # rows of text under a header line (`kubectl get`, `psql`): its head is the header
    parent: Node | None = field(default=None, repr=False)

    def walk(self) -> Iterator[Node]:
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))

    def ancestors(self) -> Iterator[Node]:
        node = self.parent
        while node is not None:
            yield node
            node = node.parent

    def context(self, max_identity_chars: int | None = None) -> list[Span]:
        """What this node is known by: its own and every enclosing node's head and identifying fields."""
        spans: list[Span] = []
        for node in [self, *self.ancestors()]:
            spans.extend(node.head)
            spans.extend(
                (each.start, each.end)
                for each in node.identity
                if max_identity_chars is None or each.end - each.start <= max_identity_chars
            )
        return spans

    def nearest_record(self) -> Node:
        node: Node | None = self
        while node is not None:
            if node.record:
                return node
            node = node.parent
        return self


def common_ancestor(first: Node, second: Node) -> Node:
    seen = {id(first)} | {id(node) for node in first.ancestors()}
    node: Node | None = second
    while node is not None:
        if id(node) in seen:
            return node
        node = node.parent
    return first


def adopt(node: Node) -> None:
    for child in node.children:
        child.parent = node
