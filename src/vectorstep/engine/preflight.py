"""Checks a pipeline can only fail at run time otherwise: template syntax and executor availability."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from vectorstep.errors import Problem
from vectorstep.spec.pipelines import LoadedPipeline
from vectorstep.spec.source import KeyPath, format_key_path
from vectorstep.spec.steps import FanOutItem, ParallelItem, StepSpec
from vectorstep.templating import syntax_error

# Keys that hold a bare expression rather than a template.
EXPRESSION_KEYS = frozenset({"when", "expect", "over"})
PLAIN_KEYS = frozenset({"name", "description", "executor", "stage", "cron", "regex"})


def preflight(loaded: LoadedPipeline, executors: list[str]) -> list[Problem]:
    problems: list[Problem] = []
    data = loaded.spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    for path, text, is_expression in _templates(data, ()):
        error = syntax_error(text, expression=is_expression)
        if error is not None:
            location = loaded.source.locate(path)
            kind = "expression" if is_expression else "template"
            problems.append(
                Problem(location.file, location.line, format_key_path(path), f"{kind} syntax error: {error}")
            )
    for path, executor in _executors(loaded):
        if executor not in executors:
            location = loaded.source.locate(path)
            problems.append(
                Problem(
                    location.file,
                    location.line,
                    format_key_path(path),
                    f"executor {executor!r} cannot run in this version (available: {', '.join(executors)})",
                )
            )
    return problems


def _templates(value: Any, path: KeyPath) -> Iterator[tuple[KeyPath, str, bool]]:
    """Every string of the pipeline that Jinja will see, with whether it is a bare expression."""
    if isinstance(value, dict):
        items: Iterator[tuple[str | int, Any]] = iter(value.items())
    elif isinstance(value, list):
        items = iter(enumerate(value))
    else:
        return
    for key, item in items:
        if isinstance(item, str):
            if key in EXPRESSION_KEYS:
                yield (*path, key), item, True
            elif "{" in item and key not in PLAIN_KEYS:
                yield (*path, key), item, False
        else:
            yield from _templates(item, (*path, key))


def _executors(loaded: LoadedPipeline) -> Iterator[tuple[KeyPath, str]]:
    for index, item in enumerate(loaded.spec.steps):
        if isinstance(item, StepSpec):
            yield ("steps", index, "executor"), item.executor
        elif isinstance(item, ParallelItem):
            for position, branch in enumerate(item.parallel.steps):
                yield ("steps", index, "parallel", "steps", position, "executor"), branch.executor
        elif isinstance(item, FanOutItem):
            yield ("steps", index, "fan_out", "executor"), item.fan_out.executor
