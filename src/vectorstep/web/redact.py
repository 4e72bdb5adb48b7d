"""Secrets never reach a page or an API answer: values under secret-looking keys are masked, and so is
every value that came from `${VAR}` (docs/security.md)."""

from __future__ import annotations

import re
from typing import Any

from vectorstep.domain.secrets import SECRETS

MASK = "••••••"
_SECRET_KEY = re.compile(r"(authorization|token|secret|password|passwd|api[_-]?key|cookie|credential)", re.IGNORECASE)
_HEADERS = re.compile(r"headers?$", re.IGNORECASE)


def redacted(value: Any, *, key: str = "") -> Any:
    """A copy of `value` with secret-looking keys masked; every header value is masked."""
    if isinstance(value, dict):
        if _HEADERS.search(key):
            return {name: MASK for name in value}
        return {name: MASK if _is_secret(name, item) else redacted(item, key=name) for name, item in value.items()}
    if isinstance(value, list):
        return [redacted(item, key=key) for item in value]
    if isinstance(value, str):
        return SECRETS.mask(value)  # a value that came from ${VAR}, wherever it sits
    return value


def _is_secret(name: str, item: Any) -> bool:
    return bool(_SECRET_KEY.search(name)) and isinstance(item, str) and bool(item)


_SECRET_LINE = re.compile(
    r"^(?P<key>\s*-?\s*[\"']?[\w.-]*" + _SECRET_KEY.pattern + r"[\w.-]*[\"']?\s*:\s*)(?P<value>\S.*)$",
    re.IGNORECASE,
)
_NUMBER = re.compile(r"^-?[\d_.]+\s*(#.*)?$")
_REFERENCE = re.compile(r"^[\"']?(Bearer\s+)?\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}[\"']?\s*(#.*)?$")


def redacted_yaml(text: str) -> str:
    """A YAML file as written, with literal values of secret-looking keys masked (`${VAR}` references kept)."""
    lines = []
    for line in text.splitlines():
        found = _SECRET_LINE.match(line)
        value = found["value"].strip() if found else ""
        if found and not _REFERENCE.match(value) and not _NUMBER.match(value):
            lines.append(found["key"] + MASK)
        else:
            lines.append(line)
    return "\n".join(lines)
