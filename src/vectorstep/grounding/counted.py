"""What a count in a statement counts: "25 open incidents", "restarted 3 times", "six nodes".

A small number matches everywhere and says nothing alone; the words beside it in the statement are
what it is looked up by in a tool result (`counts`).
"""

from __future__ import annotations

import re

from vectorstep.grounding.words import STOPWORDS, stem

# A count written in words ("six nodes", "zero available replicas"); not "one", which is mostly a pronoun.
_SPELLED_WORDS = """zero _ two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen
sixteen seventeen eighteen nineteen twenty"""
SPELLED = {word: number for number, word in enumerate(_SPELLED_WORDS.split()) if word != "_"}
SPELLED_COUNT = re.compile(rf"\b(?:{'|'.join(SPELLED)})\b", re.I)
_PRECEDING = re.compile(
    r"(?P<verb>[A-Za-z][\w-]{2,})(?:\s+(?:a|an|the|to|at|of|up|by|on|in|for|with|only|about|least|most))*\s+$"
)
_TIMES = frozenset({"times", "time", "x"})


def counted_words(text: str, start: int, end: int) -> tuple[str, ...]:
    """What the count at `start:end` counts: the words after it ("25 open incidents") and the one
    before ("opens up to 10 connections"); for "N times", what happened that often ("restarted 3 times")."""
    following = re.match(r"\s+(?P<words>(?:[A-Za-z][\w()-]*\s*){1,3})", text[end : end + 40])
    preceding = _PRECEDING.search(text, max(0, start - 30), start)
    before = [stem(preceding.group("verb"))] if preceding and preceding.group("verb").lower() not in STOPWORDS else []
    if following is None:
        return tuple(before)
    words = [word.lower().removesuffix("(s)") for word in following.group("words").split()]
    if words[0] in _TIMES:
        return tuple(dict.fromkeys(["time", *before]))
    stems = [stem(word) for word in words if word not in STOPWORDS and len(word) > 2]
    return tuple(dict.fromkeys(stems + before))
