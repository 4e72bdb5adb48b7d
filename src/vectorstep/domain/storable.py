"""Values as any database and any text output can keep them: hostile text escaped, visibly, never dropped;
values that came from `${VAR}` masked (docs/security.md)."""

from __future__ import annotations

import math
import re
from typing import Any

from vectorstep.domain.secrets import SECRETS

# What no database keeps as text: NUL (PostgreSQL refuses it) and lone surrogates (not UTF-8 at all).
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _escaped(text: str, pattern: re.Pattern[str]) -> str:
    """`text` with each character `pattern` finds written as its `\\uXXXX` escape."""
    if pattern.search(text) is None:
        return text
    return pattern.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def keepable_text(text: str) -> str:
    """`text` with what a database cannot keep escaped, nothing masked: a name or an id a request asks for."""
    return _escaped(text, _UNSTORABLE)


def storable_text(text: str) -> str:
    """`text`, secrets masked, with what a database cannot keep written as its escape (`\\u0000`), visibly."""
    return _escaped(SECRETS.mask(text), _UNSTORABLE)


def storable(value: Any) -> Any:
    """A JSON value any database keeps: strings escaped as above, NaN and ±Infinity as strings.

    Agent answers and alert payloads are hostile: what they hold is stored as written where it can
    be, and escaped where it cannot, so a run's record is never lost to its own contents.
    """
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {storable_text(str(key)): storable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [storable(item) for item in value]
    return value


def without_surrogates(value: Any) -> Any:
    """`value` with every lone surrogate written as its escape: not a character, so no text may carry it.

    An agent's JSON may hold one (`"\\udcff"`); left in, it breaks every encoder it reaches.
    """
    if isinstance(value, str):
        return _escaped(value, LONE_SURROGATE)
    if isinstance(value, dict):
        return {without_surrogates(key): without_surrogates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [without_surrogates(item) for item in value]
    return value
