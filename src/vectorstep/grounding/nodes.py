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
