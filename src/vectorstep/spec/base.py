"""The base of every `...Spec` model, and turning validation errors into located problems."""

from __future__ import annotations

import difflib
import re
from types import UnionType
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, ConfigDict, Tag, ValidationError

from vectorstep.errors import ConfigError, Problem
from vectorstep.spec.patterns import compile_pattern
from vectorstep.spec.source import Document, KeyPath, SourceMap, format_key_path

SpecT = TypeVar("SpecT", bound=BaseModel)


def _compiles(pattern: str) -> str:
    compile_pattern(pattern)  # PatternError is a ValueError: a located problem
    return pattern


RegexPattern = Annotated[str, AfterValidator(_compiles)]  # a regular expression, checked when the file loads


def did_you_mean(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


class SpecModel(BaseModel):
    """Frozen and strict about unknown keys (reported with a did-you-mean by `problems_from_validation`)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


def validate_document(model: type[SpecT], document: Document, *, context: dict[str, Any] | None = None) -> SpecT:
    """Validate a document's data against `model`, or raise ConfigError with every located problem."""
    try:
        return model.model_validate(document.data, context=context)
    except ValidationError as error:
        raise ConfigError(problems_from_validation(error, model, document.data, document.source)) from None


def validate_data(model: type[SpecT], data: Any, source: SourceMap) -> SpecT:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise ConfigError(problems_from_validation(error, model, data, source)) from None


def problems_from_validation(
    error: ValidationError, model: type[BaseModel], data: Any, source: SourceMap
) -> list[Problem]:
    """One problem per pydantic error, located by walking the original data along the error's loc."""
    problems: list[Problem] = []
    seen: set[tuple[str, int | None, str]] = set()
    failed_paths = {_data_path(err["loc"], data) for err in error.errors()}
    for err in error.errors():
        path = _data_path(err["loc"], data)
        if _follows_bad_executor(path, failed_paths):
            continue  # an unknown or missing executor is reported once, at `executor`
        if err["type"] == "union_tag_invalid":
            discriminator = str((err.get("ctx") or {}).get("discriminator", "")).strip("'")
            path = (*path, discriminator) if discriminator.isidentifier() else path
        if err["type"] == "extra_forbidden":
            message = _unknown_key_message(str(err["loc"][-1]), known_keys_at(model, err["loc"][:-1]))
        else:
            message = _message(err)
        location = source.locate(path)
        key = format_key_path(path)
        if (key, location.line, message) in seen:
            continue
        seen.add((key, location.line, message))
        problems.append(Problem(file=location.file, line=location.line, key_path=key, message=message))
    return sorted(problems, key=lambda problem: (problem.file, problem.line or 0))


def _unknown_key_message(key: str, known: list[str]) -> str:
    if not known:
        return f"unknown key '{key}'"
    return f"unknown key '{key}'{did_you_mean(key, known)}; expected one of: {', '.join(known)}"


def known_keys_at(model: type[BaseModel], loc: tuple[int | str, ...]) -> list[str]:
    """The keys the model at `loc` accepts, found by following loc through the type annotations."""
    current: Any = model
    for part in loc:
        current = _step_into(current, part)
        if current is None:
            return []
    current = _unwrap(current)
    if get_origin(current) in (Union, UnionType):  # an optional block (`X | None`) accepts the keys of X
        present = [member for member in get_args(current) if _unwrap(member) is not type(None)]
        current = _unwrap(present[0]) if len(present) == 1 else current
    if isinstance(current, type) and issubclass(current, BaseModel):
        return sorted(field.alias or name for name, field in current.model_fields.items() if not field.exclude)
    return []


def _unwrap(annotation: Any) -> Any:
    while get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    return annotation


def _step_into(annotation: Any, part: int | str) -> Any:
    annotation = _unwrap(annotation)
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        fields = {field.alias or name: field for name, field in annotation.model_fields.items()}
        fields.update(annotation.model_fields)
        field = fields.get(str(part))
        return field.annotation if field is not None else None
    origin = get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return get_args(annotation)[0]
    if origin is dict:
        return get_args(annotation)[1]
    if origin in (Union, UnionType):
        present = [member for member in get_args(annotation) if _unwrap(member) is not type(None)]
        if len(present) == 1:  # `X | None`: pydantic adds no tag for it; `part` is a key of X
            return _step_into(present[0], part)
        return _union_member(annotation, part)
    return None


def _union_member(annotation: Any, tag: int | str) -> Any:
    """The member of a union that pydantic named `tag` in an error location."""
    members = get_args(annotation)
    models = [member for member in members if _unwrap(member) is not type(None)]
    for member in models:
        tags = [meta.tag for meta in getattr(member, "__metadata__", ()) if isinstance(meta, Tag)]
        inner = _unwrap(member)
        if tag in tags or getattr(inner, "__name__", None) == tag:
            return member
        if isinstance(inner, type) and issubclass(inner, BaseModel):
            for field in inner.model_fields.values():
                if get_origin(field.annotation) is Literal and tag in get_args(field.annotation):
                    return member
    return models[0] if len(models) == 1 else None


def _follows_bad_executor(path: KeyPath, failed_paths: set[KeyPath]) -> bool:
    if "executor_config" not in path:
        return False
    parent = path[: path.index("executor_config")]
    return (*parent, "executor") in failed_paths


def _data_path(loc: tuple[int | str, ...], data: Any) -> KeyPath:
    """Follow `loc` through the data, skipping the union tags pydantic adds that are not real keys."""
    path: list[str | int] = []
    node = data
    for part in loc:
        if isinstance(node, dict) and part in node:  # noqa: SIM114 - the types differ for mypy
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        elif _is_tag(part):
            continue
        else:
            node = None  # past what the user wrote: a missing key (or an unknown one, reported as such)
        path.append(part)
    return tuple(path)


def _is_tag(part: int | str) -> bool:
    return isinstance(part, str) and (part in UNION_TAGS or part in _TYPE_TAGS or "[" in part)


_TYPE_TAGS = frozenset({"str", "int", "float", "bool", "none", "dict", "list"})


# The tags our discriminated unions put into error locations.
UNION_TAGS = frozenset(
    {
        "gateway",
        "openclaw",
        "human",
        "webhook",
        "notify",
        "pipeline",  # executor_config
        "shell",  # deterministic checks (with webhook, human)
        "step",
        "parallel",
        "fan_out",  # steps
        "operators",
        "value",  # trigger.match conditions
        "stdio",
        "http",  # mcp_servers
    }
)
_LITERAL_CHOICES = re.compile(r"'([^']*)'")


def _message(err: Any) -> str:
    kind = err["type"]
    ctx = err.get("ctx") or {}
    message = str(err["msg"])
    if kind == "missing":
        return "required key is missing"
    if kind == "literal_error":
        choices = _LITERAL_CHOICES.findall(str(ctx.get("expected", "")))
        given = err.get("input")
        hint = did_you_mean(given, choices) if isinstance(given, str) else ""
        return f"got {given!r}{hint}; expected one of: {', '.join(choices)}"
    if kind == "union_tag_invalid":
        choices = _LITERAL_CHOICES.findall(str(ctx.get("expected_tags", "")))
        given = str(ctx.get("tag", ""))
        return f"got {given!r}{did_you_mean(given, choices)}; expected one of: {', '.join(choices)}"
    if kind == "value_error":
        return message.removeprefix("Value error, ")
    return message[:1].lower() + message[1:] if message else kind
