"""Reading JSON into nodes: pretty, minified, or cut short by the runtime; nesting bounded.

An element of an array is a record; an object's identifying members (id, name, labels, metric,
timestamps) are what it is known by; a short list of scalars ([1718111400, "0.21"]) is one point.
"""

from __future__ import annotations

import re

from vectorstep.grounding.nodes import Node, adopt

MAX_DEPTH = 48  # deeper structure is read as one leaf: hostile nesting costs nothing
IDENTITY_MAX_CHARS = 300
LONG_STRING = 80
# What a record is known by, most telling first. Label sets (a series' metric, a stream's labels)
# are kept whole; other identifying fields only when short.
_IDENTITY_KEY_TEXT = """
name id number key metric labels stream tags title uid kind namespace revision version sha commit
pod container node host hostname instance service job app topic group partition queryid pid
datname usename type reason timestamp time ts date datetime eventtime lasttimestamp
firsttimestamp starttime endtime creationtimestamp created updated started finished deployed
createdat updatedat startedat finishedat deployedat
"""
_IDENTITY_KEYS = _IDENTITY_KEY_TEXT.split()
_LABEL_SETS = frozenset({"metric", "labels", "stream", "tags"})
IDENTITY_FIELDS = 3
IDENTITY_FIELD_MAX_CHARS = 90
TRAILING_MAX_CHARS = 200  # after a document: the runtime's cut marker, not more lines of text


class _Malformed(Exception):
    pass


def json_document(text: str, start: int) -> Node | None:
    try:
        node, end = _json_value(text, start, 0)
    except _Malformed:
        return None
    root = node
    rest = len(text[end:].strip())
    if rest > max(TRAILING_MAX_CHARS, end - start):
        return None  # a log whose lines open with a bracket ("[pod-name] 13:41:07 …"), not a JSON document
    if rest:  # a marker or a second document after it: keep it, as a leaf
        root = Node(0, len(text), [node, Node(end, len(text), record=True)])
        adopt(root)
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
    adopt(node)
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
