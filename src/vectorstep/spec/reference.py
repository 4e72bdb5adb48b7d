"""The key tables of docs/configuration.md, rendered from the spec models' field metadata.

Each table lists a block's keys with a readable type (constraints included), the default and the
field's `description`. `doc_type` / `doc_default` in a field's `json_schema_extra` replace the
rendered type or default where the model cannot say it (a default that depends on the database).
`scripts/gen_config_docs.py` (`make docs`) writes the tables between marker comments.
"""

from __future__ import annotations

import inspect
import json
import re
import types
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

BEGIN = "<!-- BEGIN GENERATED: {name} (make docs) -->"
END = "<!-- END GENERATED: {name} -->"
_MARKER = re.compile(
    r"<!-- BEGIN GENERATED: (?P<name>[\w.-]+) \(make docs\) -->\n.*?<!-- END GENERATED: (?P=name) -->", re.S
)


@dataclass(frozen=True)
class Row:
    """One key of a table, and the model field it documents (none for a key read before validation)."""

    key: str
    kind: str
    default: str
    description: str
    owner: tuple[type[BaseModel], str] | None = None
    shown: bool = True  # False: a key whose sub-keys are listed instead


@dataclass(frozen=True)
class Block:
    """One generated table: the fields of `model`, nested blocks listed under dotted keys.

    `expand` names the keys whose model's fields are listed as `key.sub` (`key[].sub` for a list);
    True keeps the key's own row. `shared` fields are listed in one row pointing elsewhere;
    `notes` replace a field's description where this block uses it differently; `extra` adds rows
    for keys that are not model fields."""

    name: str
    model: type[BaseModel]
    expand: Mapping[str, bool] = field(default_factory=dict)
    skip: tuple[str, ...] = ()
    shared: tuple[tuple[str, ...], str] | None = None
    notes: Mapping[str, str] = field(default_factory=dict)
    extra: tuple[Row, ...] = ()
    first: tuple[str, ...] = ()  # keys listed before the rest (a model lists inherited fields first)


def render_block(block: Block) -> str:
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for row in block_rows(block):
        cells = (f"`{row.key}`" if "`" not in row.key else row.key, row.kind, row.default, row.description)
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines)


def block_rows(block: Block) -> list[Row]:
    rows = [row for row in _rows(block, block.model, "") if row.shown]
    first = sorted((row for row in rows if row.key in block.first), key=lambda row: block.first.index(row.key))
    rows = first + list(block.extra) + [row for row in rows if row.key not in block.first]
    if block.shared is not None:
        names, description = block.shared
        keys = ", ".join(f"`{name}`" for name in names)
        rows.append(Row(keys, "", "", description))
    return rows


def documented_fields(block: Block) -> Iterator[tuple[type[BaseModel], str]]:
    """The (defining model, field) pairs a block documents, shared fields included."""
    for row in _rows(block, block.model, ""):
        if row.owner is not None:
            yield row.owner
    if block.shared is not None:
        for name in block.shared[0]:
            yield defining_model(block.model, name), name


def _rows(block: Block, model: type[BaseModel], prefix: str) -> Iterator[Row]:
    shared = set(block.shared[0]) if block.shared else set()
    for name, info in model.model_fields.items():
        if info.exclude or (not prefix and (name in block.skip or name in shared)):
            continue
        key = prefix + (info.alias or name)
        description = block.notes.get(key, info.description or "")
        shown = key not in block.expand or block.expand[key]
        yield Row(key, field_type(info), field_default(info), description, (defining_model(model, name), name), shown)
        if key in block.expand:
            inner, is_list = _inner_model(info.annotation)
            yield from _rows(block, inner, key + ("[]." if is_list else "."))


def defining_model(model: type[BaseModel], name: str) -> type[BaseModel]:
    """The class in `model`'s bases that declares field `name` (where its description lives)."""
    for base in reversed(model.__mro__):
        if isinstance(base, type) and issubclass(base, BaseModel) and name in inspect.get_annotations(base):
            return base
    return model


def _inner_model(annotation: Any) -> tuple[type[BaseModel], bool]:
    for arg in _alternatives(annotation):
        if get_origin(arg) is list:
            inner, _ = _inner_model(get_args(arg)[0])
            return inner, True
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg, False
    raise TypeError(f"{annotation!r} holds no model to expand")


def _alternatives(annotation: Any) -> list[Any]:
    annotation = _strip(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        return [_strip(arg) for arg in get_args(annotation) if arg is not type(None)]
    return [annotation]


def _strip(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _extra(info: FieldInfo, key: str) -> str | None:
    extra = info.json_schema_extra
    value = extra.get(key) if isinstance(extra, dict) else None
    return value if isinstance(value, str) else None


def field_type(info: FieldInfo) -> str:
    written = _extra(info, "doc_type")
    text = written if written is not None else type_text(info.annotation) + _constraints(info.metadata, info.annotation)
    rule = _extra(info, "doc_rule")
    return f"{text}, {rule}" if rule else text


def type_text(annotation: Any, plural: bool = False) -> str:
    origin = get_origin(annotation)
    if origin is Annotated:
        inner, *metadata = get_args(annotation)
        return type_text(inner, plural) + _constraints(metadata, inner)
    if origin in (Union, types.UnionType):
        options = [option for option in get_args(annotation) if option is not type(None)]
        return " or ".join(type_text(option, plural) for option in options)
    if origin is Literal:
        return " \\| ".join(f"`{value}`" for value in get_args(annotation))
    if origin is list:
        noun, _, each = type_text(get_args(annotation)[0], plural=True).partition(", ")
        return f"list of {noun} (each {each})" if each else f"list of {noun}"
    if origin is dict:
        key, value = get_args(annotation)
        return _mapping_text(key, value, plural)
    return _noun(annotation, plural)


def _mapping_text(key: Any, value: Any, plural: bool) -> str:
    if value is Any:
        return "mappings" if plural else "mapping"
    return f"mapping of {type_text(key)} → {type_text(value)}"


_NOUNS: dict[Any, tuple[str, str]] = {
    str: ("string", "strings"),
    int: ("integer", "integers"),
    float: ("number", "numbers"),
    bool: ("boolean", "booleans"),
    Any: ("any value", "any values"),
}


def _noun(kind: Any, plural: bool) -> str:
    if kind in _NOUNS:
        return _NOUNS[kind][plural]
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return "mappings" if plural else "mapping"
    return str(kind)


def _constraints(metadata: Any, annotation: Any) -> str:
    bounds: dict[str, Any] = {}
    parts: list[str] = []
    for item in _flat(metadata):
        for name in ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern"):
            value = getattr(item, name, None)
            if value is not None:
                bounds[name] = value
    low = ("ge", bounds["ge"]) if "ge" in bounds else ("gt", bounds["gt"]) if "gt" in bounds else None
    high = ("le", bounds["le"]) if "le" in bounds else ("lt", bounds["lt"]) if "lt" in bounds else None
    if low and high and low[0] == "ge" and high[0] == "le":
        parts.append(f"{_number(low[1])}–{_number(high[1])}")
    else:
        signs = {"ge": "≥", "gt": ">", "le": "≤", "lt": "<"}
        parts.extend(f"{signs[bound[0]]} {_number(bound[1])}" for bound in (low, high) if bound)
    text_like = _strip(annotation) is str or str in _alternatives(annotation)
    unit = "character" if text_like else "item"
    if "min_length" in bounds:
        count = bounds["min_length"]
        parts.append(f"at least {count} {unit}{'s' if count != 1 else ''}")
    if "max_length" in bounds:
        parts.append(f"at most {bounds['max_length']} {unit}s")
    if "pattern" in bounds:
        parts.append(f"matching `{bounds['pattern']}`")
    return (", " + ", ".join(parts)) if parts else ""


def _flat(metadata: Any) -> Iterator[Any]:
    for item in metadata:
        if isinstance(item, FieldInfo):
            yield from item.metadata
        else:
            yield item


def _number(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return f"{value:g}"


def field_default(info: FieldInfo) -> str:
    written = _extra(info, "doc_default")
    if written is not None:
        return written
    if info.default_factory is not None:
        value = info.default_factory()  # type: ignore[call-arg]
    elif info.default is PydanticUndefined:
        return "required"
    else:
        value = info.default
    if value is None:
        return "none"
    if isinstance(value, BaseModel):
        text = _flow(value.model_dump(mode="json", by_alias=True, exclude_none=True))
        return f"`{text}`" if len(text) <= 60 else "the defaults of its keys"
    if isinstance(value, str):
        return f"`{value}`" if value else '`""`'
    return f"`{_flow(value)}`"


_PLAIN = re.compile(r"^[A-Za-z_./~][\w./:~+*-]*$")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "none", "~"}


def _flow(value: Any) -> str:
    """A value as compact flow YAML: `{mode: embedded}`, `[operator.read, operator.write]`."""
    if isinstance(value, str):
        plain = _PLAIN.match(value) and value.lower() not in _YAML_WORDS and ": " not in value
        return value if plain else json.dumps(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{key}: {_flow(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_flow(item) for item in value) + "]"
    return _scalar(value)


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, int):
        return str(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def _cell(text: str) -> str:
    # A `|` in a description would end the cell; the types escape their own.
    return re.sub(r"(?<!\\)\|", r"\\|", text.replace("\n", " ")).strip()


def marked_blocks(document: str) -> list[str]:
    """The names of the generated blocks a document holds, in order."""
    return [match.group("name") for match in _MARKER.finditer(document)]


def regenerate(document: str, blocks: Mapping[str, Block]) -> str:
    """`document` with the table between each pair of markers rendered afresh."""

    def table(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in blocks:
            raise KeyError(f"docs marker names an unknown block {name!r}")
        # Blank lines around the table: nothing after it can be read as one more row.
        return f"{BEGIN.format(name=name)}\n\n{render_block(blocks[name])}\n\n{END.format(name=name)}"

    return _MARKER.sub(table, document)
