"""Checks a pipeline can only fail at run time otherwise: template syntax and executor availability."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from vectorstep.domain.execution import ExecutorCapabilities
from vectorstep.errors import ConfigError, Problem
from vectorstep.notify.routing import channel_settings
from vectorstep.spec.pipelines import LoadedPipeline
from vectorstep.spec.service import NotificationChannelsSpec
from vectorstep.spec.settings import Settings
from vectorstep.spec.source import KeyPath, format_key_path
from vectorstep.spec.steps import FanOutItem, ParallelItem, StepSpec, TrustedWorkSpec
from vectorstep.templating import TemplateKind, syntax_error

# Keys that hold a bare expression rather than a template.
EXPRESSION_KEYS = frozenset({"when", "expect", "over"})
PLAIN_KEYS = frozenset({"name", "description", "executor", "stage", "cron", "regex"})


def preflight(
    loaded: LoadedPipeline,
    executors: Mapping[str, ExecutorCapabilities],
    channels: NotificationChannelsSpec | None = None,
) -> list[Problem]:
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
    for path, work in _work(loaded):
        problems.extend(_executor_problems(loaded, path, work, executors))
        if len(path) > 2:  # inside a parallel group or a fan-out
            problems.extend(_people_in_branches(loaded, path, work))
    problems.extend(_notification_problems(loaded, channels or NotificationChannelsSpec()))
    return problems


def template_kinds(loaded: LoadedPipeline) -> Iterator[tuple[str, TemplateKind]]:
    """Every template and expression of the pipeline, with how it is rendered (to compile it ahead)."""
    data = loaded.spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    for path, text, is_expression in _templates(data, ()):
        if is_expression:
            yield text, "expression"
        elif path[-1] in ("prompt_template", "template"):  # a step's prompt; a notification's message
            yield text, "prompt"
        elif path[-1] == "run" and "deterministic_checks" in path:  # a shell check's command line
            yield text, "shell"
        else:
            yield text, "strict"


def settings_problems(settings: Settings) -> list[Problem]:
    """Service settings that would only fail at run time: approval routes whose channel is incomplete."""
    routes = settings.spec.human_approval
    problems = []
    for key, route in [(("human_approval", "default"), routes.default)] + [
        (("human_approval", "teams", team), route) for team, route in routes.teams.items()
    ]:
        try:
            channel_settings(route.channel, getattr(route, route.channel, None), {}, "")
        except ConfigError as error:
            problems.append(settings.problem((*key, "channel"), error.problems[0].message))
    return problems


def _people_in_branches(loaded: LoadedPipeline, path: KeyPath, work: TrustedWorkSpec) -> list[Problem]:
    """A branch waiting on a person would hold its whole group; ask before or after the group."""
    keys: list[KeyPath] = [("executor",)] if work.executor == "human" else []
    keys += [
        ("deterministic_checks", index)
        for index, check in enumerate(work.deterministic_checks)
        if check.type == "human"
    ]
    problems = []
    for key in keys:
        location = loaded.source.locate((*path, *key))
        problems.append(
            Problem(
                location.file,
                location.line,
                format_key_path((*path, *key)),
                "a person cannot be asked inside a parallel group or a fan-out; ask in a step before or after it",
            )
        )
    return problems


def _notification_problems(loaded: LoadedPipeline, channels: NotificationChannelsSpec) -> list[Problem]:
    problems = []
    for action, targets in loaded.spec.notifications.items():
        for index, target in enumerate(targets):
            try:
                channel_settings(target.channel, getattr(channels, target.channel, None), target.config, "")
            except ConfigError as error:
                location = loaded.source.locate(("notifications", action, index))
                reason = error.problems[0].message
                problems.append(
                    Problem(
                        location.file,
                        location.line,
                        format_key_path(("notifications", action, index)),
                        f"{reason} (set it under `notifications.{target.channel}` in vectorstep.yaml, "
                        "or in this target's `config`)",
                    )
                )
    return problems


def _executor_problems(
    loaded: LoadedPipeline, path: KeyPath, work: TrustedWorkSpec, executors: Mapping[str, ExecutorCapabilities]
) -> list[Problem]:
    def problem(key: KeyPath, message: str) -> Problem:
        location = loaded.source.locate((*path, *key))
        return Problem(location.file, location.line, format_key_path((*path, *key)), message)

    capabilities = executors.get(work.executor)
    if capabilities is None:
        available = ", ".join(sorted(executors))
        return [
            problem(("executor",), f"executor {work.executor!r} cannot run in this version (available: {available})")
        ]
    found: list[Problem] = []
    if not capabilities.trace:
        if work.grounding is not None and work.grounding.enforce:
            found.append(
                problem(
                    ("grounding", "enforce"),
                    f"executor {work.executor!r} records no trace, so there is no evidence to ground against; "
                    "enforced grounding would never act (remove `enforce`, or use an agent executor)",
                )
            )
        if work.verifier is not None and work.verifier.mode == "critic":
            found.append(
                problem(
                    ("verifier", "mode"),
                    f"a critic reviews the primary's tool transcript, but executor {work.executor!r} records no trace; "
                    "use `mode: independent`",
                )
            )
    for role, block in (("verifier", work.verifier), ("grounding", work.grounding)):
        if block is not None and block.executor != "local" and block.executor not in executors:
            found.append(problem((role, "executor"), f"executor {block.executor!r} cannot run in this version"))
    return found


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


def _work(loaded: LoadedPipeline) -> Iterator[tuple[KeyPath, TrustedWorkSpec]]:
    for index, item in enumerate(loaded.spec.steps):
        if isinstance(item, StepSpec):
            yield ("steps", index), item
        elif isinstance(item, ParallelItem):
            for position, branch in enumerate(item.parallel.steps):
                yield ("steps", index, "parallel", "steps", position), branch
        elif isinstance(item, FanOutItem):
            yield ("steps", index, "fan_out"), item.fan_out
