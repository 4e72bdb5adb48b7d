"""Where a tool result states an anchor: every match, read the way the tool wrote it.

A result's figures are read once with every reading they allow (a bare `0.0421` may be a
fraction of 4.21%; `1500` after `duration_ms` is 1.5 s; `536870912` is 512Mi), its moments once
on one clock, and its hex tokens once; names, pairs and quotes are looked up with boundaries, so
`/v1/cart` is not found inside `/v1/cart/items` while `checkout-api` is found in its pods' names
(`checkout-api-7f9c6d-x2kqp`).
"""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from vectorstep.grounding.anchors import NUMBER_PATTERN, UNIT_PATTERN, Anchor, Reading, readings_of
from vectorstep.grounding.timestamps import Moment, find_moments, same_moment
from vectorstep.grounding.words import stem

Span = tuple[int, int]
_TEXT_NUMBER = re.compile(  # not the parts of a clock (09:41:06) or a date (2024-08-14)
    rf"(?<![\w.])(?<!\d:)(?P<number>{NUMBER_PATTERN})(?P<exponent>[eE][-+]?\d+)?(?:\s?(?P<unit>{UNIT_PATTERN}))?(?![\w]|:\d)"
)
# Go and Kubernetes durations: 9m42s, 1h2m, 5m0s, 2m30.5s (two parts or more; "5s" is read below)
_GO_DURATION = re.compile(
    r"(?<![\w.])(?=\d+[hm]\d)(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m(?!s))?(?:(?P<s>\d+(?:\.\d+)?)s)?(?![\w])"
)
_INTERVAL = re.compile(  # 00:41:12.5, not the clock of a date-time (2024-06-11 13:41:07)
    r"(?<![\d:])(?<!\d-\d\d[ T])(?P<h>\d{2}):(?P<m>[0-5]\d):(?P<s>[0-5]\d(?:\.\d+)?)(?![\d:]|\s?(?:Z|UTC|[+-]\d))"
)
_EVENT_COUNT = re.compile(r"\(x(\d+) over ")
# Prometheus recording rules name the window an operation ran over at the end of their name
# (`level:metric:operations`): `job:http_errors:ratio_rate5m`, `sli:requests:increase1h`.
_RULE_WINDOW = re.compile(r"(?:rate|increase|avg|ratio|burnrate)_?(?P<number>\d{1,6})(?P<unit>[smhdw])(?![\w.-])")
_WINDOW_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# JVM memory flags write a size glued to the flag, in one letter: -Xmx8g, -Xss512k, -XX:MaxMetaspaceSize=256m.
_JVM_SIZE = re.compile(r"(?:-Xm[snx]|-Xss|-XX:\w*Size=)(?P<number>\d{1,15})(?P<unit>[kKmMgGtT])(?![\w])")
_HEX = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{7,64}(?![0-9A-Za-z])")
_WORDS = re.compile(r"[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z])|(?<![\w.])[1-5]xx\b")
# A cron schedule's step: */15 * * * * runs every 15 minutes, 0 */6 * * * every 6 hours.
_CRON_STEP = re.compile(r"(?<![\w*/])(?:\*/(?P<minutes>\d{1,2}) \*|\d{1,2} \*/(?P<hours>\d{1,2})) \* \* \*")
# The key a bare figure is the value of may name its unit: durationMs, timeoutSeconds, size_bytes.
_KEY_BEFORE = re.compile(r"(?P<key>[A-Za-z_]{2,40})[\"']?\s*[:=]\s*[\"']?$")
_KEY_UNITS = (
    (re.compile(r"(?:ms|millis|milliseconds|msec)$", re.I), "seconds", 1e-3),
    (re.compile(r"(?:seconds|secs?)$", re.I), "seconds", 1.0),
    (re.compile(r"bytes$", re.I), "bytes", 1.0),
)
_CELL_UNIT = re.compile(r"[ \t]*\|[ \t]*(?P<unit>ms|s|min|h|d|B|kB|8kB|MB|GB)[ \t]*(?=\||$)", re.M)
_CELL_UNITS = {"kB": 1024.0, "8kB": 8192.0, "MB": 1024.0**2, "GB": 1024.0**3}  # PostgreSQL's sizes are binary
# A pod or replica set takes its deployment's name plus generated suffixes.
_GENERATED_SUFFIX = re.compile(r"(?:-[a-z0-9]{5,10})?-[a-z0-9]{5}\b|-\d+\b")
_PREFIX_LENGTH = re.compile(r"/\d{1,3}(?![\w./-])")
_RELATIVE_EPSILON = 1e-12
MAX_KEYED = 50
# What tools call the field an answer names otherwise: a Helm "release 41" is its REVISION 41.
_SAME_FIELD = {
    "release": "revision",
    "rev": "revision",
    "pr": "pull",
    "restarts": "restart[\\s_-]?count",
    "history": "id",  # Argo CD's history 16 is the entry whose id is 16
}
MAX_HEADER_DISTANCE = 400


@dataclass(frozen=True)
class _Figure:
    start: int
    end: int
    readings: tuple[tuple[str, float], ...]
    bare: bool  # written without a unit
    measured: bool = False  # with decimals: a measurement, which an answer rounds ("about 94 seconds")


class ResultIndex:
    """One tool result, indexed for finding anchors in it."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lower = text.lower()
        self._by_family: dict[str, tuple[list[float], list[_Figure]]] | None = None
        self._moments: list[Moment] | None = None
        self._hex: list[tuple[int, int, str]] | None = None
        self._words: dict[str, list[int]] | None = None
        # By the whole anchor, not its key: "3.1%" and "about 3.1%" share a key but not their readings.
        self._found: dict[Anchor, list[Span]] = {}

    def find(self, anchor: Anchor) -> list[Span]:
        found = self._found.get(anchor)
        if found is None:
            found = self._found[anchor] = self._lookup(anchor)
        return found

    def _lookup(self, anchor: Anchor) -> list[Span]:
        lookups = {
            "number": self._numbers,
            "time": self._times,
            "hash": self._hashes,
            "keyed": self._keyed,
            "pair": self._pair,
            "quote": self._quote,
            "word": self._word,
        }
        return lookups.get(anchor.kind, self._names)(anchor)

    def _times(self, anchor: Anchor) -> list[Span]:
        if self._moments is None:
            self._moments = find_moments(self.text)
        claimed = anchor.moment
        return [(found.start, found.end) for found in self._moments if claimed and same_moment(claimed, found)]

    def moment_starts(self, start: int, end: int) -> list[int]:
        """Where the moments between `start` and `end` begin."""
        if self._moments is None:
            self._moments = find_moments(self.text)
        return [moment.start for moment in self._moments if start <= moment.start < end]

    def _pair(self, anchor: Anchor) -> list[Span]:
        key, value = anchor.text.split("=", 1)
        pattern = rf"(?<![\w]){re.escape(key)}[\"']?\s*[:=]\s*[\"']?{re.escape(value)}(?![\w]|\.\d)"
        return [match.span() for match in re.finditer(pattern, self.text, re.IGNORECASE)]

    def _quote(self, anchor: Anchor) -> list[Span]:
        pattern = r"\s+".join(re.escape(word) for word in anchor.text.split())
        return [match.span() for match in re.finditer(pattern, self.text, re.IGNORECASE)][:MAX_KEYED]

    def _word(self, anchor: Anchor) -> list[Span]:
        return [(start, start + len(anchor.text)) for start in self._word_positions(anchor.text)]

    def _numbers(self, anchor: Anchor) -> list[Span]:
        if self._by_family is None:
            self._by_family = _by_family(self._read_figures())
        found: set[Span] = set()
        for reading in anchor.readings:
            values, figures = self._by_family.get(reading.family, ([], []))
            low, high = _range(reading)
            for position in range(bisect.bisect_left(values, low), bisect.bisect_right(values, high)):
                figure = figures[position]
                # "30s" is not any bare 30; 4.87s and 512Mi are specific, and "about 94 seconds" is a
                # rounded measurement, so a bare 94.18262 may be it.
                if anchor.bare or not figure.bare or (reading.approximate and figure.measured):
                    found.add((figure.start, figure.end))
        return sorted(found)

    def _read_figures(self) -> list[_Figure]:
        figures = [
            _Figure(match.start(), match.end(), (("seconds", _go_seconds(match)),), False)
            for match in _GO_DURATION.finditer(self.text)
        ]
        figures += [  # how often kubectl saw an event: (x14 over 46m)
            _Figure(match.start(1), match.end(1), (("plain", float(match.group(1))),), True)
            for match in _EVENT_COUNT.finditer(self.text)
        ]
        figures += [  # 8g of -Xmx8g is 8 GiB (the JVM counts in powers of 1024)
            _Figure(match.start("number"), match.end(), (("bytes", _jvm_bytes(match)),), False)
            for match in _JVM_SIZE.finditer(self.text)
        ]
        figures += [
            _Figure(match.start(), match.end(), (("seconds", _cron_seconds(match)),), False)
            for match in _CRON_STEP.finditer(self.text)
        ]
        figures += [  # the window in a recording rule's name: job:http_errors:ratio_rate5m
            _Figure(match.start("number"), match.end(), (("seconds", _window_seconds(match)),), False)
            for match in _RULE_WINDOW.finditer(self.text)
        ]
        figures += [  # an interval as psql and kubectl print it: 00:41:12.5
            _Figure(match.start(), match.end(), (("seconds", _interval_seconds(match)),), False)
            for match in _INTERVAL.finditer(self.text)
        ]
        if self._moments is None:
            self._moments = find_moments(self.text)
        # An epoch may as well be a count (an XID age of 1190224117), so only written dates are skipped.
        moments = [(moment.start, moment.end) for moment in self._moments if not moment.text.isdigit()]
        for match in _TEXT_NUMBER.finditer(self.text):
            start = match.start()
            if start >= 2 and self.text[start - 1] == "-" and self.text[start - 2].isalnum():
                continue  # part of an id: dep-4940
            within = bisect.bisect_right(moments, (start, len(self.text))) - 1
            if within >= 0 and moments[within][0] <= start < moments[within][1]:
                continue  # the day of a date (Sat, 07 Dec 2024): a time, not a figure
            written = match.group("number").replace(",", "")
            value = float(written + (match.group("exponent") or ""))
            unit = match.group("unit")
            if unit:
                readings = tuple((reading.family, reading.value) for reading in readings_of(value, 0, unit))
                if not any(family in ("seconds", "percent") for family, _ in readings):
                    readings = (*readings, ("plain", value))  # 1.2k requests; not 6m (six minutes) for "6 replicas"
                figures.append(_Figure(start, match.end(), readings, False))
                continue
            hinted = self._key_unit(start, value) or self._cell_unit(match.end(), value)
            if hinted is not None:  # as good as a written unit
                figures.append(_Figure(start, match.end(), (hinted, ("plain", value)), False))
                continue
            readings = (("plain", value), ("percent", value), ("percent", value * 100), ("seconds", value))
            readings = (*readings, ("bytes", value), ("written", value))
            figures.append(_Figure(start, match.end(), readings, True, measured="." in written))
        return figures

    def _key_unit(self, start: int, value: float) -> tuple[str, float] | None:
        key = _KEY_BEFORE.search(self.text, max(0, start - 44), start)
        if key is None:
            return None
        for pattern, family, scale in _KEY_UNITS:
            if pattern.search(key.group("key")):
                return family, value * scale
        return None

    def _cell_unit(self, end: int, value: float) -> tuple[str, float] | None:
        """A table may give a value's unit a column of its own (`pg_settings`: `30000 | ms`)."""
        cell = _CELL_UNIT.match(self.text, end)
        if cell is None:
            return None
        unit = cell.group("unit")
        scale = _CELL_UNITS.get(unit)
        if scale is not None:
            return "bytes", value * scale
        return next((reading.family, reading.value) for reading in readings_of(value, 0, unit))

    def _keyed(self, anchor: Anchor) -> list[Span]:
        """The number as the value of a field named like its keyword: after it on its line, or in its column."""
        keyword, number = anchor.text.rsplit(" ", 1)
        spelled = r"[\s_-]?".join(re.escape(stem(word)) for word in keyword.split())
        name = f"(?:{spelled}|{_SAME_FIELD[keyword]})" if keyword in _SAME_FIELD else spelled
        # `revision: 37`, `REVISION 37`, `#37`, and a pull request's address (`/pull/1482`)
        before = re.compile(rf"(?<![a-z]){name}\w*[\"']?(?:\s*[:=#/]\s*|\s+)[\"']?$", re.I)
        found = []
        for match in re.finditer(rf"(?<![\w.]){number}(?![\w]|\.\d)", self.text):
            start = match.start()
            line_start = self.text.rfind("\n", 0, start) + 1
            if before.search(self.text, max(line_start, start - 40), start) or self.in_column(name, start):
                found.append(match.span())
        return found[:MAX_KEYED]

    def in_column(self, name: str, start: int) -> bool:
        """Whether the table cell at `start` sits under a header column named like `name` (a pattern)."""
        line_start = self.text.rfind("\n", 0, start) + 1
        header_pattern = re.compile(rf"(?<![a-z]){name}", re.I)
        end = self.text.find("\n", start)
        row = self.text[line_start : end if end != -1 else len(self.text)]
        position = line_start - 1
        for _ in range(MAX_HEADER_DISTANCE):
            if position <= 0:
                return False
            previous = self.text.rfind("\n", 0, position) + 1
            line = self.text[previous:position]
            if header_pattern.search(line) and len(_columns(line)) >= 2:
                column = _column_of(row, start - line_start, line)
                for index, (low, high) in enumerate(_columns(line)):
                    if header_pattern.search(line, low, high):
                        return index == column
                return False
            position = previous - 1
        return False

    def _hashes(self, anchor: Anchor) -> list[Span]:
        written = anchor.text.lower()
        if self._hex is None:
            self._hex = [(match.start(), match.end(), match.group(0)) for match in _HEX.finditer(self.lower)]
        return [
            (start, end)
            for start, end, token in self._hex
            if token.startswith(written) or (len(token) >= 7 and written.startswith(token))
        ]

    def _names(self, anchor: Anchor) -> list[Span]:
        written = anchor.text.lower()
        found: list[Span] = []
        start = self.lower.find(written)
        while start != -1 and len(found) < 200:
            end = start + len(written)
            if self._bounded(start, end, dotted="." in written):
                found.append((start, end))
            start = self.lower.find(written, start + 1)
        return found

    def _bounded(self, start: int, end: int, *, dotted: bool = False) -> bool:
        """Whether a name found at `start` is the whole name there, not part of a longer one.

        A host is found in its qualified name (`ip-10-1-2-3` in `ip-10-1-2-3.eu-west-1.compute.internal`)
        and a deployment in its pods' names, but a dotted name is not found in a longer dotted name:
        the queue `notifications.email` is not `notifications.email.retry`.
        """
        text = self.lower
        if start and (text[start - 1].isalnum() or text[start - 1] == "_"):
            return False
        if dotted and end + 1 < len(text) and text[end] == "." and text[end + 1].isalnum():
            return False
        if end >= len(text) or not (text[end].isalnum() or text[end] == "_"):
            if _PREFIX_LENGTH.match(text, end):
                return True  # an address and its prefix length: 192.168.50.14/24
            if end + 1 < len(text) and text[end] in "-/" and text[end + 1].isalnum():
                return bool(_GENERATED_SUFFIX.match(text, end))
            return True
        return False

    def _word_positions(self, word: str) -> list[int]:
        if self._words is None:
            self._words = {}
            for match in _WORDS.finditer(self.text):  # restartCount: restart, count
                self._words.setdefault(stem(match.group(0)), []).append(match.start())
        return self._words.get(word, [])[:200]


def _columns(line: str) -> list[Span]:
    """The columns of a table line: split by `|`, tabs or runs of two or more spaces."""
    if "|" in line:
        cuts = [index for index, character in enumerate(line) if character == "|"]
        bounds = [-1, *cuts, len(line)]
        return [(low + 1, high) for low, high in itertools.pairwise(bounds)]
    return [match.span() for match in re.finditer(r"\S+(?: \S+)*", line)]


def header_cell(header: str, row: str, offset: int) -> str:
    """The header column's name over the cell at `offset` of `row` (`RESTARTS`, `confl_snapshot`)."""
    columns = _columns(header)
    column = _column_of(row, offset, header)
    if not 0 <= column < len(columns):
        return ""
    low, high = columns[column]
    return header[low:high].strip()


def _column_of(row: str, offset: int, header: str) -> int:
    """The header column a cell sits under: by its `|`s, else by where the header's columns start."""
    if "|" in row:
        return row.count("|", 0, offset)
    starts = [low for low, _ in _columns(header)]
    # Cells start under their column's name; a right-aligned number may start a little before it.
    return bisect.bisect_right(starts, offset + 2) - 1


def _cron_seconds(match: re.Match[str]) -> float:
    minutes = match.group("minutes")
    return int(minutes) * 60.0 if minutes else int(match.group("hours")) * 3600.0


def _window_seconds(match: re.Match[str]) -> float:
    return int(match.group("number")) * _WINDOW_UNITS[match.group("unit")]


def _interval_seconds(match: re.Match[str]) -> float:
    return int(match.group("h")) * 3600 + int(match.group("m")) * 60 + float(match.group("s"))


def _jvm_bytes(match: re.Match[str]) -> float:
    return int(match.group("number")) * 1024.0 ** ("kmgt".index(match.group("unit").lower()) + 1)


def _go_seconds(match: re.Match[str]) -> float:
    hours, minutes, seconds = (float(match.group(name) or 0) for name in ("h", "m", "s"))
    return hours * 3600 + minutes * 60 + seconds


def _range(claimed: Reading) -> tuple[float, float]:
    """The values a written figure stands for: within its tolerance if approximate, else rounded
    (4.87 for 4.866) or cut (4.87 for 4.879), within one step of its last digit."""
    epsilon = max(abs(claimed.value), 1.0) * _RELATIVE_EPSILON  # float noise, not tolerance
    if claimed.approximate or not claimed.tolerance:
        return claimed.value - claimed.tolerance - epsilon, claimed.value + claimed.tolerance + epsilon
    # The step above is excluded: 4.88 is not "4.87".
    return claimed.value - claimed.tolerance / 2 - epsilon, claimed.value + claimed.tolerance * (1 - 1e-9)


def _by_family(figures: list[_Figure]) -> dict[str, tuple[list[float], list[_Figure]]]:
    """Every reading of every figure, sorted by value within its family, for range look-ups."""
    readings: dict[str, list[tuple[float, int, _Figure]]] = {}
    for number, figure in enumerate(figures):
        for family, value in figure.readings:
            readings.setdefault(family, []).append((value, number, figure))
    table = {}
    for family, entries in readings.items():
        entries.sort()  # by value, then by place: the place is unique, so figures are never compared
        table[family] = ([value for value, _, _ in entries], [figure for _, _, figure in entries])
    return table
