"""The sandboxed Jinja environment: prompts, bare expressions, and values rendered for a shell.

Agent output is untrusted and is rendered into later prompts, commands and URLs, so every
template runs in Jinja's immutable sandbox. Prompts are lenient (an undefined name renders empty
and is recorded as a warning); expressions (`when:`, `expect:`) are strict (a typo is an error).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache
from typing import Any

from jinja2 import ChainableUndefined, StrictUndefined, Template, meta
from jinja2 import TemplateError as JinjaTemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from vectorstep.errors import TemplateError

_undefined_names: ContextVar[list[str] | None] = ContextVar("undefined_names", default=None)


class NamedMapping(dict[str, Any]):
    """A dict that knows its dotted name, so an undefined `steps.typo` is reported by that name."""

    def __init__(self, path: str, data: Mapping[str, Any]) -> None:
        super().__init__(data)
        self._dotted_name = path  # underscored: the sandbox keeps templates from reading it


class _RecordingUndefined(ChainableUndefined):
    """Renders as empty text and records what was missing, for the step's warnings."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = _undefined_names.get()
        if names is not None:
            names.append(self._undefined_message)


class _Environment(ImmutableSandboxedEnvironment):
    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, NamedMapping) and attribute not in obj and not hasattr(obj, attribute):
            return self._missing(obj, attribute)
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(obj, NamedMapping) and isinstance(argument, str) and argument not in obj:
            return self._missing(obj, argument)
        return super().getitem(obj, argument)

    def _missing(self, obj: NamedMapping, key: str) -> Any:
        return self.undefined(hint=f"'{obj._dotted_name}.{key}' is undefined", obj=obj, name=key)


def _to_json(value: Any, indent: int | None = None) -> str:
    """`tojson` for text, not HTML: Jinja's own escapes `<`, `>` and `&`, which garbles prompts and commands."""
    return json.dumps(value, ensure_ascii=False, indent=indent, default=str)


def _number(kind: type[int] | type[float]) -> Callable[..., Any]:
    """`| float` and `| int` that refuse what is not a number, instead of Jinja's silent 0.

    `result | float < 5` must not pass when a check's command printed an error message.
    """

    def convert(value: Any, *_ignored: Any) -> int | float:
        try:
            return kind(value)
        except (TypeError, ValueError):
            raise ValueError(f"{value!r} is not a number") from None

    return convert


def _environment(**options: Any) -> _Environment:
    environment = _Environment(autoescape=False, keep_trailing_newline=True, **options)
    environment.filters["tojson"] = _to_json
    environment.filters["float"] = _number(float)
    environment.filters["int"] = _number(int)
    return environment


_PROMPTS = _environment(undefined=_RecordingUndefined)
_STRICT = _environment(undefined=StrictUndefined)


@lru_cache(maxsize=1024)
def _prompt_template(source: str) -> Template:
    return _PROMPTS.from_string(source)


@lru_cache(maxsize=1024)
def _strict_template(source: str) -> Template:
    return _STRICT.from_string(source)


@lru_cache(maxsize=1024)
def _expression(source: str) -> Callable[..., Any]:
    return _STRICT.compile_expression(source, undefined_to_none=False)


@contextmanager
def _recording() -> Iterator[list[str]]:
    names: list[str] = []
    token = _undefined_names.set(names)
    try:
        yield names
    finally:
        _undefined_names.reset(token)


def render_prompt(source: str, context: Mapping[str, Any]) -> tuple[str, list[str]]:
    """Render leniently; returns the text and a warning per undefined name (deduplicated, in order)."""
    if "{" not in source:
        return source, []
    with _recording() as names:
        try:
            text = _prompt_template(source).render(context)
        except JinjaTemplateError as error:
            raise TemplateError(f"template cannot be rendered: {error}") from None
    return text, [f"undefined in template: {name}" for name in dict.fromkeys(names)]


def render_strict(source: str, context: Mapping[str, Any]) -> str:
    """Render a template where an undefined name is an error (URLs, headers, payloads)."""
    if "{" not in source:
        return source
    try:
        return _strict_template(source).render(context)
    except JinjaTemplateError as error:
        raise TemplateError(f"cannot render {source!r}: {error}") from None


def render_value(value: Any, context: Mapping[str, Any]) -> Any:
    """Render every string inside a JSON-like value (a webhook payload), strictly."""
    if isinstance(value, str):
        return render_strict(value, context)
    if isinstance(value, list):
        return [render_value(item, context) for item in value]
    if isinstance(value, dict):
        return {key: render_value(item, context) for key, item in value.items()}
    return value


def evaluate(expression: str, context: Mapping[str, Any]) -> Any:
    """Evaluate a bare expression (`when:`, `expect:`); an undefined name is an error."""
    try:
        return _expression(expression)(**context)
    except JinjaTemplateError as error:
        raise TemplateError(f"cannot evaluate {expression!r}: {error}") from None
    except (TypeError, ValueError, ArithmeticError, LookupError) as error:
        raise TemplateError(f"cannot evaluate {expression!r}: {type(error).__name__}: {error}") from None


def evaluate_condition(expression: str, context: Mapping[str, Any]) -> bool:
    return bool(evaluate(expression, context))


def render_for_shell(source: str, context: Mapping[str, Any]) -> str:
    """Render a shell command: every `{{ }}` value becomes one shell-quoted word.

    The author's literal text is left exactly as written; only interpolated values are quoted,
    so an agent's `; rm -rf /` is an argument, never more shell.
    """
    try:
        template = _shell_template(source)
        return template.render(context)
    except JinjaTemplateError as error:
        raise TemplateError(f"cannot render command {source!r}: {error}") from None


@lru_cache(maxsize=256)
def _shell_template(source: str) -> Template:
    return _environment(undefined=StrictUndefined, finalize=_quote_output).from_string(source)


def _quote_output(value: Any) -> str:
    return shlex.quote(value if isinstance(value, str) else str(value))


def names_in(expression: str) -> set[str]:
    """The top-level names a bare expression reads (`exit_code`, `result`, `steps`, ...)."""
    return meta.find_undeclared_variables(_STRICT.parse(f"{{{{ {expression} }}}}"))


def syntax_error(source: str, *, expression: bool = False) -> str | None:
    """The syntax error in a template or expression, or None; used to check pipelines at load."""
    try:
        if expression:
            _STRICT.compile_expression(source)
        else:
            _STRICT.parse(source)
    except JinjaTemplateError as error:
        return str(error)
    return None
