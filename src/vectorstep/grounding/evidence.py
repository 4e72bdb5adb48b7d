"""Choosing what a judge sees of a long tool result: its head plus the windows around what the answer states.

Head truncation hides evidence that sits past the cut (the decisive log line, the events at the
end of `kubectl describe`, the spike at the end of a range query). The answer's own concrete
statements — numbers, percentages, durations, times, ids, names — say where to look: we find
them in the whole result and spend the budget on the lines around them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

# Concrete tokens an answer states and a tool result would contain verbatim.
_TOKEN = re.compile(
    r"""
      \d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2})?      # timestamps
    | \b\d{1,2}:\d{2}(?::\d{2})?\b                        # times of day
    | [A-Za-z0-9]+(?:[-_./:][A-Za-z0-9]+)+               # ids, names, versions, paths, hosts
    | \b[0-9a-f]{6,40}\b                                  # hashes
    | \d+(?:[.,]\d+)?%?                                   # numbers and percentages
    | \b[A-Za-z][A-Za-z0-9]*[A-Z0-9][A-Za-z0-9]*\b       # CamelCase and MixedCase names
    """,
    re.VERBOSE,
)
_QUOTED = re.compile(r"[\"'`“‘]([^\"'`”’\n]{6,120})[\"'`”’]")  # error messages
_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?%?$")
_UNIT = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h|d|%|x|GiB|MiB|KiB|GB|MB|KB)$")
MARKER = "… [{omitted:,} characters omitted] …"
HEAD_SHARE = 0.2
LINE_MAX = 400  # a window never takes more than this of one long line


def answer_terms(answer: Mapping[str, Any]) -> list[str]:
    """The concrete things an answer states, most specific first."""
    terms: dict[str, None] = {}
    for text in _strings(answer):
        for quoted in _QUOTED.finditer(text):
            terms[quoted.group(1).strip()] = None
        for match in _TOKEN.finditer(text):
            for term in _variants(match.group(0).strip(".,;:")):
                if _specific(term):
                    terms[term] = None
    return sorted(terms, key=len, reverse=True)


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


def _variants(token: str) -> list[str]:
    """`4.2%` is also `4.2` and `0.042` in a tool result; `1.89s` is also `1.89`."""
    variants = [token]
    unit = _UNIT.match(token)
    if unit:
        number, suffix = unit.groups()
        variants.append(number)
        if suffix == "%":
            fraction = float(number) / 100
            variants.extend({f"{fraction:.{places}f}".rstrip("0") for places in (3, 4)} - {"0."})
    return variants


def _specific(term: str) -> bool:
    """Short or round numbers match everywhere and point nowhere."""
    if _NUMBER.match(term):
        digits = sum(character.isdigit() for character in term)
        return digits >= 3 or "." in term or "," in term or term.endswith("%")
    return len(term) >= 4


@dataclass(frozen=True)
class Window:
    start: int
    end: int


def select_windows(text: str, terms: list[str], budget: int) -> str:
    """`text` within `budget` characters: the head, then the lines holding the most terms, in order."""
    if len(text) <= budget:
        return text
    head_share = max(1, int(budget * HEAD_SHARE))
    line_end = _line_end(text, head_share)
    head = Window(0, line_end if line_end <= 2 * head_share else head_share)
    chosen = [head]
    covered: set[str] = {term for term in terms if term in text[: head.end]}
    for window, found in _ranked_windows(text, terms):
        new = found - covered
        if not new:
            continue
        candidate = _merge([*chosen, window])
        if _rendered_length(text, candidate) > budget:
            continue
        chosen, covered = candidate, covered | found
    return _render(text, _merge(chosen), budget)


def _ranked_windows(text: str, terms: list[str]) -> list[tuple[Window, set[str]]]:
    """One window per line that holds a term, richest first (ties: earlier first)."""
    by_line: dict[tuple[int, int], set[str]] = {}
    for term in terms:
        for match in re.finditer(rf"(?<![0-9A-Za-z]){re.escape(term)}(?![0-9A-Za-z])", text):
            start = text.rfind("\n", 0, match.start()) + 1
            end = _line_end(text, match.end())
            if end - start > LINE_MAX:  # a long line (minified JSON): centre on the hit
                start = max(start, match.start() - LINE_MAX // 2)
                end = min(end, start + LINE_MAX)
            by_line.setdefault((start, end), set()).add(term)
    ranked = sorted(by_line.items(), key=lambda item: (-len(item[1]), item[0][0]))
    return [(Window(start, end), found) for (start, end), found in ranked]


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
    return sum(len(piece) + 1 for piece in _pieces(text, windows))


def _render(text: str, windows: list[Window], budget: int) -> str:
    rendered = "\n".join(_pieces(text, windows))
    if len(rendered) <= budget:
        return rendered
    return head_only(text, budget)  # only when even the head alone does not fit


def head_only(text: str, budget: int) -> str:
    """Plain head truncation, with a marker saying how much was cut."""
    if len(text) <= budget:
        return text
    marker = MARKER.format(omitted=len(text))  # the longest the marker can be
    keep = max(0, budget - len(marker) - 1)
    return f"{text[:keep]}\n{MARKER.format(omitted=len(text) - keep)}"
