"""Whether a small number in a tool result is the count a claim states, by what it counts.

"PagerDuty has 25 open incidents" is not backed by the `"limit": 25` of the API's paging, nor
"restarted 3 times" by a `3` in a pod's age: a bare small number means something only with what it
counts beside it. A count is taken where the result names what the claim counts (or a kin word)
right after it (`6 node(s) had`), in the field, series or column it is the value of (`Restart
Count:  3`, `"restarts": 3`, `kube_hpa_status_current_replicas`, `RESTARTS`), or as a total
(`"total": 9`); "N times" is also an event's `(x9 over 45m)`.
"""

from __future__ import annotations

import re

from vectorstep.grounding.finding import ResultIndex, Span
from vectorstep.grounding.keys import value_label
from vectorstep.grounding.kin import kin_of
from vectorstep.grounding.shapes import Shape

CONTEXT_CHARS = 64
# Each place costs a look at its field, so only so many places of one count are looked at (a hostile
# answer may count a hundred things in a result of thousands of small numbers).
MAX_COUNTED_PLACES = 200
MIN_WORD = 3
_TOTALS = frozenset({"total", "count", "length", "size", "num", "number"})


def counts(index: ResultIndex, shape: Shape, span: Span, counted: tuple[str, ...]) -> bool:
    words = [kin for word in counted for kin in kin_of(word) if len(kin) >= MIN_WORD]
    if not words:
        return True
    start, end = span
    text = index.lower
    if "time" in counted and text[max(0, start - 2) : start] == "(x":
        return True
    line_end = text.find("\n", end)
    after = text[end : min(end + CONTEXT_CHARS, len(text) if line_end == -1 else line_end)]
    name = "|".join(re.escape(word) for word in words)
    if re.match(rf"[\s\"':=]*(?:\w+\s+)?(?:{name})", after):
        return True
    label = value_label(shape, start)
    named = [word for word in label if len(word) >= MIN_WORD]
    if label & _TOTALS or any(word.startswith(kin) or kin.startswith(word) for word in named for kin in words):
        return True
    return index.in_column(f"(?:{name})", start)
