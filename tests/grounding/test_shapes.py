"""Reading a tool result by its shape: which pieces of text are records, and what each belongs to."""

from __future__ import annotations

import json

import pytest

from vectorstep.grounding.shapes import Shape


def record_of(text: str, needle: str) -> str:
    shape = Shape(text)
    node = shape.leaf_at(text.index(needle)).nearest_record()
    return text[node.start : node.end]


def context_of(text: str, needle: str) -> list[str]:
    """The heads of the nodes around `needle`: what it is shown under."""
    shape = Shape(text)
    leaf = shape.leaf_at(text.index(needle))
    return [text[start:end] for node in leaf.ancestors() for start, end in node.head]


@pytest.mark.parametrize(
    ("text", "needle", "record"),
    [
        ('{"items":[{"id":"a","v":1},{"id":"b","v":2}]}', '"v":2', '{"id":"b","v":2}'),
        ('[{"id": "a"},\n {"id": "b", "v": 2}]', '"v": 2', '{"id": "b", "v": 2}'),
        (
            '{"ts":"t1","msg":"ok"}\n{"ts":"t2","msg":"pool exhausted"}\n{"ts":"t3","msg":"ok"}',
            "exhausted",
            '{"ts":"t2","msg":"pool exhausted"}',
        ),
        (
            "12:00 INFO a\n12:01 ERROR boom\n\tat x.Y(Y.java:3)\n12:02 INFO b",
            "Y.java",
            "12:01 ERROR boom\n\tat x.Y(Y.java:3)",
        ),
        ("NAME   READY   STATUS\npod-a  1/1     Running\npod-b  0/1     Error", "Error", "pod-b  0/1     Error"),
        (" pid | state\n-----+------\n  17 | idle\n  42 | active\n(2 rows)", "active", "  42 | active"),
        (
            "containers:\n- name: app\n  image: x:1\n- name: sidecar\n  image: y:2",
            "y:2",
            "- name: sidecar\n  image: y:2",
        ),
        (
            # A log whose lines open with a bracket is lines, though its first one reads as a JSON array.
            "[checkout-5]\n13:41:07 INFO ready\n13:41:09 ERROR pool exhausted\n13:41:10 INFO retry\n" * 3,
            "ERROR",
            "13:41:09 ERROR pool exhausted",
        ),
    ],
    ids=["json", "pretty-json", "ndjson", "log-continuation", "kubectl-table", "psql", "yaml-list", "bracketed-log"],
)
def test_a_value_belongs_to_its_record(text: str, needle: str, record: str) -> None:
    assert record_of(text, needle) == record


def test_a_table_row_is_shown_under_its_header_and_a_describe_line_under_its_blocks() -> None:
    table = "NAME   READY   STATUS\npod-a  1/1     Running\npod-b  0/1     Error"
    assert context_of(table, "Error")[0] == "NAME   READY   STATUS"
    describe = (
        "Name:  p\nContainers:\n  app:\n    Last State:  Terminated\n      Reason:  OOMKilled\n  side:\n    Image:  y"
    )
    assert context_of(describe, "OOMKilled")[:3] == ["    Last State:  Terminated", "  app:", "Containers:"]


def test_a_series_is_known_by_its_labels() -> None:
    text = json.dumps({"data": {"result": [{"metric": {"route": "/a"}, "values": [[1, "0.1"]] * 50}]}})
    point = Shape(text).leaf_at(text.index('"0.1"'))
    known_by = [text[node.start : node.end] for ancestor in point.ancestors() for node in ancestor.identity]
    assert '"metric": {"route": "/a"}' in known_by


def test_two_series_are_separate_records_and_two_points_one_series() -> None:
    text = json.dumps({"result": [{"metric": {"r": "a"}, "values": [[1, "1"], [2, "2"]]}, {"metric": {"r": "b"}}]})
    shape = Shape(text)
    first, second = (shape.leaf_at(text.index(needle)) for needle in ('[1, "1"]', '"r": "b"'))
    assert first.nearest_record() is not second.nearest_record()


@pytest.mark.parametrize(
    "text",
    [
        "[" * 5000,
        '{"a":' * 3000 + "1" + "}" * 3000,
        '{"unterminated": "string',
        '{"a": 1} trailing words and {"b": 2}',
        "\x00\x01\x02",
        "",
        "\n\n\n   \n",
    ],
    ids=["brackets", "deep", "unterminated", "trailing", "binary", "empty", "blank"],
)
def test_any_text_is_read_without_failing(text: str) -> None:
    shape = Shape(text)
    for leaf in shape.leaves:
        assert 0 <= leaf.start <= leaf.end <= len(text)
