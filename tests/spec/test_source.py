"""Reading YAML: `${VAR}` expansion and errors that name file and line."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.fixtures.hostile import ALIAS_BOMB
from vectorstep.errors import ConfigError
from vectorstep.spec.source import expand_env, load_document


@pytest.mark.parametrize(
    ("text", "environ", "expected"),
    [
        ("${HOST}", {"HOST": "db1"}, "db1"),
        ("postgresql://${USER}@${HOST}:5432/x", {"USER": "u", "HOST": "h"}, "postgresql://u@h:5432/x"),
        ("${PORT:-5432}", {}, "5432"),
        ("${PORT:-5432}", {"PORT": "6000"}, "6000"),
        ("${PORT:-5432}", {"PORT": ""}, "5432"),
        ("${EMPTY}", {"EMPTY": ""}, ""),
        ("literal $${HOME} stays", {"HOME": "/root"}, "literal ${HOME} stays"),
        ("no variables", {}, "no variables"),
        ("$HOME is not a reference", {"HOME": "/root"}, "$HOME is not a reference"),
    ],
    ids=[
        "whole",
        "inside",
        "default",
        "set-wins",
        "empty-takes-default",
        "empty-set",
        "escape",
        "plain",
        "bare-dollar",
    ],
)
def test_env_references_expand_anywhere_inside_strings(text: str, environ: dict[str, str], expected: str) -> None:
    assert expand_env(text, environ) == (expected, [])


def test_unset_variable_without_default_names_file_line_and_key(tmp_path: Path) -> None:
    path = tmp_path / "vectorstep.yaml"
    path.write_text("database:\n  url: postgresql://${DB_USER}@db/x\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_document(path, environ={})
    (problem,) = raised.value.problems
    assert problem.line == 2
    assert problem.key_path == "database.url"
    assert "${DB_USER} is not set" in problem.message


def test_yaml_syntax_error_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: x\nsteps:\n  - name: [unclosed\n  - other: 1\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_document(path, environ={})
    (problem,) = raised.value.problems
    assert problem.line is not None and problem.line >= 3
    assert "invalid YAML" in problem.message


def test_duplicate_keys_are_an_error_not_a_silent_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: first\nname: second\n", encoding="utf-8")
    with pytest.raises(ConfigError) as raised:
        load_document(path, environ={})
    assert raised.value.problems[0].line == 2


def test_every_key_is_located(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("a: 1\nb:\n  - x: 1\n    y: [1, 2]\n  - 3\n", encoding="utf-8")
    document = load_document(path, environ={})
    assert document.data == {"a": 1, "b": [{"x": 1, "y": [1, 2]}, 3]}
    assert document.source.locate(("b", 0, "y")).line == 4
    assert document.source.locate(("b", 1)).line == 5
    assert document.source.locate(("b", 0, "missing", "deeper")).line == 3


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="file not found"):
        load_document(tmp_path / "nope.yaml")


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        (ALIAS_BOMB, 1, "expands to more than 100,000 values"),
        ("a: " + "[" * 100_000 + "]" * 100_000, 1, "nested more than 64 deep"),
        ("ok: 1\nb:\n" + "".join(" " * (2 * depth) + "k:\n" for depth in range(1, 200)), 131, "indented more than 256"),
        (
            "steps: !!python/object/apply:os.system [ls]\n",
            1,
            "YAML tags (tag:yaml.org,2002:python/object/apply:os.system)",
        ),
        ("name: !custom x\n", 1, "YAML tags (!custom) are not allowed"),
        ("blob: !!binary aGVsbG8=\n", 1, "YAML tags (!!binary) are not allowed"),
    ],
    ids=["alias-bomb", "deep-flow", "deep-indent", "python-tag", "custom-tag", "binary"],
)
def test_hostile_yaml_is_refused_quickly_with_its_line(tmp_path: Path, text: str, line: int, says: str) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text(text, encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(ConfigError) as raised:
        load_document(path)
    assert time.monotonic() - started < 2
    (problem,) = raised.value.problems
    assert problem.line == line and says in problem.message


def test_merge_keys_and_modest_aliases_still_load(tmp_path: Path) -> None:
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        "defaults: &defaults {executor: gateway, timeout_seconds: 30}\n"
        "steps:\n  - <<: *defaults\n    name: one\n  - <<: *defaults\n    name: two\n    timeout_seconds: 5\n",
        encoding="utf-8",
    )
    document = load_document(path)
    assert document.data["steps"] == [
        {"name": "one", "executor": "gateway", "timeout_seconds": 30},
        {"name": "two", "timeout_seconds": 5, "executor": "gateway"},
    ]
    assert document.source.locate(("steps", 1, "executor")).line == 5  # where the merging item is
