"""The key tables of docs/configuration.md are generated from the spec models and stay in step."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import pytest
from pydantic import BaseModel

from vectorstep.spec.reference import (
    Block,
    defining_model,
    documented_fields,
    field_default,
    field_type,
    marked_blocks,
    regenerate,
    render_block,
)
from vectorstep.spec.reference_blocks import ROOT_MODELS, config_blocks
from vectorstep.spec.service import LimitsSpec
from vectorstep.spec.steps import FanOutItem, ParallelItem

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


def test_the_generated_tables_are_up_to_date() -> None:
    text = DOC.read_text(encoding="utf-8")
    if regenerate(text, config_blocks()) != text:
        pytest.fail("docs/configuration.md: the generated key tables differ from the models; run `make docs`")


def test_every_block_has_its_markers_once() -> None:
    marked = marked_blocks(DOC.read_text(encoding="utf-8"))
    assert sorted(marked) == sorted(config_blocks()), "each block of reference_blocks.py is marked exactly once"


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if get_origin(annotation) in (Annotated, Union, types.UnionType, list, dict, Literal) or get_args(annotation):
        if get_origin(annotation) is Literal:
            return []
        return [model for arg in get_args(annotation) for model in _models_in(arg)]
    return []


def _fields_users_write() -> set[tuple[type[BaseModel], str]]:
    seen: set[type[BaseModel]] = set()
    todo = list(ROOT_MODELS)
    fields: set[tuple[type[BaseModel], str]] = set()
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        for name, info in model.model_fields.items():
            if info.exclude:
                continue
            fields.add((defining_model(model, name), name))
            todo.extend(_models_in(info.annotation))
    return fields


# The one key of a `parallel:` or `fan_out:` item: each has its own section, not a table of keys.
_SECTIONS = {(ParallelItem, "parallel"), (FanOutItem, "fan_out")}


def test_every_field_users_write_is_in_a_table() -> None:
    documented = {pair for block in config_blocks().values() for pair in documented_fields(block)} | _SECTIONS
    missing = sorted(f"{model.__name__}.{name}" for model, name in _fields_users_write() - documented)
    assert not missing, f"fields in no generated table (add them to spec/reference_blocks.py): {missing}"


@pytest.mark.parametrize("block", config_blocks().values(), ids=lambda block: block.name)
def test_every_row_has_a_description(block: Block) -> None:
    table = render_block(block)
    empty = [line for line in table.splitlines()[2:] if line.rstrip().endswith("|  |")]
    assert not empty, f"rows without a description (give the field `description=`): {empty}"


@pytest.mark.parametrize(
    ("field", "type_text", "default"),
    [
        ("max_agent_iterations", "integer, 1–500", "`20`"),
        ("request_timeout_seconds", "number, > 0", "`180`"),
        ("max_run_seconds", "number, > 0", "none"),
        ("max_artifact_bytes", "integer, 1,024–67,108,864", "`1048576` (1 MiB)"),
    ],
    ids=["range", "lower-bound", "optional", "written-default"],
)
def test_types_and_defaults_read_well(field: str, type_text: str, default: str) -> None:
    info = LimitsSpec.model_fields[field]
    assert (field_type(info), field_default(info)) == (type_text, default)


def test_regenerate_replaces_only_between_markers() -> None:
    block = config_blocks()["dedup"]
    text = "before\n<!-- BEGIN GENERATED: dedup (make docs) -->\nstale\n<!-- END GENERATED: dedup -->\nafter\n"
    assert regenerate(text, {"dedup": block}) == (
        "before\n<!-- BEGIN GENERATED: dedup (make docs) -->\n\n"
        + render_block(block)
        + "\n\n<!-- END GENERATED: dedup -->\nafter\n"
    )
