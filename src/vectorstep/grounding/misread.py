"""Whether a value found where a claim's anchors are is the value the claim speaks of.

A figure or a time is often printed several times in one record under different names: `hard`
and `used` quotas, `minReplicas` and `maxReplicas`, `lastTransitionTime` and `renewalTime`, the
`from` and the `to` of a change. Finding the value is not enough: its name where it is printed
must not be another field's that the claim names instead, nor carry the opposite qualifier of the
claim's ("maximum" for a value named `min`). Each answer says why, in words the trust report shows.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Sequence

from vectorstep.grounding.anchors import Anchor
from vectorstep.grounding.evidence import ToolResult
from vectorstep.grounding.keys import field_name, value_label
from vectorstep.grounding.qualifiers import contrast
from vectorstep.grounding.shapes import Node, Span
from vectorstep.grounding.words import STOPWORDS, stem

# How many places of one anchor are looked at to tell which field it is the value of, and how many
# places where a claim's anchors are together are tried before the claim is refused.
MAX_PLACES = 50
_WORDS = re.compile(r"[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z])")


def misread(claim: str, result: ToolResult, anchors: Sequence[Anchor], group: Node) -> str | None:
    """Why the anchors found in `group` are not the values `claim` speaks of, if they are not."""
    return _other_field(result, anchors, claim_words(claim), group) or _contrasted(claim, result, anchors, group)


def _other_field(result: ToolResult, anchors: Sequence[Anchor], words: frozenset[str], group: Node) -> str | None:
    """Why a figure found in `group` is the value of a parallel field the claim does not mean, if it is.

    `"hard": {"limits.memory": "96Gi"}` beside `"used": {"limits.memory": "93Gi"}`: "96Gi used"
    names the heading of the other field and not this one's, so it means the other field.
    """
    record = group.nearest_record()
    for anchor in anchors:
        if anchor.kind == "time":
            other = _other_time(result, anchor, words, record)
            if other is not None:
                return other
        if anchor.kind != "number":
            continue
        everywhere = result.find(anchor)
        names = [field_name(result.shape, start) for start in _places(everywhere, record)]
        own = max(names, key=lambda name: len(words & name.words), default=None)
        if own is None or not own.key:
            continue
        for rival, figure, start in result.keyed_figures:
            if rival.key != own.key or _within(everywhere, start):
                continue
            if words & (rival.path - own.path) and not words & (own.path - rival.path):
                return (
                    f"`{anchor.text}` is the value of {_field(own.words)}, but the claim speaks of "
                    f"{_field(rival.words)} ({figure})"
                )
    return None


def _contrasted(claim: str, result: ToolResult, anchors: Sequence[Anchor], group: Node) -> str | None:
    """Why a value found in `group` is not the one the claim means: its name has the opposite qualifier.

    `spec_min_replicas` for "capped at 6 replicas, its maximum"; `old_master=` for "became master".
    """
    record = group.nearest_record()
    # Every word, stop words too: "first", "last", "new" and "now" are what qualifiers are made of.
    words = frozenset(stem(word) for word in _WORDS.findall(claim))
    for anchor in anchors:
        places = _places(result.find(anchor), record)
        opposed = [contrast(value_label(result.shape, start), words) for start in places]
        if places and all(opposed):
            named, said = opposed[0]  # type: ignore[misc]
            says = written(claim, [said])
            return f"`{anchor.text}` is named `{named}` where it is, but the claim says {says}"
    return None


def _other_time(result: ToolResult, anchor: Anchor, words: frozenset[str], record: Node) -> str | None:
    """A record's times have names (`lastScheduleTime`, `lastSuccessfulTime`): the claim names another."""
    found = _places(result.find(anchor), record)
    starts = result.index.moment_starts(record.start, record.end)[:MAX_PLACES]
    rivals = list({field_name(result.shape, start).key for start in starts})
    misreads = [_other_name(anchor, field_name(result.shape, start).key, rivals, words) for start in found]
    # Where the record says the time more than once ("Last Transition Time" and "renewal was
    # scheduled at"), one place that is not another field's time is enough.
    return misreads[0] if misreads and all(misreads) else None


def _other_name(anchor: Anchor, own: frozenset[str], rivals: list[frozenset[str]], words: frozenset[str]) -> str | None:
    for rival in rivals:
        # The claimed time itself, an unnamed time or one of the same name has no words of its own.
        if words & (rival - own) and not words & (own - rival):
            return f"`{anchor.text}` is the time of {_field(own)}, but the claim speaks of {_field(rival)}"
    return None


def _places(spans: Sequence[Span], record: Node) -> list[int]:
    """Where in `record` an anchor is, as far as it is worth naming each place: a figure printed a
    hundred thousand times in one record says no more about its name than its first places do."""
    first = bisect.bisect_left(spans, (record.start, -1))
    return [start for start, _ in itertools.islice(spans, first, None) if start < record.end][:MAX_PLACES]


def _within(spans: Sequence[Span], position: int) -> bool:
    """Whether `position` is inside one of `spans` (sorted, disjoint)."""
    before = bisect.bisect_right(spans, (position, math.inf)) - 1
    return before >= 0 and spans[before][0] <= position < spans[before][1]


def claim_words(claim: str) -> frozenset[str]:
    return frozenset(stem(word) for word in _WORDS.findall(claim) if len(word) > 2 and word.lower() not in STOPWORDS)


def _field(words: frozenset[str]) -> str:
    return f"`{' '.join(sorted(words))}`" if words else "an unnamed value"


def written(claim: str, words: Sequence[Anchor | str]) -> str:
    """Up to three of the claim's words and names as it wrote them (`certificate`, not the stem `certificat`)."""
    written = []
    for word in words[:3]:
        text = word if isinstance(word, str) else word.text
        match = re.search(rf"\b{re.escape(text)}\w*", claim, re.I)
        written.append(f"`{match.group(0) if match else text}`")
    return ", ".join(written)
