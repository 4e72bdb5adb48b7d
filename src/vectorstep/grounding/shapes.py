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
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

Span = tuple[int, int]
MAX_DEPTH = 48  # deeper structure is read as one leaf: hostile nesting costs nothing
IDENTITY_MAX_CHARS = 300
LONG_STRING = 80
# What a record is known by, most telling first. Label sets (a series' metric, a stream's labels)
# are kept whole; other identifying fields only when short.
_IDENTITY_KEYS = [
    "name",
    "id",
    "key",
    "metric",
    "labels",
    "stream",
    "tags",
    "title",
    "uid",
    "kind",
    "namespace",
    "revision",
    "version",
    "sha",
    "commit",
    "pod",
    "container",
    "node",
    "host",
    "hostname",
    "instance",
    "service",
    "job",
    "app",
    "topic",
    "group",
    "partition",
    "queryid",
    "pid",
    "datname",
    "usename",
    "type",
    "reason",
    "timestamp",
    "time",
    "ts",
    "date",
    "datetime",
    "eventtime",
    "lasttimestamp",
    "firsttimestamp",
    "starttime",
    "endtime",
    "creationtimestamp",
    "created",
    "updated",
    "started",
    "finished",
    "deployed",
    "createdat",
    "updatedat",
    "startedat",
    "finishedat",
    "deployedat",
]
_LABEL_SETS = frozenset({"metric", "labels", "stream", "tags"})
IDENTITY_FIELDS = 3
IDENTITY_FIELD_MAX_CHARS = 90
_KEY_VALUE = re.compile(r"[ \t]*(?:- )?[A-Za-z][A-Za-z _.()/'-]{0,48}:(?:\s|$)")
_TABLE_RULE = re.compile(r"^[ \t]*[-=+| ]*-{3,}[-=+| ]*$")
_HEADER_WORD = re.compile(r"[A-Z][A-Z0-9_%./-]*(?:\([A-Za-z%]+\))?(?: [A-Z][A-Z0-9_%./-]*(?:\([A-Za-z%]+\))?)*")


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


def common_ancestor(first: Node, second: Node) -> Node:
    seen = {id(first)} | {id(node) for node in first.ancestors()}
    node: Node | None = second
    while node is not None:
        if id(node) in seen:
            return node
        node = node.parent
    return first


def parse(text: str) -> Node:
    lines = _lines(text)
    # One object per line: lines that open an object at their very start (pretty JSON indents its inner ones).
    json_lines = sum(1 for start, _ in lines if text[start : start + 1] == "{")
    if len(lines) >= 2 and json_lines >= len(lines) * 0.6:
        return _ndjson(text, lines)
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        root = _json_document(text, len(text) - len(stripped))
        if root is not None:
            return root
    return _text_tree(text, lines)


# --- JSON -----------------------------------------------------------------------------------------


class _Malformed(Exception):
    pass


def _json_document(text: str, start: int) -> Node | None:
    try:
        node, end = _json_value(text, start, 0)
    except _Malformed:
        return None
    root = node
    if text[end:].strip():  # a marker or a second document after it: keep it, as a leaf
        root = Node(0, len(text), [node, Node(end, len(text), record=True)])
        _adopt(root)
    else:
        node.start, node.end = 0, len(text)
    root.record = not root.collection
    return root


def _skip(text: str, index: int) -> int:
    while index < len(text) and text[index] in " \t\r\n":
        index += 1
    return index


def _json_value(text: str, index: int, depth: int) -> tuple[Node, int]:
    index = _skip(text, index)
    if index >= len(text):
        raise _Malformed
    opener = text[index]
    if opener == '"':
        end = _string_end(text, index)
        return Node(index, end), end
    if opener not in "{[":
        end = index
        while end < len(text) and text[end] not in ",]}\n":
            end += 1
        if end == index:
            raise _Malformed
        return Node(index, end), end
    if depth >= MAX_DEPTH:
        end = _container_end(text, index)
        return Node(index, end), end
    return _json_object(text, index, depth) if opener == "{" else _json_array(text, index, depth)


def _json_object(text: str, start: int, depth: int) -> tuple[Node, int]:
    node = Node(start, start)
    index = start + 1
    while True:
        index = _skip(text, index)
        if index >= len(text):  # cut short: the object ends with the text
            return _closed(node, start, len(text), None), len(text)
        if text[index] == "}":
            return _closed(node, start, index + 1, index), index + 1
        if text[index] == ",":
            index += 1
            continue
        if text[index] != '"':
            raise _Malformed
        key_start, key_end = index, _string_end(text, index)
        key = text[index + 1 : key_end - 1]
        colon = _skip(text, key_end)
        if colon >= len(text) or text[colon] != ":":
            if colon >= len(text):
                return _closed(node, start, len(text), None), len(text)
            raise _Malformed
        value, index = _json_value(text, colon + 1, depth + 1)
        if value.head:  # a container: the key and its opening bracket lead to what is inside
            value.head = [(key_start, value.start + 1), *value.head[1:]]
        value.start = key_start
        value.key = _normal_key(key)
        node.children.append(value)


def _json_array(text: str, start: int, depth: int) -> tuple[Node, int]:
    node = Node(start, start)
    index = start + 1
    while True:
        index = _skip(text, index)
        if index >= len(text):
            return _closed(node, start, len(text), None, array=True), len(text)
        if text[index] == "]":
            return _closed(node, start, index + 1, index, array=True), index + 1
        if text[index] == ",":
            index += 1
            continue
        value, index = _json_value(text, index, depth + 1)
        node.children.append(value)


def _closed(node: Node, start: int, end: int, closer: int | None, *, array: bool = False) -> Node:
    node.start, node.end = start, end
    node.head = [(start, start + 1)] + ([(closer, closer + 1)] if closer is not None else [])
    if array:
        scalars = all(not child.children for child in node.children)
        if scalars and end - start <= 200:  # a point like [1718111400, "0.21"]: one leaf
            node.children, node.head, node.point = [], [], True
            return node
        node.collection = not scalars  # a list of values (points) is one series, not separate records
        for child in node.children:
            # Points ([t, v], [ns, line]) and objects are records; in a list of scalars only long
            # strings (log lines) are, not the parts of a tuple.
            child.record = bool(child.children) or not scalars or child.point or child.end - child.start > LONG_STRING
    else:
        node.identity = _json_identity(node)
    _adopt(node)
    return node


def _json_identity(node: Node) -> list[Node]:
    ranked: list[tuple[int, Node]] = []
    for child in node.children:
        rank = _identity_rank(child.key)
        size = child.end - child.start
        if rank is not None and (
            (not child.children and size <= IDENTITY_FIELD_MAX_CHARS)
            or (child.key in _LABEL_SETS and size <= IDENTITY_MAX_CHARS and not child.collection)
        ):
            ranked.append((rank, child))
        elif child.key == "metadata":  # a Kubernetes object is known by its metadata's name and namespace
            ranked.extend(
                (_IDENTITY_KEYS.index(grand.key), grand)
                for grand in child.children
                if grand.key in ("name", "namespace")
            )
    return [child for _, child in sorted(ranked, key=lambda item: item[0])[:IDENTITY_FIELDS]]


def _identity_rank(key: str) -> int | None:
    if key in _IDENTITY_KEYS:
        return _IDENTITY_KEYS.index(key)
    if key.endswith(("name", "id")):
        return len(_IDENTITY_KEYS)
    if key.endswith(("at", "time", "timestamp")):
        return len(_IDENTITY_KEYS) + 1
    return None


def _normal_key(key: str) -> str:
    return re.sub(r"[^a-z0-9]", "", key.lower())


def _string_end(text: str, start: int) -> int:
    index = start + 1
    while index < len(text):
        character = text[index]
        if character == "\\":
            index += 2
            continue
        if character == '"':
            return index + 1
        index += 1
    return len(text)


def _container_end(text: str, start: int) -> int:
    depth, index = 0, start
    while index < len(text):
        character = text[index]
        if character == '"':
            index = _string_end(text, index)
            continue
        if character in "{[":
            depth += 1
        elif character in "}]":
            depth -= 1
            if depth == 0:
                return index + 1
        index += 1
    return len(text)


def _adopt(node: Node) -> None:
    for child in node.children:
        child.parent = node


# --- lines ----------------------------------------------------------------------------------------


def _lines(text: str) -> list[Span]:
    spans, start = [], 0
    for line in text.split("\n"):
        if line.strip():
            spans.append((start, start + len(line.rstrip())))
        start += len(line) + 1
    return spans


def _ndjson(text: str, lines: list[Span]) -> Node:
    root = Node(0, len(text), collection=True)
    for start, end in lines:
        parsed = _json_document(text[start:end], 0) if text[start:end].lstrip()[:1] == "{" else None
        line = Node(start, end) if parsed is None else _shifted(parsed, start)
        line.record = True
        root.children.append(line)
    _adopt(root)
    return root


def _shifted(node: Node, offset: int) -> Node:
    for each in node.walk():
        each.start += offset
        each.end += offset
        each.head = [(start + offset, end + offset) for start, end in each.head]
    return node


def _indent(line: str) -> int:
    content = line.lstrip()
    if " | " in line or _TABLE_RULE.match(line):
        return 0  # psql pads its table with a leading space: that is alignment, not nesting
    # A YAML list item sits one step inside its key even when written at the key's own indentation.
    return len(line) - len(content) + (1 if content.startswith("- ") else 0)


def _text_tree(text: str, lines: list[Span]) -> Node:
    """Blocks by indentation; runs of rows under a table header become tables."""
    root = Node(0, len(text))
    stack: list[tuple[int, Node]] = [(-1, root)]
    for start, end in lines:
        indent = _indent(text[start:end])
        while stack[-1][0] >= indent:
            stack.pop()
        node = Node(start, end)
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    _structure(text, root)
    _split_documents(text, root)
    root.start, root.end = 0, len(text)
    top_key_values = sum(1 for child in root.children if _KEY_VALUE.match(text, child.start))
    if root.children and not root.collection and top_key_values < len(root.children) * 0.6:
        root.collection = True  # a log: every line (with its continuation lines) is a record
    for child in root.children if root.collection else ():
        child.record = True
    root.record = not root.collection
    return root


def _structure(text: str, node: Node) -> None:
    """Children first; then a line with children becomes a block whose own line is its head."""
    for child in node.children:
        child.parent = node
        if child.children:
            _structure(text, child)
    if node.children and node.head == [] and node.start < node.end and node is not _root_of(node):
        own = Node(node.start, node.end, parent=node)
        node.head, node.identity = [(node.start, node.end)], [own]
        node.children.insert(0, own)
        node.end = max(child.end for child in node.children)
    _tables(text, node)
    blocks = [child for child in node.children if child.children]
    items = [child for child in node.children if text[child.start : child.end].lstrip().startswith("- ")]
    if len(items) >= 2 or _alike(text, blocks):
        node.collection = True
        for child in node.children:
            child.record = bool(child.children) or child in items


def _root_of(node: Node) -> Node:
    return node if node.parent is None else list(node.ancestors())[-1]


def _alike(text: str, blocks: list[Node]) -> bool:
    """Sibling blocks of one kind (two containers), not the sections of one object (metadata, spec)."""
    if len(blocks) < 2:
        return False
    keys = [{_line_key(text, child) for child in block.children[1:]} - {""} for block in blocks]
    first = keys[0]
    return bool(first) and all(len(first & other) >= 0.5 * max(len(first), len(other)) for other in keys[1:])


def _line_key(text: str, node: Node) -> str:
    line = text[node.start : node.end].strip().removeprefix("- ")
    return line.split(":", 1)[0].strip().lower() if ":" in line[:50] else ""


def _split_documents(text: str, root: Node) -> None:
    """Several objects in one output (`kubectl describe pods`): a new record at each repeat of the first key."""
    children = root.children
    if len(children) < 4 or not _KEY_VALUE.match(text, children[0].start):
        return
    first_key = _line_key(text, children[0])
    starts = [index for index, child in enumerate(children) if _line_key(text, child) == first_key]
    if len(starts) < 2:
        return
    documents = []
    for begin, finish in zip(starts, [*starts[1:], len(children)], strict=True):
        members = children[begin:finish]
        document = Node(members[0].start, members[-1].end, members, record=True, parent=root)
        document.identity = [members[0]]
        _adopt(document)
        documents.append(document)
    root.children = children[: starts[0]] + documents
    root.collection = True


def _tables(text: str, node: Node) -> None:
    """Find header lines among `node`'s children and gather the rows under each into a table."""
    children = node.children
    result: list[Node] = []
    index = 0
    while index < len(children):
        header = children[index]
        if not header.children and _is_header(text, children, index):
            rule = index + 1 if _TABLE_RULE.match(text[children[index + 1].start : children[index + 1].end]) else None
            first = (rule or index) + 1
            last = first
            while last < len(children) and not children[last].children and not _is_header(text, children, last):
                last += 1
            if last > first:
                head = [(header.start, header.end)] + ([(children[rule].start, children[rule].end)] if rule else [])
                table = Node(header.start, children[last - 1].end, children[first:last], head, collection=True)
                table.parent = node
                for row in table.children:
                    row.parent, row.record = table, True
                result.append(table)
                index = last
                continue
        result.append(header)
        index += 1
    node.children = result


def _is_header(text: str, siblings: list[Node], index: int) -> bool:
    line = text[siblings[index].start : siblings[index].end].strip()
    if index + 1 >= len(siblings):
        return False
    following = text[siblings[index + 1].start : siblings[index + 1].end]
    if _TABLE_RULE.match(following) and ("|" in line or "  " in line or "\t" in line):
        return True  # a header over a ---+--- rule (psql, kubectl describe's Events)
    columns = [column for column in re.split(r"\s{2,}|\t", line) if column]
    return len(columns) >= 3 and all(_HEADER_WORD.fullmatch(column) for column in columns)
