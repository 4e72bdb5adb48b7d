"""What a figure in a tool result is the value of: the words of its key, its path or its column.

`"used": {"limits.memory": "96Gi"}` and `"hard": {"limits.memory": "96Gi"}` hold the same figure
under different names; "96Gi used" names one of them. The anchor check compares the claim's words
with the name of the field its figure was found in, and with the names of the result's other
figures, to tell "found" from "found, but as the value of something else".
"""

from __future__ import annotations

import re
from functools import lru_cache

from vectorstep.grounding.anchors import stem
from vectorstep.grounding.evidence import ToolResult
from vectorstep.grounding.shapes import Node

_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_INLINE_KEY = re.compile(r"(?P<key>[A-Za-z][\w.-]{1,40})[\"']?\s*[:=]\s*[\"']?\S{0,3}$")
_FIGURE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?[A-Za-z%]{0,3}(?![\w.])")
GENERIC_KEYS = frozenset({"value", "values", "data", "result", "results", "items", "spec", "status", "metadata"})


@lru_cache(maxsize=4096)
def words_of(name: str) -> frozenset[str]:
    return frozenset(stem(word) for word in _KEY_WORDS.findall(name) if len(word) > 1)


def key_words(result: ToolResult, start: int) -> frozenset[str]:
    """The words of the name the figure at `start` is the value of (empty when it has none)."""
    text = result.text
    line_start = text.rfind("\n", 0, start) + 1
    inline = _INLINE_KEY.search(text, max(line_start, start - 48), start)
    words: set[str] = set(words_of(inline.group("key"))) if inline else set()
    leaf = result.shape.leaf_at(start)
    for node in [leaf, *leaf.ancestors()]:
        if node.record and node is not leaf:
            break
        if node.key and node.key not in GENERIC_KEYS:
            words |= words_of(_raw_key(text, node))
        elif node.head and node.parent is not None and not node.key:  # a block's own line: "  Limits:"
            words |= words_of(text[node.head[0][0] : node.head[0][1]].split(":", 1)[0])
    return frozenset(words)


def keyed_figures(result: ToolResult) -> list[tuple[frozenset[str], str, int]]:
    """Every figure of the result that is the value of a named field: (its name's words, figure, position)."""
    found = []
    for match in _FIGURE.finditer(result.text):
        words = key_words(result, match.start())
        if words:
            found.append((words, match.group(0), match.start()))
        if len(found) >= MAX_FIGURES:
            break
    return found


MAX_FIGURES = 400


def _raw_key(text: str, node: Node) -> str:
    # JSON members keep their key's text between the first pair of quotes of their span.
    if text[node.start : node.start + 1] == '"':
        end = text.find('"', node.start + 1)
        if end != -1:
            return text[node.start + 1 : end]
    return node.key
