"""JSON from outside (webhook bodies, gateway frames) read within bounds: no NaN or Infinity, limited nesting."""

from __future__ import annotations

import json
import sys
from typing import Any

MAX_JSON_DEPTH = 64  # objects and arrays within each other
MAX_VALUES = 100_000  # values in one document, each repeat of a YAML alias counted


class UnboundedJSON(ValueError):
    """Text that is not JSON this service reads; the message says why (`line`: where, when known)."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def parse_bounded_json(text: str | bytes, what: str = "the body") -> Any:
    """`text` read as JSON within bounds; `what` names it in the error (the body, a payload file)."""
    try:
        value = json.loads(text, parse_constant=_not_json)
    except UnicodeDecodeError:
        raise UnboundedJSON(f"{what} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        message = f"{what} is not JSON: {error.msg} at line {error.lineno}, column {error.colno}"
        raise UnboundedJSON(message, error.lineno) from None
    except RecursionError:
        raise UnboundedJSON(f"{what} nests objects and arrays deeper than {MAX_JSON_DEPTH}") from None
    except ValueError as error:  # an integer of thousands of digits, NaN, Infinity
        too_long = "integer string conversion" in str(error)
        reason = f"it holds an integer of more than {sys.get_int_max_str_digits():,} digits" if too_long else error
        raise UnboundedJSON(f"{what} is not JSON this service accepts: {reason}") from None
    check_bounds(value, what, max_values=None)  # JSON holds no aliases: its size bounds its values
    return value


def check_bounds(value: Any, what: str, *, max_values: int | None = MAX_VALUES) -> None:
    """`value` nests objects and arrays at most MAX_JSON_DEPTH deep and, read by a parser with
    aliases (YAML), expands to at most `max_values` values (a few hundred bytes of nested aliases
    can mean billions). Walked without recursion, stopping at the first limit passed."""
    seen, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        seen += 1
        if max_values is not None and seen > max_values:
            repeated = "YAML aliases (*name) repeat too much"
            raise UnboundedJSON(f"{what} expands to more than {max_values:,} values: {repeated}")
        if isinstance(item, dict | list):
            if depth > MAX_JSON_DEPTH:
                raise UnboundedJSON(f"{what} nests objects and arrays deeper than {MAX_JSON_DEPTH}")
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")
