"""Choosing what a judge sees of a long tool result: its head plus the lines the answer speaks of.

Head truncation hides evidence that sits past the cut (the decisive log line, the events at the
end of `kubectl describe`, the spike at the end of a range query). The answer says where to look:
its concrete statements (numbers, percentages, durations, times, ids, names, quoted messages) and
its distinctive words. We score every line of the whole result by the answer's terms it holds,
weighting each term by how rare it is in that result (a service name on every line says nothing),
and spend the budget on the best lines, in document order, with each gap marked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Concrete tokens an answer states and a tool result would contain verbatim.
_TOKEN = re.compile(
    r"""
      \d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?          # timestamps
    | \b\d{1,2}:\d{2}(?::\d{2})?\b                          # times of day
    | \b\d+(?:\.\d+)?(?:%|[A-Za-z]+\b)                      # quantities: 4.2%, 1.89s, 512Mi, 3x
    | [A-Za-z0-9]+(?:[-_./:][A-Za-z0-9]+)+                 # ids, names, versions, paths, hosts
    | \b[0-9a-f]{6,40}\b                                    # hashes
    | \d{1,3}(?:,\d{3})+(?:\.\d+)?%?                         # 1,204,331
    | \d+(?:\.\d+)?%?                                       # numbers and percentages
    | \b[A-Za-z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*\b         # CamelCase and MixedCase names
    """,
    re.VERBOSE,
)
_QUOTED = re.compile(r"[\"'`\u201c\u2018]([^\"'`\u201d\u2019\n]{6,120})[\"'`\u201d\u2019]")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]{3,}")
# Unsigned: in "1040-1455" the dash is a range, not a sign. 1,204,331 is one number.
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?")
_STOPWORDS = frozenset(
    [
        "that",
        "this",
        "with",
        "from",
        "have",
        "been",
        "were",
        "which",
        "their",
        "there",
        "about",
        "after",
        "before",
        "into",
        "than",
        "then",
        "they",
        "them",
        "when",
        "what",
        "while",
        "where",
        "also",
        "only",
        "over",
        "under",
        "more",
        "most",
        "some",
        "such",
        "very",
        "each",
        "both",
        "because",
        "since",
        "until",
        "during",
        "against",
        "between",
        "through",
        "would",
        "could",
        "should",
        "shows",
        "showed",
        "show",
        "seen",
        "every",
        "other",
        "these",
        "those",
        "does",
        "done",
        "being",
        "same",
        "than",
        "your",
        "ours",
        "just",
        "like",
        "still",
        "even",
        "much",
        "many",
        "well",
        "back",
        "down",
    ]
)
MARKER = "… [{omitted:,} characters omitted] …"
HEAD_SHARE = 0.2
SEGMENT_MAX = 400  # long lines (minified JSON) are cut into pieces of about a log line's size
STRONG, WEAK = 3.0, 1.0  # a concrete token says more than a word


@dataclass(frozen=True)
class Term:
    text: str
    weight: float
    number: float | None = None  # numeric terms also match a rounded or truncated figure
    decimals: int = 0


def answer_terms(answer: Mapping[str, Any]) -> list[str]:
    """The concrete things an answer states, most specific first (used to spot what was cut)."""
    return [term.text for term in _answer_terms(answer) if term.weight == STRONG]


def _answer_terms(answer: Mapping[str, Any]) -> list[Term]:
    terms: dict[str, Term] = {}
    for text in _strings(answer):
        for quoted in _QUOTED.finditer(text):
            terms.setdefault(quoted.group(1).strip().lower(), Term(quoted.group(1).strip().lower(), STRONG))
        for match in _TOKEN.finditer(text):
            for term in _variants(match.group(0).strip(".,;:")):
                terms.setdefault(term.text, term)
        for word in _WORD.findall(text):
            lowered = word.lower()
            if lowered not in _STOPWORDS:
                terms.setdefault(lowered, Term(lowered, WEAK))
    return sorted(terms.values(), key=lambda term: len(term.text), reverse=True)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key not in ("raw_response", "artifacts", "confidence"):
                yield from _strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _strings(item)


def _variants(token: str) -> list[Term]:
    """The forms a token takes in a tool result.

    An id or a name is matched as written. A quantity is matched by its number, also when the
    result holds more digits (`4.87` for `4.871936`): `41.8/s` is `41.8`, `1.89s` is `1.89`, and a
    percentage is also a fraction (`4.2%` is `0.042`).
    """
    terms: list[Term] = []
    if not token[:1].isdigit() or token.count(".") > 1 or ":" in token:  # names, ids, IPs, versions, times
        return [Term(token.lower(), STRONG)] if _specific(token) else []
    percent = token.endswith("%")
    for written in _NUMBER.findall(token):
        number = written.replace(",", "")
        decimals = len(number.split(".")[1]) if "." in number else 0
        if _specific(number) or percent:
            terms.append(Term(number, STRONG, float(number), decimals))
        if percent:
            terms.append(Term(f"{float(number) / 100:g}", STRONG, float(number) / 100, decimals + 2))
    if not terms and _specific(token) and not _NUMBER.fullmatch(token):
        terms.append(Term(token.lower(), STRONG))  # 512Mi, 2024-07-09T16:03
    return terms


def _specific(term: str) -> bool:
    """Short or round numbers match everywhere and point nowhere."""
    plain = term.rstrip("%")
    if _NUMBER.fullmatch(plain):
        digits = sum(character.isdigit() for character in plain)
        return digits >= 3 or "." in plain or term.endswith("%")
    return len(term) >= 3


@dataclass(frozen=True)
class Window:
    start: int
    end: int


def select_windows(text: str, terms: list[str] | Mapping[str, Any], budget: int) -> str:
    """`text` within `budget` characters: the head, then the lines that best match the answer, in order.

    `terms` is the answer itself (preferred) or a list of literal terms. Lines are picked greedily by
    the weight of the answer's terms they add that no picked line shows yet, per character, so
    every fact gets a line before any fact gets a second one.
    """
    if len(text) <= budget:
        return text
    scored_terms = _answer_terms(terms) if isinstance(terms, Mapping) else [Term(t.lower(), STRONG) for t in terms]
    share = max(1, int(budget * HEAD_SHARE))
    line_end = _line_end(text, share)
    chosen = [Window(0, line_end if line_end <= 2 * share else share)]
    candidates = _candidates(text, scored_terms, chosen[0].end)
    covered: set[str] = set()
    while candidates:
        gain, segment, found = max(
            ((_gain(found, covered, weights) / (s.end - s.start + 40), s, found) for s, found, weights in candidates),
            key=lambda item: (item[0], -item[1].start),
        )
        candidates = [candidate for candidate in candidates if candidate[0] != segment]
        if gain <= 0:
            break
        attempt = _merge([*chosen, segment])
        if _rendered_length(text, attempt) <= budget:
            chosen, covered = attempt, covered | found
    return _render(text, chosen, budget)


def _gain(found: set[str], covered: set[str], weights: Mapping[str, float]) -> float:
    return sum(weights[name] * (1.0 if name not in covered else REPEAT) for name in found)


REPEAT = 0.15  # what a term is worth in a second line


def _segments(text: str) -> list[Window]:
    segments: list[Window] = []
    start = 0
    for line in text.split("\n"):
        end = start + len(line)
        position = start
        while end - position > SEGMENT_MAX:  # cut a long line at a separator near SEGMENT_MAX
            cut = max(text.rfind(separator, position, position + SEGMENT_MAX) for separator in (",", "}", " "))
            cut = cut + 1 if cut > position else position + SEGMENT_MAX
            segments.append(Window(position, cut))
            position = cut
        segments.append(Window(position, end))
        start = end + 1
    return [segment for segment in segments if segment.end > segment.start]


def _candidates(text: str, terms: list[Term], head_end: int) -> list[tuple[Window, set[str], dict[str, float]]]:
    """Segments after the head that hold answer terms, each term weighted by its rarity in this result."""
    segments = [segment for segment in _segments(text) if segment.start >= head_end]
    lowered = text.lower()
    holds = [{term.text for term in terms if _holds(lowered[s.start : s.end], term)} for s in segments]
    frequency: dict[str, int] = {}
    for found in holds:
        for name in found:
            frequency[name] = frequency.get(name, 0) + 1
    base = {term.text: term.weight for term in terms}
    weights = {name: base[name] * math.log(1 + len(segments) / count) for name, count in frequency.items()}
    return [(segment, found, weights) for segment, found in zip(segments, holds, strict=True) if found]


def mentions(text: str, term: str) -> bool:
    """Whether `text` states `term` (an answer term): a number as a number, anything else as written."""
    plain = term.replace(",", "")
    if _NUMBER.fullmatch(plain):
        decimals = len(plain.split(".")[1]) if "." in plain else 0
        return _holds(text.lower(), Term(plain, STRONG, float(plain), decimals))
    return term.lower() in text.lower()


def _holds(segment: str, term: Term) -> bool:
    if term.number is None:
        return term.text in segment
    for match in _NUMBER.finditer(segment):
        start, end = match.span()
        if (start and segment[start - 1].isalnum()) or (end < len(segment) and segment[end].isalpha()):
            continue  # part of an id or a hash, not a figure
        found = match.group(0).replace(",", "")
        if found == term.text or (term.decimals and found.startswith(term.text)):
            return True
        if "." in found and round(float(found), term.decimals) == round(term.number, term.decimals):
            return True
    return False


def _line_end(text: str, position: int) -> int:
    end = text.find("\n", position)
    return len(text) if end == -1 else end


def _merge(windows: list[Window]) -> list[Window]:
    merged: list[Window] = []
    for window in sorted(windows, key=lambda w: w.start):
        if merged and window.start <= merged[-1].end + 1:
            merged[-1] = Window(merged[-1].start, max(merged[-1].end, window.end))
        else:
            merged.append(window)
    return merged


def _pieces(text: str, windows: list[Window]) -> list[str]:
    pieces: list[str] = []
    position = 0
    for window in windows:
        if window.start > position:
            pieces.append(MARKER.format(omitted=window.start - position))
        pieces.append(text[window.start : window.end])
        position = window.end
    if position < len(text):
        pieces.append(MARKER.format(omitted=len(text) - position))
    return pieces


def _rendered_length(text: str, windows: list[Window]) -> int:
    return sum(len(piece) + 1 for piece in _pieces(text, windows)) - 1


def _render(text: str, windows: list[Window], budget: int) -> str:
    rendered = "\n".join(_pieces(text, windows))
    return rendered if len(rendered) <= budget else head_only(text, budget)


def head_only(text: str, budget: int) -> str:
    """Plain head truncation, with a marker saying how much was cut."""
    if len(text) <= budget:
        return text
    marker = MARKER.format(omitted=len(text))  # the longest the marker can be
    keep = max(0, budget - len(marker) - 1)
    return f"{text[:keep]}\n{MARKER.format(omitted=len(text) - keep)}"
