"""The shape of a tool result: its records, so evidence is shown whole and with what it belongs to.

A tool result is read once into a tree of `Node`s over its text (offsets, never copies):

- JSON, pretty or minified, also when the runtime cut it short: objects, arrays and members. An
  element of an array is a record; an object's identifying members (id, name, labels, metric,
  timestamps) are what it is known by.
- One JSON object per line (NDJSON): each line is a record, read as JSON.
- Line-oriented text by indentation: log lines (a record each, continuation lines included),
  `key: value` blocks and YAML (a block is a record, its first line is its head), and whitespace
  tables (`kubectl get`, `psql`, consumer-group tables: a row is a record, the header its head).

A node's `head` is shown whenever anything inside it is shown, so a value never appears without
the record and the path it belongs to. A `collection`'s children are separate records: two
things found in two of them are not "together". Reading is linear and bounded.
"""

from __future__ import annotations

import bisect

from vectorstep.grounding.json_shape import json_document
from vectorstep.grounding.nodes import Node, Span, common_ancestor
from vectorstep.grounding.text_shape import lines_of, ndjson, text_tree

__all__ = ["Node", "Shape", "Span", "common_ancestor", "parse"]


class Shape:
    """A tool result's tree, with its leaves in order for finding the leaf at a position."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.root = parse(text)
        self.leaves = [node for node in self.root.walk() if not node.children]
        self._starts = [leaf.start for leaf in self.leaves]

    def leaf_at(self, position: int) -> Node:
        index = bisect.bisect_right(self._starts, position) - 1
        if index >= 0 and self.leaves[index].start <= position < self.leaves[index].end:
            return self.leaves[index]
        return self.root


def parse(text: str) -> Node:
    lines = lines_of(text)
    # One object per line: lines that open an object at their very start (pretty JSON indents its inner ones).
    json_lines = sum(1 for start, _ in lines if text[start : start + 1] == "{")
    if len(lines) >= 2 and json_lines >= len(lines) * 0.6:
        return ndjson(text, lines)
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        root = json_document(text, len(text) - len(stripped))
        if root is not None:
            return root
    return text_tree(text, lines)
