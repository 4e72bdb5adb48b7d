"""Which pipeline an event runs (SYSTEM.md §12): an explicit name, else the first whose `trigger.match` holds.

Pipelines are tried by `priority` (higher first), then by file name. A condition's key is a
top-level field of the normalised context (`severity`, `summary`, ...), `labels.<name>` or
`metadata.<path>`; every condition must hold. A pipeline without `trigger.match` runs only when an
event names it (or by hand, or on its schedule): it never catches events by accident.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from vectorstep.domain.context import NormalisedContext
from vectorstep.spec.patterns import compile_pattern
from vectorstep.spec.pipeline import MatchOperators
from vectorstep.spec.pipelines import LoadedPipeline

_MISSING = object()


def resolve(context: NormalisedContext, pipelines: Iterable[LoadedPipeline]) -> LoadedPipeline | None:
    candidates = sorted(pipelines, key=lambda loaded: (-loaded.spec.priority, loaded.path.name))
    if context.pipeline:
        return next((loaded for loaded in candidates if loaded.spec.name == context.pipeline), None)
    data = context.as_dict()
    return next(
        (
            loaded
            for loaded in candidates
            if loaded.spec.trigger.match is not None and matches(loaded.spec.trigger.match, data)
        ),
        None,
    )


def matches(conditions: Mapping[str, Any], data: Mapping[str, Any]) -> bool:
    return all(_holds(_lookup(data, key), condition) for key, condition in conditions.items())


def _lookup(data: Mapping[str, Any], key: str) -> Any:
    value: Any = data
    for part in key.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return _MISSING
        value = value[part]
    return value


def _holds(value: Any, condition: Any) -> bool:
    if not isinstance(condition, MatchOperators):
        return value is not _MISSING and _same(value, condition)
    return all(_operator(_name(field), value, getattr(condition, field)) for field in condition.model_fields_set)


def _operator(name: str, value: Any, operand: Any) -> bool:
    present = value is not _MISSING
    if name in ("eq", "ne"):
        equal = present and _same(value, operand)
        return equal if name == "eq" else not equal
    if name in ("in", "not_in"):
        found = present and any(_same(value, option) for option in operand)
        return found if name == "in" else not found
    if name == "regex":
        return present and compile_pattern(operand).search(str(value)) is not None
    number = _number(value) if present else None
    if number is None:
        return False  # a comparison with something that is not a number does not hold
    compared: bool = {
        "gt": number > operand,
        "gte": number >= operand,
        "lt": number < operand,
        "lte": number <= operand,
    }[name]
    return compared


def _name(field: str) -> str:
    return "in" if field == "in_" else field


def _same(value: Any, expected: Any) -> bool:
    """Labels are strings: `severity: 3` in YAML matches the label "3"."""
    return value == expected or str(value) == str(expected)


def _number(value: Any) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None
