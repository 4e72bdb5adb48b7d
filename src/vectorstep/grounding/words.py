"""Words as the grounding code compares them: without their endings, and without the ones that say nothing.

`restarted` finds `restartCount`, `sessions` finds `session`, `pods` finds `pod`; "the", "about"
or "reached" tell no record from another.
"""

from __future__ import annotations

import functools

_SUFFIXES = ("ing", "ed", "es", "s", "e")
_STOPWORD_TEXT = """
the and for are was were has had have not but its this that with from into than then they them
when what which while where also only over under more most some such very each both because
since until during against between through would could should shows showed show seen every other
these those does done being same your ours just like still even much many well back down after
before about there their been all any per via out off our who how why yes can may will one two
three four five six seven eight nine ten first last now new see set get got use using value
values around nearly approximately roughly reached rose fell dropped increased decreased started
began stopped ended peaked hit shown
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A word without its ending, so that `restarted` finds `restartCount` and `sessions` finds `session`."""
    stemmed = word.lower()
    for suffix in _SUFFIXES:
        if stemmed.endswith(suffix) and len(stemmed) - len(suffix) >= 4:
            stemmed = stemmed[: -len(suffix)]
    if len(stemmed) == 4 and stemmed.endswith("s") and stemmed[-2] not in "siu":
        stemmed = stemmed[:-1]  # a short plural: pods, jobs, keys, IPs (not bus, this, plus)
    return stemmed
