"""Reading a user's YAML file into plain data, remembering the file and line of every key.

The rest of `spec/` validates plain data; this module is the only place that knows about YAML
nodes. Every value is paired with a `Location` through a `SourceMap`, so that a problem found
later (a missing key, an unknown executor, an unset `${VAR}`) names file, line and key path.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Collection, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from vectorstep.domain.bounded_json import MAX_VALUES
from vectorstep.domain.secrets import SECRETS
from vectorstep.errors import ConfigError, Problem

KeyPath = tuple[str | int, ...]
# A file is read within bounds: aliases (`*name`) may repeat values, but the whole document may not
# expand beyond MAX_VALUES (a few hundred bytes of nested aliases can mean billions), as a payload may not.
MAX_DEPTH = 64  # collections within collections, in flow style ([ { ) or by indentation
MAX_INDENT = 256
_FLOW = re.compile(r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\n]|\'\')*\'|#[^\n]*|[\[\]{}]')
_INDENT = re.compile(r"^[ \t]*", re.M)


@dataclass(frozen=True)
class Location:
    file: str
    line: int | None


@dataclass
class SourceMap:
    """Where each key path of a document came from (several files once a step library is merged)."""

    default: Location
    locations: dict[KeyPath, Location] = field(default_factory=dict)

    def locate(self, path: KeyPath) -> Location:
        """The location of `path`, or of its nearest ancestor that has one."""
        for end in range(len(path), -1, -1):
            found = self.locations.get(path[:end])
            if found is not None:
                return found
        return self.default

    def graft(self, prefix: KeyPath, other: SourceMap, other_prefix: KeyPath = ()) -> None:
        """Take `other`'s locations under `other_prefix` and file them under `prefix`, keeping ours."""
        cut = len(other_prefix)
        for path, location in other.locations.items():
            if path[:cut] == other_prefix:
                self.locations.setdefault(prefix + path[cut:], location)


def format_key_path(path: KeyPath) -> str:
    """`('steps', 1, 'executor_config', 'agent')` → `steps[1].executor_config.agent`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else part
    return text


def display_path(path: Path) -> str:
    """A path as the user would type it: relative to the working directory when inside it."""
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


_ENV_REFERENCE = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class EnvironmentNames(Mapping[str, str]):
    """The environment as far as which names are set, never their values (`${VAR}` reads `<VAR>`)."""

    def __getitem__(self, name: str) -> str:
        if name not in os.environ:
            raise KeyError(name)
        return f"<{name}>"

    def __iter__(self) -> Iterator[str]:
        return iter(os.environ)

    def __len__(self) -> int:
        return len(os.environ)


def expand_env(text: str, environ: Mapping[str, str]) -> tuple[str, list[str]]:
    """Substitute `${VAR}` and `${VAR:-default}`; `$${` stays a literal `${`.

    Returns the text and the names of variables that are unset and have no default. A value taken
    from the environment is remembered as a secret (docs/security.md), a default is not.
    """
    missing: list[str] = []

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        name, default = match.group(1), match.group(2)
        value = environ.get(name)
        if value is not None and (value != "" or default is None):
            if not isinstance(environ, EnvironmentNames):
                SECRETS.remember(name, value)
            return value
        if default is not None:
            return default
        missing.append(name)
        return ""

    return _ENV_REFERENCE.sub(substitute, text), missing


@dataclass
class Document:
    """A YAML file turned into plain Python data, with the location of every key."""

    data: Any
    source: SourceMap
    path: Path


def load_document(
    path: Path,
    *,
    environ: Mapping[str, str] | None = None,
    text: str | None = None,
    only: Collection[str] | None = None,
) -> Document:
    """Read `path` (or `text`, shown as `path`), expand `${VAR}` and return plain data with locations.

    With `only`, a top-level mapping keeps just those keys: what a caller never reads is neither
    expanded nor checked (a variable set only where the service runs need not be set for `runs list`).
    """
    shown = display_path(path)
    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ConfigError.single(shown, "file not found") from None
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError.single(shown, f"cannot read file: {error}") from None
    too_deep = _too_deep(text)
    if too_deep is not None:
        raise ConfigError.single(shown, f"invalid YAML: {too_deep[1]}", line=too_deep[0])
    yaml = YAML(typ="rt")
    try:
        node = yaml.load(text)
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        line = mark.line + 1 if mark is not None else None
        message = error.problem or error.context or "invalid YAML"
        raise ConfigError.single(shown, f"invalid YAML: {message}", line=line) from None
    except YAMLError as error:
        raise ConfigError.single(shown, f"invalid YAML: {error}") from None
    except RecursionError:
        raise ConfigError.single(shown, "invalid YAML: values are nested too deeply") from None
    source = SourceMap(default=Location(shown, 1))
    problems: list[Problem] = []
    # `${VECTORSTEP_PYTHON}` is the interpreter running VectorStep: a tool server or a check
    # written in Python can be started with the same installed packages.
    environ = {"VECTORSTEP_PYTHON": sys.executable, **(os.environ if environ is None else environ)}
    converter = _Converter(shown, source, environ, problems)
    _keep_only(node, only)
    try:
        data = converter.convert(node, (), 1)
    except _TooLarge as too_large:
        raise ConfigError.single(shown, str(too_large), line=too_large.line) from None
    if problems:
        raise ConfigError(problems)
    return Document(data=data, source=source, path=path)


def _keep_only(node: Any, only: Collection[str] | None) -> None:
    if only is not None and isinstance(node, MutableMapping):
        for key in [key for key in node if str(key) not in only]:
            del node[key]


def _too_deep(text: str) -> tuple[int, str] | None:
    """The line and the reason when values nest beyond the limits, found before parsing (the parser recurses)."""
    depth = 0
    for found in _FLOW.finditer(text):
        mark = found.group()
        if mark in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return text.count("\n", 0, found.start()) + 1, f"values are nested more than {MAX_DEPTH} deep"
        elif mark in "]}":
            depth = max(0, depth - 1)
    for found in _INDENT.finditer(text):
        if len(found.group()) > MAX_INDENT:
            line = text.count("\n", 0, found.start()) + 1
            return line, f"a line is indented more than {MAX_INDENT} characters"
    return None


def _plain_scalar(node: Any) -> Any:
    """ruamel's scalar subclasses (ScalarFloat, ...) as plain Python values."""
    if isinstance(node, bool) or node is None:
        return node
    if isinstance(node, int):
        return int(node)
    if isinstance(node, float):
        return float(node)
    return node


class _TooLarge(Exception):
    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


@dataclass
class _Converter:
    file: str
    source: SourceMap
    environ: Mapping[str, str]
    problems: list[Problem]
    converted: int = 0

    def convert(self, node: Any, path: KeyPath, line: int) -> Any:
        self.converted += 1
        if self.converted > MAX_VALUES:
            raise _TooLarge(
                f"the file expands to more than {MAX_VALUES:,} values: YAML aliases (*name) repeat too much",
                line,
            )
        self.source.locations.setdefault(path, Location(self.file, line))
        tag = getattr(getattr(node, "tag", None), "value", None)
        if tag is not None or isinstance(node, bytes):
            self.problems.append(
                Problem(self.file, line, format_key_path(path), f"YAML tags ({tag or '!!binary'}) are not allowed here")
            )
            return None
        if isinstance(node, Mapping):
            return self._mapping(node, path)
        if isinstance(node, list):
            return self._sequence(node, path, line)
        if isinstance(node, str):
            return self._string(str(node), path, line)
        return _plain_scalar(node)

    def _mapping(self, node: Mapping[Any, Any], path: KeyPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        lc = getattr(node, "lc", None)
        for key, value in node.items():
            name = str(key)
            key_line = self._key_line(lc, key, path)
            child = (*path, name)
            self.source.locations[child] = Location(self.file, key_line)
            result[name] = self.convert(value, child, key_line)
        return result

    def _key_line(self, lc: Any, key: Any, path: KeyPath) -> int:
        try:
            return int(lc.key(key)[0]) + 1
        except (AttributeError, KeyError, TypeError):  # a key merged in with `<<: *anchor`: where the mapping is
            return self.source.locate(path).line or 1

    def _sequence(self, node: list[Any], path: KeyPath, line: int) -> list[Any]:
        lc = getattr(node, "lc", None)
        items: list[Any] = []
        for index, value in enumerate(node):
            item_line = lc.item(index)[0] + 1 if lc is not None else line
            child = (*path, index)
            self.source.locations[child] = Location(self.file, item_line)
            items.append(self.convert(value, child, item_line))
        return items

    def _string(self, text: str, path: KeyPath, line: int) -> str:
        if "${" not in text:
            return text
        expanded, missing = expand_env(text, self.environ)
        for name in missing:
            self.problems.append(
                Problem(
                    file=self.file,
                    line=line,
                    key_path=format_key_path(path),
                    message=f"environment variable ${{{name}}} is not set and has no default "
                    f"(write ${{{name}:-default}} to give one)",
                )
            )
        return expanded
