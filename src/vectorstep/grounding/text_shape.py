"""Reading line-oriented text into nodes: logs, NDJSON, tables, `key: value` blocks and YAML.

Lines nest by indentation: a log line with its continuation lines, a `describe` block with the
blocks inside it, a YAML list item with its keys. Runs of rows under a header become a table whose
rows are records and whose header is shown with any of them.
"""

from __future__ import annotations

import re

from vectorstep.grounding.json_shape import json_document
from vectorstep.grounding.nodes import Node, Span, adopt

_KEY_VALUE = re.compile(r"[ \t]*(?:- )?[A-Za-z][A-Za-z _.()/'-]{0,48}:(?:\s|$)")
_TABLE_RULE = re.compile(r"^[ \t]*[-=+| ]*-{3,}[-=+| ]*$")
_HEADER_WORD = re.compile(r"[A-Z][A-Z0-9_%./-]*(?:\([A-Za-z%]+\))?(?: [A-Z][A-Z0-9_%./-]*(?:\([A-Za-z%]+\))?)*")


def lines_of(text: str) -> list[Span]:
    spans, start = [], 0
    for line in text.split("\n"):
        if line.strip():
            spans.append((start, start + len(line.rstrip())))
        start += len(line) + 1
    return spans


def ndjson(text: str, lines: list[Span]) -> Node:
    root = Node(0, len(text), collection=True)
    for start, end in lines:
        parsed = json_document(text[start:end], 0) if text[start:end].lstrip()[:1] == "{" else None
        line = Node(start, end) if parsed is None else _shifted(parsed, start)
        line.record = True
        root.children.append(line)
    adopt(root)
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


def text_tree(text: str, lines: list[Span]) -> Node:
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
    if root.record and root.children and _KEY_VALUE.match(text, root.children[0].start):
        root.identity = [root.children[0]]  # one object (`kubectl describe pod x`): known by its first line, its name
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
        adopt(document)
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
                table = Node(
                    header.start, children[last - 1].end, children[first:last], head, collection=True, table=True
                )
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
