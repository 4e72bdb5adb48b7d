"""Words that tell two values of one thing apart, and whether a claim contradicts the one it found.

Tools print the same kind of value several times under names that differ by one qualifier:
`spec.minReplicas` and `spec.maxReplicas`, `requests` and `limits`, `firstTimestamp` and
`lastTimestamp`, `old_master` and `new_master`, `local` and `global` rate limits. A claim that says
"capped at 6 replicas, its maximum" is not backed by a 6 printed as the minimum: the value is there,
but its name says the opposite of what the claim says of it.
"""

from __future__ import annotations

from collections.abc import Iterable

from vectorstep.grounding.words import stem

# Each group lists classes that exclude each other: a value named by one class is not what a claim
# naming another class (and none of the value's) speaks of.
_GROUPS_TEXT = (
    ("min minimum lowest floor", "max maximum highest capped ceiling"),
    ("old previous prior former", "new current became now still latest"),
    ("request requests requested", "limit limits"),
    ("local", "global"),
    ("first earliest", "last latest final"),
    ("hard", "used"),
    ("read reads", "write writes written"),
    ("desired target wanted", "current actual observed"),
    ("publish published produced", "deliver delivered acked consumed"),
    ("p50 median", "p90", "p95", "p99", "p999"),
    ("rx received receive inbound", "tx transmit transmitted sent outbound"),
    ("allocatable", "capacity"),
    ("free available remaining", "used usage utilised utilized"),
    ("started start began", "ended finished completed stopped"),
    ("succeeded success successful", "failed failure failing"),
    ("created opened", "resolved closed"),
)


def _classes() -> list[list[frozenset[str]]]:
    # Built at each call, not at import: a few microseconds, and a mutation test can reach it.
    return [[frozenset(stem(word) for word in members.split()) for members in group] for group in _GROUPS_TEXT]


def contrast(named: Iterable[str], claimed: Iterable[str]) -> tuple[str, str] | None:
    """The qualifier a value's name has and the opposite one the claim uses instead, if any.

    Both sides are stemmed words. "first" against `lastTimestamp` contrasts; a claim that names
    both, or neither, does not.
    """
    name_words, claim_words = frozenset(named), frozenset(claimed)
    for group in _classes():
        own = [members & name_words for members in group]
        said = [members & claim_words for members in group]
        if sum(bool(words) for words in own) != 1:
            continue  # a name with both (or none) says nothing of which one it is
        for index, found in enumerate(own):
            if not found or said[index]:
                continue
            other = next((words for position, words in enumerate(said) if position != index and words), None)
            if other:
                return min(found), min(other)
    return None
