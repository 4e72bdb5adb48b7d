"""The anchors of a statement: the concrete things it says that a tool result would have to show.

An answer's statement ("p99 of /v1/checkout/confirm reached 4.87s at 13:56Z") anchors on
numbers with their units, moments, ids and names, hashes, `key=value` pairs and quoted text.
*Hard* anchors (a figure, a time, an id with digits, a hash, a quote) must be found for the
statement to be backed; *soft* anchors (plain names and words) only tell records apart: when a
tool result mentions one, the record that backs the statement must mention it too.

A number keeps every reading its writing allows (`4.2%` is also the fraction `0.042`, `512Mi`
is 536870912 bytes, `1.5s` is 1500 ms, `1.2M` is a million or a size), and the precision it was
written with, so a rounded figure finds the full-precision one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from vectorstep.grounding.counted import SPELLED, SPELLED_COUNT, counted_words
from vectorstep.grounding.timestamps import Moment, find_moments
from vectorstep.grounding.words import STOPWORDS, stem

NUMBER_PATTERN = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
UNIT_PATTERN = (
    r"%|[KMGTP]i(?:B)?|[KMGTP]B|[kKMGTPB](?![A-Za-z])|bytes?"
    r"|ns|µs|us|usecs?|ms|msecs?|s|secs?|seconds?|m(?![A-Za-z])|mins?|minutes?|h|hrs?|hours?|d(?![A-Za-z])|days?"
    r"|x(?![A-Za-z])|(?:thousand|million|billion|bn)\b"
)
# A rate keeps the figure it is a rate of: 1.9k/s, 42 rps, 300 req/s.
RATE_PATTERN = r"(?:\s?(?:/s(?:ec)?|/min|/m|/h|per (?:second|sec|minute|min|hour)|rps|qps|req/s|ops/s|msg/s|msgs/s))"
_QUANTITY = re.compile(
    rf"(?<![\w./:-])(?P<number>{NUMBER_PATTERN})(?P<exponent>[eE][-+]?\d{{1,3}})?(?:\s?(?P<unit>{UNIT_PATTERN}))?(?P<rate>{RATE_PATTERN})?(?![\w]|\.\d)"
)
_WRITTEN_QUANTITY = re.compile(rf"(?:{NUMBER_PATTERN})(?:{UNIT_PATTERN})?{RATE_PATTERN}?")
_NAME = re.compile(
    r"/?[A-Za-z0-9]+(?:[-_./:@][A-Za-z0-9]+)+/?"
    # a token of letters and digits (a key id `q7Zt2mR9`, an interface `ens4f1`), camelCase, CamelCase
    r"|(?<![\w-])(?=[A-Za-z0-9]*\d)(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{6,}(?![\w-])"
    r"|[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*|[A-Z]{2,}[a-z]+[A-Za-z]*"
)
_HASH = re.compile(r"(?<![\w-])(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}(?![\w-])")
_PAIR = re.compile(r"(?<![\w.])(?P<key>[A-Za-z_][\w.]*[A-Za-z_])=(?P<value>[\w.%/-]*\d[\w.%/-]*\w?%?)")
_QUOTED = re.compile(r"[\"'`\u201c\u2018](?P<quote>[^\"'`\u201d\u2019\n]{6,160})[\"'`\u201d\u2019]")
_ELLIPSIS = re.compile(r"\.{3}|…")
_WORD = re.compile(r"[A-Z]?[a-z][a-z0-9]{2,}|[A-Z]{3,}(?![a-z])|(?<![\w.])[1-5]xx\b")
# A window a rate is counted over ("1.2k per 5 minutes", "in the last 10 minutes") is not a figure the
# tool printed: it is read, and looked for no further.
_WINDOW = re.compile(
    r"\b(?:per|every other|in the (?:last|past)|over the (?:last|past))\s+\d+\s?"
    r"(?:s|secs?|seconds?|m|mins?|minutes?|h|hours?)\b",
    re.I,
)
# "a 90-day validity", "the 15-minute window": a duration joined to its unit by a hyphen
_HYPHENED_DURATION = re.compile(r"(?<![\w.-])(?P<number>\d+)-(?P<unit>day|hour|minute|second)s?\b", re.I)
# 9m42s, 1h30m, 2h5m10s: one duration, not two figures
_COMPOUND_DURATION = re.compile(r"(?<![\w.])(?=\d+[hm]\d)(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+)s)?(?![\w])")
_RANGE = re.compile(
    rf"(?<![\w./:-])(?P<low>\d+(?:\.\d+)?)\s?[-–]\s?(?P<high>\d+(?:\.\d+)?)\s?(?P<unit>{UNIT_PATTERN})?(?P<rate>{RATE_PATTERN})?(?![\w])"
)
_COUNT = re.compile(r"(?<![\w.,:/-])\d{1,2}(?![\w.,:/-]\w|[\w%])")
# "revision 37", "partition 5", "exit code 137": a short number is specific once it is the value of
# a named field; it is looked up as that field's value (a key, a label, a column), not anywhere.
_KEYWORD_NUMBER = re.compile(
    r"\b(?:(?P<keyword>revision|rev|build|release|generation|history|partition|pr|pull request|incident|job|pid|port|"
    r"shard|broker|slot|id|exit code|status code|status|phase|stage|step|wave)\s?(?:#|=|:)?\s?"
    # a count's noun comes after its number ("4 replicas"): before one only as a field (`replicas: 4`)
    r"|(?P<counted>replicas|restarts?|restart count|attempts?)\s?(?:#|=|:)\s?)"
    r"(?P<number>\d{1,4})(?![\w.])",
    re.I,
)
_UNITS: dict[str, tuple[str, float]] = {
    **{unit: ("seconds", 1e-9) for unit in ("ns",)},
    **{unit: ("seconds", 1e-6) for unit in ("µs", "us", "usec", "usecs")},
    **{unit: ("seconds", 1e-3) for unit in ("ms", "msec", "msecs")},
    **{unit: ("seconds", 1.0) for unit in ("s", "sec", "secs", "second", "seconds")},
    **{unit: ("seconds", 60.0) for unit in ("m", "min", "mins", "minute", "minutes")},
    **{unit: ("seconds", 3600.0) for unit in ("h", "hr", "hrs", "hour", "hours")},
    **{unit: ("seconds", 86400.0) for unit in ("d", "day", "days")},
    **{unit: ("bytes", 1.0) for unit in ("b", "byte", "bytes")},
}
_SIZE_STEPS = "kmgtp"
# "about 430MB" for 431702016: a figure written as approximate is taken as one, within one step of
# its last significant digit (430: tens; 1.8: tenths), so "about 1.8 GiB" is not 2Gi.
_APPROXIMATE = re.compile(r"(?:about|around|roughly|approximately|approx\.?|nearly|almost|close to|~|≈)\s?$", re.I)


@dataclass(frozen=True)
class Reading:
    family: str  # plain | percent | bytes | seconds
    value: float
    tolerance: float
    approximate: bool = False  # "about 430MB": within the tolerance either way


@dataclass(frozen=True)
class Anchor:
    text: str  # as the statement wrote it
    kind: str  # number | time | hash | name | pair | keyed | quote | word
    hard: bool
    readings: tuple[Reading, ...] = ()
    # Whether a bare figure in a tool result (no unit) may be this one: yes for 4.87s, 4.2%, 1.2M,
    # 512Mi, 42/s; no for 30s or 5m, which would match every bare 30 or 5.
    bare: bool = False
    moment: Moment | None = None
    # What a small count counts ("25 open incidents", "restarted 3 times"): a bare 25 in a tool
    # result is this count only where the result names one of these words beside it.
    counted: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.text.lower()}" + (f"#{','.join(self.counted)}" if self.counted else "")


def statement_anchors(text: str) -> list[Anchor]:
    """The anchors of one statement, each once, hard ones first."""
    found = _Found()
    _read_phrases(text, found)
    for pattern, make in _EXTRACTORS:
        for match in pattern.finditer(text):
            if found.free(match.span()):
                found.keep(make(match), match.span())
    rest = found.blanked(text)
    found.keep(_counts(text, rest), None)
    for word in _WORD.findall(rest):
        stemmed = stem(word)
        if word.lower() not in STOPWORDS and stemmed not in STOPWORDS:
            found.keep([Anchor(stemmed, "word", False)], None)
    return sorted(found.anchors.values(), key=lambda anchor: not anchor.hard)


def _read_phrases(text: str, found: _Found) -> None:
    """What is read as a whole before single figures and names: quotes, rate windows, times."""
    for match in _QUOTED.finditer(text):
        # "removing node x..., pods to reschedule: y": each part of an abbreviated quote is quoted text.
        parts = (part.strip(" ,;:") for part in _ELLIPSIS.split(match.group("quote")))
        quotes = [Anchor(part, "quote", True) for part in parts if len(part) >= MIN_QUOTE_CHARS]
        found.keep(quotes, match.span(), take=True)
    for match in _WINDOW.finditer(text):
        found.keep([], match.span(), take=True)
    for match in _HYPHENED_DURATION.finditer(text):
        written = _QUANTITY.fullmatch(f"{match.group('number')} {match.group('unit')}s")
        anchor = _quantity(written) if written else None
        found.keep([anchor] if anchor else [], match.span(), take=True)
    for moment in find_moments(text):
        found.keep([Anchor(moment.text, "time", True, moment=moment)], (moment.start, moment.end))


def _counts(text: str, rest: str) -> list[Anchor]:
    """Small counts ("restarted 6 times", "six nodes"), each with what it counts; "about 42" is a
    rounded figure instead. A count tells records apart, weakly."""
    anchors = []
    for match in _COUNT.finditer(rest):
        written = match.group(0)
        if _APPROXIMATE.search(rest, max(0, match.start() - 16), match.start()):  # "about 42 per second"
            readings = approximately([Reading("plain", float(written), 1.0)], written)
            anchors.append(Anchor(written, "number", False, tuple(readings), bare=True))
            continue
        counted = counted_words(text, match.start(), match.end())
        anchors.append(
            Anchor(written, "number", False, (Reading("plain", float(written), 0.0),), True, counted=counted)
        )
    for match in SPELLED_COUNT.finditer(rest):
        value = SPELLED[match.group(0).lower()]
        counted = counted_words(text, match.start(), match.end())
        anchors.append(
            Anchor(str(value), "number", False, (Reading("plain", float(value), 0.0),), True, counted=counted)
        )
    return anchors


class _Found:
    """Anchors found so far, and the text they took (a later, weaker reading may not reuse it)."""

    def __init__(self) -> None:
        self.anchors: dict[str, Anchor] = {}
        self.taken: list[tuple[int, int]] = []

    def free(self, span: tuple[int, int]) -> bool:
        return not any(start < span[1] and span[0] < end for start, end in self.taken)

    def keep(self, anchors: list[Anchor], span: tuple[int, int] | None, *, take: bool = False) -> None:
        """Keep `anchors`; their text (or a quote's, `take`) is not read again by a weaker reading."""
        if span is not None:
            if not self.free(span):
                return
            if anchors or take:
                self.taken.append(span)
        for anchor in anchors:
            self.anchors.setdefault(anchor.key, anchor)

    def blanked(self, text: str) -> str:
        characters = list(text)
        for start, end in self.taken:
            characters[start:end] = " " * (end - start)
        return "".join(characters)


def _hash(match: re.Match[str]) -> list[Anchor]:
    return [Anchor(match.group(0), "hash", True)]


def _pair(match: re.Match[str]) -> list[Anchor]:
    return [Anchor(f"{match.group('key')}={match.group('value')}", "pair", True)]


def _keyed(match: re.Match[str]) -> list[Anchor]:
    keyword = match.group("keyword") or match.group("counted")
    return [Anchor(f"{keyword.lower()} {match.group('number')}", "keyed", True)]


def _compound_duration(match: re.Match[str]) -> list[Anchor]:
    hours, minutes, seconds = (float(match.group(name) or 0) for name in ("h", "m", "s"))
    total = hours * 3600 + minutes * 60 + seconds
    step = 1.0 if match.group("s") else 60.0
    return [Anchor(match.group(0), "number", True, (Reading("seconds", total, step),), bare=True)]


def _range(match: re.Match[str]) -> list[Anchor]:
    """`38-53 minutes`, `30–38/s`: two figures with one unit."""
    unit, rate = match.group("unit") or "", match.group("rate") or ""
    suffix = f" {unit}{rate}" if unit else rate
    if not suffix:
        return []  # "10-20" alone may be anything: a page range, a version
    anchors = []
    for number in (match.group("low"), match.group("high")):
        found = _QUANTITY.fullmatch(f"{number}{suffix}")
        anchor = _quantity(found) if found else None
        if anchor is not None:
            anchors.append(anchor)
    return anchors


def _quantity_anchor(match: re.Match[str]) -> list[Anchor]:
    anchor = _quantity(match)
    return [anchor] if anchor is not None else []


def _name_anchor(match: re.Match[str]) -> list[Anchor]:
    token = match.group(0).rstrip("/.:")
    if len(token) < MIN_NAME_CHARS or _WRITTEN_QUANTITY.fullmatch(token):  # 4.87s, 1.2M: figures, read as such
        return []
    hard = any(character.isdigit() for character in token) or "/" in token
    return [Anchor(token, "name", hard)]


def answer_statements(answer: Mapping[str, Any]) -> list[str]:
    """Every string an answer states (its fields, reasoning and extras), without bookkeeping fields."""
    return list(_strings(answer))


def _strings(value: Any, key: str | None = None) -> Iterable[str]:
    if isinstance(value, str):
        yield value if key is None else f"{key}: {value}"
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        if key is not None:
            yield f"{key}: {value}"
    elif isinstance(value, Mapping):
        for name, item in value.items():
            if name not in ("raw_response", "artifacts", "confidence", "proceed"):
                yield from _strings(item, None if name in _PLAIN_FIELDS or isinstance(item, Mapping | list) else name)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


_PLAIN_FIELDS = frozenset(
    {"summary", "next_step_context", "proceed_reason", "supports", "contradicts", "assumptions", "claim"}
)


def _quantity(match: re.Match[str]) -> Anchor | None:
    written = match.group("number").replace(",", "")
    unit = match.group("unit") or ""
    exponent = int(match.group("exponent")[1:]) if match.group("exponent") else 0
    value = float(written) * 10**exponent
    decimals = (len(written.split(".")[1]) if "." in written else 0) - exponent  # 1.99e9: steps of 1e7
    significant = len(written.replace(".", "").lstrip("0")) or 1
    if unit == "x":
        return None  # "3x": a ratio the agent computed, not something a tool printed
    readings = readings_of(value, decimals, unit)
    approximate = bool(_APPROXIMATE.search(match.string, max(0, match.start() - 16), match.start()))
    # The figure as a tool may print it in the unit written, without the unit: 1500 for "1500ms",
    # and a measurement such as 6.7599 (days) for "about 6.8 days".
    timed = _UNITS.get(unit.lower(), ("", 0.0))[0] == "seconds" and unit not in ("M", "K")
    if (
        unit
        and unit != "%"
        and ((significant >= 3 and "." not in written) or (approximate and "." in written and timed))
    ):
        readings.append(Reading("written", value, 10.0**-decimals))
    if approximate:
        readings = approximately(readings, written)
    rate = bool(match.group("rate"))
    magnitude = unit[:1] in ("k", "K", "M", "G", "T", "P") and unit not in ("ms", "min", "mins")
    if not (significant >= 3 or "." in written or unit or rate):
        return None  # "3 pods", "26 errors": short counts match everywhere and point nowhere
    bare = significant >= 3 or "." in written or rate or magnitude or unit == "%"
    return Anchor(match.group(0), "number", True, tuple(readings), bare=bare)


def approximately(readings: list[Reading], written: str) -> list[Reading]:
    """Readings of a figure written as approximate: within one step of its last significant digit,
    and never further than a tenth of it ("about 100" is 90 to 110, not 0 to 200).

    Zeros ending a whole number are not significant: "about 430" is within tens.
    """
    zeros = 0 if "." in written else len(written) - len(written.rstrip("0"))
    widen = 10.0**zeros  # "about 0" would be within 10: the bound below keeps it within one step
    return [
        Reading(r.family, r.value, min(r.tolerance * widen, max(r.tolerance, abs(r.value) * 0.1)), approximate=True)
        for r in readings
    ]


_MAGNITUDES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "bn": 1e9}


def readings_of(value: float, decimals: int, unit: str) -> list[Reading]:
    """Every canonical value the written figure may stand for, each with the tolerance of its writing."""
    step = 10.0**-decimals  # one step of the last digit written
    lowered = unit.lower()
    if lowered in _MAGNITUDES:  # "1.19 billion": a count
        scale = _MAGNITUDES[lowered]
        return [Reading("plain", value * scale, step * scale)]
    if unit == "%":
        return [Reading("percent", value, step)]
    if lowered in _UNITS and unit not in ("M", "K"):  # 5m is minutes, 1.2M a million
        family, scale = _UNITS[lowered]
        return [Reading(family, value * scale, step * scale)]
    prefix = lowered[:1]
    if prefix and prefix in _SIZE_STEPS:
        power = _SIZE_STEPS.index(prefix) + 1
        readings = [Reading("bytes", value * 1024**power, step * 1024**power)]
        if "i" not in lowered:  # KB, MB, M, k: decimal sizes, or plain counts ("1.2M messages")
            readings.append(Reading("bytes", value * 1000**power, step * 1000**power))
            if lowered in _SIZE_STEPS:
                readings.append(Reading("plain", value * 1000**power, step * 1000**power))
        return readings
    return [Reading("plain", value, step)]


MIN_QUOTE_CHARS = 6
MIN_NAME_CHARS = 3
# In this order: a reading takes its text, and later, weaker readings may not reuse it.
_EXTRACTORS: tuple[tuple[re.Pattern[str], Callable[[re.Match[str]], list[Anchor]]], ...] = (
    (_HASH, _hash),
    (_PAIR, _pair),
    (_KEYWORD_NUMBER, _keyed),
    (_COMPOUND_DURATION, _compound_duration),
    (_RANGE, _range),
    (_QUANTITY, _quantity_anchor),
    (_NAME, _name_anchor),
)
