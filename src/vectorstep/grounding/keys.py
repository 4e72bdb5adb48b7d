"""What a figure in a tool result is the value of: the words of its key, its path or its column.

`"used": {"limits.memory": "96Gi"}` and `"hard": {"limits.memory": "96Gi"}` hold the same figure
under different names; "96Gi used" names one of them. The anchor check compares the claim's words
with the name of the field its figure was found in, and with the names of the result's other
figures, to tell "found" from "found, but as the value of something else".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from vectorstep.grounding.finding import header_cell
from vectorstep.grounding.shapes import Node, Shape
from vectorstep.grounding.words import stem

_KEY_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")
_WORD_BEFORE = re.compile(r"(?P<word>[A-Za-z][\w.-]{1,40})[\"']?[^\w\n]{0,3}[ \t]*$")
KEY_REACH = 100  # how far before a value its key may be (`kubectl describe` aligns values far right)
LABEL_MAX_CHARS = 400
_INLINE_KEY = re.compile(r"(?P<key>[A-Za-z][\w.-]{1,40})[\"']?\s*[:=]\s*[\"']?\S{0,3}$")
# A line that is one field named in words, as `kubectl describe`, `openssl x509 -text` and
# expanded `psql` print them: `Max replicas:   30`, `  Restart Count:  3`, `Not After : Aug  3 …`.
_LINE_KEY = re.compile(r"[ \t]*(?P<key>[A-Za-z][A-Za-z0-9 ._/()-]{0,60}?)[ \t]*:[ \t]*[\"']?\S{0,3}$")
# A field's whole value: `"lag": 48912`, `"lag":"48912"`, `lag=48912`, `  Replicas:  2` — not the
# port of a URL or a `host:9187` inside a longer string.
_DIRECT_KEY = re.compile(r"(?:\"[^\"\n]{1,60}\"\s*:\s*\"?|(?:^|(?<=[\s,{(]))[A-Za-z_][\w.-]{0,40}\s*[:=]\s*)$", re.M)
_FIGURE = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?[A-Za-z%]{0,3}(?![\w.])")
# A value under one of these keys is named by its record: `{"key": "resources.limits.cpu", "from":
# "2", "to": "500m"}`, `{"field": "status", "old": …, "new": …}`.
_CHANGE_KEYS = frozenset(stem(word) for word in ("to", "from", "old", "new", "before", "after", "was", "now"))
GENERIC_KEYS = frozenset({"value", "values", "data", "result", "results", "items", "spec", "status", "metadata"})


@lru_cache(maxsize=4096)
def words_of(name: str) -> frozenset[str]:
    return frozenset(stem(word) for word in _KEY_WORDS.findall(name) if len(word) > 1)


@dataclass(frozen=True)
class FieldName:
    """The name a figure is the value of: its own key, and the headings above it up to its record."""

    key: frozenset[str]
    path: frozenset[str]

    @property
    def words(self) -> frozenset[str]:
        return self.key | self.path


def field_name(shape: Shape, start: int) -> FieldName:
    text = shape.text
    line_start = text.rfind("\n", 0, start) + 1
    inline = _INLINE_KEY.search(text, max(line_start, start - KEY_REACH), start)
    key: set[str] = set(words_of(inline.group("key"))) if inline else set()
    phrase = _LINE_KEY.match(text, line_start, start)
    if phrase:  # `Max replicas:   30` is the value of "max replicas", not of "replicas"
        key.update(words_of(phrase.group("key")))
    path: set[str] = set()
    leaf = shape.leaf_at(start)
    for node in [leaf, *leaf.ancestors()]:
        if node.record and node is not leaf:
            break
        if node.key and node.key not in GENERIC_KEYS:
            (path if node is not leaf else key).update(words_of(_raw_key(text, node)))
        elif node.head and node.parent is not None and not node.key:  # a block's own line: "  Limits:"
            path.update(words_of(text[node.head[0][0] : node.head[0][1]].split(":", 1)[0]))
    return FieldName(frozenset(key), frozenset(path - key))


def value_label(shape: Shape, start: int) -> frozenset[str]:
    """The words that name the value at `start` where it is printed: its field and path, or the word
    before it (`limits 500m`); a point of a series is named by its series (`kube_hpa_spec_min_replicas`)."""
    text = shape.text
    name = field_name(shape, start)
    words = name.words
    line_start = text.rfind("\n", 0, start) + 1
    before = _WORD_BEFORE.search(text, max(line_start, start - KEY_REACH), start)
    if before:
        words |= words_of(before.group("word"))
    leaf = shape.leaf_at(start)
    record = leaf.nearest_record()
    column = _column(text, record, start)
    if column is not None:  # a table's cell is named by its column, not by the whole header
        return words | words_of(column)
    if leaf.point or not name.key or name.key <= _CHANGE_KEYS:
        spans = record.context(LABEL_MAX_CHARS)
        words = words.union(*(words_of(text[low:high]) for low, high in spans))
    return words


def _column(text: str, row: Node, start: int) -> str | None:
    """The header cell over `start` when `row` is a row of a text table (`kubectl get`, `psql`)."""
    table = row.parent
    if table is None or not table.table or row.start <= table.head[0][0]:
        return None
    header_start, header_end = table.head[0]
    return header_cell(text[header_start:header_end], text[row.start : row.end], start - row.start)


def keyed_figures(shape: Shape) -> list[tuple[FieldName, str, int]]:
    """Every figure that is a field's whole value (`"lag": 48912`, `used_memory: 5.12G`), with its name.

    A number inside a longer value (the port of `host:9187`) is not a field of its own.
    """
    found = []
    for match in _FIGURE.finditer(shape.text):
        start = match.start()
        if not _DIRECT_KEY.search(shape.text, max(0, start - 64), start):
            continue
        name = field_name(shape, start)
        if name.key:
            found.append((name, match.group(0), start))
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
