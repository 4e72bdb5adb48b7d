"""Regular expressions that authors write (`trigger.match` `regex`, `tool_policy` `input_regex`).

They are matched against alert payloads and agents' tool arguments, which are hostile: a pattern
like `(a+)+$` would backtrack for minutes on a crafted value and stall the service. So they run on
RE2, in time linear in the text; what RE2 cannot do in linear time (backreferences, lookaround) is
refused when the file loads, with the reason.
"""

from __future__ import annotations

import functools
from typing import Protocol

import re2

MAX_PATTERN_MEMORY = 8 << 20  # bytes RE2 may use for one compiled pattern


class Pattern(Protocol):
    def search(self, text: str) -> object | None: ...


def _options() -> object:
    options = re2.Options()
    options.log_errors = False  # a bad pattern is reported once, as a located problem, not logged
    options.max_mem = MAX_PATTERN_MEMORY
    return options


_OPTIONS = _options()


class PatternError(ValueError):
    pass


@functools.lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Pattern:
    """The compiled pattern; PatternError says why one cannot run in linear time."""
    try:
        compiled: Pattern = re2.compile(pattern, options=_OPTIONS)
    except re2.error as error:
        reason = error.args[0].decode() if error.args and isinstance(error.args[0], bytes) else str(error)
        raise PatternError(
            f"invalid regular expression: {reason} (patterns run in linear time: no backreferences or lookaround)"
        ) from None
    return compiled
