"""An answer's artifacts: split out of the output, size-capped, and hostile ones left out with a warning."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vectorstep.domain.artifacts import ArtifactLimits, is_safe_name, references_of, take_artifacts

LIMITS = ArtifactLimits(max_bytes=1024, max_per_step=3)


def answer(artifacts: Any) -> dict[str, Any]:
    return {"confidence": 0.9, "summary": "s", "next_step_context": "", "artifacts": artifacts}


def test_artifacts_become_references_in_the_output() -> None:
    taken = take_artifacts(answer({"report.md": "# Report\n", "patch.diff": "é"}), LIMITS)
    assert [(item.name, item.content, item.size, item.truncated) for item in taken.artifacts] == [
        ("report.md", "# Report\n", 9, False),
        ("patch.diff", "é", 2, False),  # bytes of UTF-8, not characters
    ]
    assert taken.output["artifacts"] == {
        "report.md": {"artifact": "report.md", "size": 9, "truncated": False},
        "patch.diff": {"artifact": "patch.diff", "size": 2, "truncated": False},
    }
    assert taken.output["summary"] == "s" and taken.warnings == ()
    assert references_of(taken.output) == list(taken.output["artifacts"].values())


def test_an_answer_without_artifacts_is_left_as_it_is() -> None:
    output = answer(None)
    assert take_artifacts(output, LIMITS).output == output
    assert take_artifacts(output, LIMITS).artifacts == ()


def test_an_oversize_artifact_is_kept_truncated_on_a_character_boundary_and_says_so() -> None:
    taken = take_artifacts(answer({"big.log": "é" * 1000}), LIMITS)  # 2000 bytes
    (artifact,) = taken.artifacts
    assert artifact.truncated and artifact.size == 2000
    kept, marker = artifact.content.split("\n[", 1)
    assert kept == "é" * 512
    assert marker == "… truncated by VectorStep: the artifact was 2,000 bytes; limits.max_artifact_bytes keeps 1,024]\n"
    assert taken.warnings == (
        "artifact 'big.log' is 2,000 bytes, over limits.max_artifact_bytes (1,024): stored truncated",
    )
    assert taken.output["artifacts"]["big.log"] == {"artifact": "big.log", "size": 2000, "truncated": True}


@pytest.mark.parametrize(
    ("name", "value", "warning"),
    [
        ("../etc/passwd", "x", "artifact '../etc/passwd' not stored: its name is not a safe file name"),
        (".hidden", "x", "artifact '.hidden' not stored: its name is not a safe file name"),
        ("a b.md", "x", "artifact 'a b.md' not stored: its name is not a safe file name"),
        ("nul\x00.md", "x", "artifact 'nul\\x00.md' not stored: its name is not a safe file name"),
        ("n" * 5000, "x", f"artifact '{'n' * 60}…' not stored: its name is not a safe file name"),
        ("count", 3, "artifact 'count' not stored: its value is a number, not text"),
        ("nested", {"a": 1}, "artifact 'nested' not stored: its value is an object, not text"),
        ("nothing", None, "artifact 'nothing' not stored: its value is null, not text"),
        ("binary", "a\x00b", "artifact 'binary' not stored: its text holds a NUL character"),
    ],
    ids=["traversal", "dotfile", "space", "nul-name", "huge-name", "number", "object", "null", "nul-text"],
)
def test_a_hostile_artifact_is_left_out_with_a_warning(name: str, value: Any, warning: str) -> None:
    taken = take_artifacts(answer({name: value, "ok.txt": "fine"}), LIMITS)
    assert [item.name for item in taken.artifacts] == ["ok.txt"]
    assert list(taken.output["artifacts"]) == ["ok.txt"]
    (found,) = taken.warnings
    assert found.startswith(warning) and len(found) < 300


def test_artifacts_beyond_the_count_are_left_out() -> None:
    taken = take_artifacts(answer({f"a{number}.txt": "x" for number in range(5)}), LIMITS)
    assert [item.name for item in taken.artifacts] == ["a0.txt", "a1.txt", "a2.txt"]
    assert taken.warnings == tuple(
        f"artifact 'a{number}.txt' not stored: the answer holds more than limits.max_artifacts_per_step (3) artifacts"
        for number in (3, 4)
    )


def test_artifacts_that_are_not_an_object_are_refused_as_a_whole() -> None:
    taken = take_artifacts(answer(["a", "b"]), LIMITS)
    assert taken.artifacts == () and taken.output["artifacts"] == {}
    assert taken.warnings == ("artifacts not stored: the answer's `artifacts` is a list, not an object",)


def test_an_older_record_that_held_the_texts_has_no_references() -> None:
    assert references_of(answer({"report.md": "the text itself"})) == []
    assert references_of(None) == []


@given(st.dictionaries(st.text(max_size=30), st.one_of(st.text(max_size=3000), st.integers(), st.none())))
def test_no_answer_fails_and_every_stored_artifact_is_safe_and_within_bounds(artifacts: dict[str, Any]) -> None:
    taken = take_artifacts(answer(artifacts), LIMITS)
    assert len(taken.artifacts) <= LIMITS.max_per_step
    for item in taken.artifacts:
        assert is_safe_name(item.name) and "\x00" not in item.content
        body = item.content.split("\n[… truncated by VectorStep", 1)[0]
        assert len(body.encode("utf-8", "backslashreplace")) <= LIMITS.max_bytes
    assert len(taken.artifacts) + len(taken.warnings) - sum(item.truncated for item in taken.artifacts) == len(
        artifacts
    )
