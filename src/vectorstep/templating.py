"""The sandboxed Jinja environment: prompts, bare expressions, and values rendered for a shell.

Agent output is untrusted and is rendered into later prompts, commands and URLs, so every
template runs in Jinja's immutable sandbox. Prompts are lenient (an undefined name renders empty
and is recorded as a warning); expressions (`when:`, `expect:`) are strict (a typo is an error).
"""

from __future__ import annotations

import bisect
import json
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from contextvars import ContextVar
from functools import lru_cache
from typing import Any, Literal, TypeVar

from jinja2 import ChainableUndefined, StrictUndefined, Template, meta
from jinja2 import TemplateError as JinjaTemplateError
from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from vectorstep.errors import TemplateError

# Rendering is bounded: one template renders at most this much text, a repetition (`'x' * n`) may
# not build more, and a power (`n ** m`) may not have an exponent beyond MAX_EXPONENT.
MAX_RENDERED_CHARS = 1_000_000
MAX_EXPONENT = 1_000
# What a hostile value can make an author's template raise (`{{ steps.a.count + 1 }}` when the agent
# wrote a word): a failed render, never a crash.
_VALUE_ERRORS = (TypeError, ValueError, ArithmeticError, LookupError, RecursionError)

_Number = TypeVar("_Number", int, float)

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
    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int | float) and abs(right) > MAX_EXPONENT:
            raise SecurityError(f"an exponent of {right:g} is beyond the limit of {MAX_EXPONENT}")
        if operator == "*":
            for sequence, times in ((left, right), (right, left)):
                repeated = isinstance(sequence, str | list | tuple) and isinstance(times, int)
                if repeated and len(sequence) * times > MAX_RENDERED_CHARS:
                    raise SecurityError(f"repeating {len(sequence):,} items {times:,} times is beyond the limit")
        return super().call_binop(context, operator, left, right)

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


def _as_number(kind: Callable[[Any], _Number], value: Any) -> _Number:
    """`| float` and `| int` that refuse what is not a number, instead of Jinja's silent 0.

    `result | float < 5` must not pass when a check's command printed an error message.
    """
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"{value!r} is not a number") from None


def _strict_float(value: Any, *_ignored: Any) -> float:
    return _as_number(float, value)


def _strict_int(value: Any, *_ignored: Any) -> int:
    return _as_number(int, value)


def _environment(**options: Any) -> _Environment:
    # Environments are built at import, before a mutation test switches a mutant on, so these lines
    # are not mutated; tests/test_templating.py fails if any of them is dropped (docs/testing.md).
    environment = _Environment(autoescape=False, keep_trailing_newline=True, **options)  # pragma: no mutate
    environment.filters["tojson"] = _to_json  # pragma: no mutate
    environment.filters["float"] = _strict_float  # pragma: no mutate
    environment.filters["int"] = _strict_int  # pragma: no mutate
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
            text = _bounded(_prompt_template(source).render(context))
        except JinjaTemplateError as error:
            raise TemplateError(f"template cannot be rendered: {error}") from None
        except _VALUE_ERRORS as error:
            raise TemplateError(f"template cannot be rendered: {type(error).__name__}: {error}") from None
    return text, [f"undefined in template: {name}" for name in dict.fromkeys(names)]


def _bounded(text: str) -> str:
    if len(text) > MAX_RENDERED_CHARS:
        raise SecurityError(f"the rendered text is {len(text):,} characters; at most {MAX_RENDERED_CHARS:,}")
    return text


def render_strict(source: str, context: Mapping[str, Any]) -> str:
    """Render a template where an undefined name is an error (URLs, headers, payloads)."""
    if "{" not in source:
        return source
    try:
        return _bounded(_strict_template(source).render(context))
    except JinjaTemplateError as error:
        raise TemplateError(f"cannot render {source!r}: {error}") from None
    except _VALUE_ERRORS as error:
        raise TemplateError(f"cannot render {source!r}: {type(error).__name__}: {error}") from None


TemplateKind = Literal["prompt", "strict", "shell", "expression"]


def prepare(source: str, kind: TemplateKind) -> None:
    """Compile `source` as it will be rendered (`render_prompt`, `render_strict` or `render_value`,
    `render_for_shell`, `evaluate`), ahead of its first use: a warm-up. A syntax error is left for
    the render to report (and for the pipeline's check at load, which says where).

    Not mutated: which cache a template is compiled into changes only how soon its first render
    is (bench_model_path.py), never what any render gives (docs/testing.md)."""
    with suppress(JinjaTemplateError):  # pragma: no mutate
        if kind == "expression":  # pragma: no mutate
            _expression(source)  # pragma: no mutate
        elif kind == "prompt":  # pragma: no mutate
            _prompt_template(source)  # pragma: no mutate
        elif kind == "shell":  # pragma: no mutate
            _shell_template(source)  # pragma: no mutate
        else:
            _strict_template(source)  # pragma: no mutate


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
    except _VALUE_ERRORS as error:
        raise TemplateError(f"cannot evaluate {expression!r}: {type(error).__name__}: {error}") from None


def evaluate_condition(expression: str, context: Mapping[str, Any]) -> bool:
    return bool(evaluate(expression, context))


def render_for_shell(source: str, context: Mapping[str, Any]) -> str:
    """Render a shell command: every `{{ }}` value becomes one shell-quoted word.

    The author's literal text is left exactly as written; only interpolated values are quoted,
    so an agent's `; rm -rf /` is an argument, never more shell. A value that would start a word
    with `-` (so that the program reads it as an option: `--delete-all`) is refused, unless it is
    a number (`-5`).
    """
    values: list[str] = []
    token = _shell_values.set(values)
    try:
        rendered = _bounded(_shell_template(source).render(context))
    except JinjaTemplateError as error:
        raise TemplateError(f"cannot render command {source!r}: {error}") from None
    except _VALUE_ERRORS as error:
        raise TemplateError(f"cannot render command {source!r}: {type(error).__name__}: {error}") from None
    finally:
        _shell_values.reset(token)
    return _quoted(rendered, values)


# While a command renders, each value is set aside and a mark stands in its place: only once the
# whole command is there can we see whether a value starts a word.
_shell_values: ContextVar[list[str] | None] = ContextVar("shell_values", default=None)
_VALUE_MARK = re.compile("\x00(\\d+)\x00")
_WORD_BOUNDARY = frozenset(" \t\n;&|()<>\"'")
_NUMBER = re.compile(r"-\d+(?:\.\d+)?")
_COMMAND_START = re.compile(r"[;&|\n]")
_END_OF_OPTIONS = re.compile(r"(?:^|\s)--(?:\s|$)")


def looks_like_option(value: str) -> bool:
    """`-rf`, `--all`: read as an option where a word starts; a negative number is not."""
    return value.startswith("-") and _NUMBER.fullmatch(value) is None


def _quoted(rendered: str, values: list[str]) -> str:
    """The command with each value in its mark's place, quoted; refused where a value would be an option."""
    length = len(rendered) + sum(len(value) for value in values)
    if length > MAX_RENDERED_CHARS:
        raise TemplateError(f"the command would be {length:,} characters; at most {MAX_RENDERED_CHARS:,}")
    command_starts = [0, *(found.end() for found in _COMMAND_START.finditer(rendered))]
    option_ends = [found.start() for found in _END_OF_OPTIONS.finditer(rendered)]  # where `--` words are
    parts: list[str] = []
    done = 0
    for mark in _VALUE_MARK.finditer(rendered):
        number, at = int(mark.group(1)), mark.start()
        value = values[number]
        starts_word = at == 0 or rendered[at - 1] in _WORD_BOUNDARY
        command = command_starts[bisect.bisect_right(command_starts, at) - 1]
        after_options = bisect.bisect_left(option_ends, command) < bisect.bisect_left(option_ends, at)
        if starts_word and looks_like_option(value) and not after_options:  # `rm -- {{ path }}` is fine
            raise TemplateError(
                f"value {number + 1} of the command starts with '-' where a word starts, so the program would "
                "read it as an option; write `--` before it in `run:` if the program takes that, or check the value"
            )
        parts += [rendered[done:at], shlex.quote(value)]
        done = mark.end()
    parts.append(rendered[done:])
    return "".join(parts)


@lru_cache(maxsize=256)
def _shell_template(source: str) -> Template:
    return _environment(undefined=StrictUndefined, finalize=_set_aside).from_string(source)


def _set_aside(value: Any) -> str:
    values = _shell_values.get()
    text = value if isinstance(value, str) else str(value)
    if values is None:  # pragma: no cover - only render_for_shell renders these templates
        return shlex.quote(text)
    values.append(text)
    return f"\x00{len(values) - 1}\x00"


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
