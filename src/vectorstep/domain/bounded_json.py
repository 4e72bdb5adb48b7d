"""JSON from outside (webhook bodies, gateway frames) read within bounds: no NaN or Infinity, limited nesting."""

from __future__ import annotations

import json
from typing import Any

MAX_JSON_DEPTH = 64  # objects and arrays within each other


class UnboundedJSON(ValueError):
    """Text that is not JSON this service reads; the message says why."""


def parse_bounded_json(text: str | bytes) -> Any:
    try:
        value = json.loads(text, parse_constant=_not_json)
    except UnicodeDecodeError:
        raise UnboundedJSON("the body is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise UnboundedJSON(f"the body is not JSON: {error.msg} at line {error.lineno}, column {error.colno}") from None
    except RecursionError:
        raise UnboundedJSON(f"the body nests objects and arrays deeper than {MAX_JSON_DEPTH}") from None
    except ValueError as error:  # an integer of thousands of digits, NaN, Infinity
        raise UnboundedJSON(f"the body is not JSON this service accepts: {error}") from None
    if json_depth(value) > MAX_JSON_DEPTH:
        raise UnboundedJSON(f"the body nests objects and arrays deeper than {MAX_JSON_DEPTH}")
    return value


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def json_depth(value: Any) -> int:
    """How deep objects and arrays sit within each other (walked without recursion)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            if depth > MAX_JSON_DEPTH:
                return depth
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest
