"""Moments as tools print them and as answers state them, compared on one clock.

Tool output writes time in many ways — RFC 3339, epoch seconds, milliseconds or nanoseconds,
syslog (`Jun 11 13:41:07`), nginx (`11/Jun/2024:13:41:07 +0000`), klog (`I0611 13:41:07.123`) —
and answers restate them loosely (`13:41Z`, `13:41 UTC`, `Jun 11 13:41`). Each is read into a
`Moment`: what is known of its date, its wall clock as written and, when its offset is known, its
UTC clock. Two moments agree at the precision the claim was written with.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MON = r"(?P<mon>Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
_CLOCK = r"(?P<h>[01]?\d|2[0-3]):(?P<m>[0-5]\d)(?::(?P<s>[0-5]\d)(?:[.,]\d{1,9})?)?"
_ZONE = r"(?:\s?(?P<zone>Z|UTC|GMT|[+-](?:[01]\d|2[0-3]):?[0-5]\d)\b)?"
_PATTERNS = (
    # as answers join them: 21:14 UTC on 11 September 2024; 11 Sep 2024 at 21:14
    re.compile(rf"(?<![\d:.]){_CLOCK}{_ZONE},? on (?P<d>[0-3]?\d)(?:st|nd|rd|th)? {_MON}(?:,? (?P<y>\d{{4}}))?", re.I),
    re.compile(rf"(?<![\d.:/])(?P<d>[0-3]?\d)(?:st|nd|rd|th)? {_MON}(?:,? (?P<y>\d{{4}}))?,? at {_CLOCK}{_ZONE}", re.I),
    # 2024-06-11T13:41:07.123Z, 2024-06-11 13:41, 2024/06/11 13:41:07 +02:00
    re.compile(rf"(?<!\d)(?P<y>\d{{4}})[-/](?P<mo>[01]\d)[-/](?P<d>[0-3]\d)(?:[T ]|, ?){_CLOCK}{_ZONE}", re.I),
    # 11/Jun/2024:13:41:07 +0000 (nginx, apache)
    re.compile(rf"(?<!\d)(?P<d>[0-3]?\d)/{_MON}/(?P<y>\d{{4}}):{_CLOCK}{_ZONE}", re.I),
    # Tue, 11 Jun 2024 13:41:07 GMT; 11 Jun 2024 13:41
    re.compile(rf"(?<!\d)(?P<d>[0-3]?\d) {_MON},? (?P<y>\d{{4}}),? {_CLOCK}{_ZONE}", re.I),
    # Aug  3 00:12:44 2024 GMT (openssl's notAfter, ctime): the year after the clock
    re.compile(rf"\b{_MON} {{1,2}}(?P<d>[0-3]?\d) {_CLOCK} (?P<y>\d{{4}}){_ZONE}", re.I),
    # Jun 11 13:41:07 (syslog, journald); Jun 11, 2024 13:41
    re.compile(rf"\b{_MON} {{1,2}}(?P<d>[0-3]?\d)(?:,? (?P<y>\d{{4}}))?,? {_CLOCK}{_ZONE}", re.I),
    # I0611 13:41:07.123456 (klog)
    re.compile(rf"(?<![A-Za-z0-9])[IWEF](?P<mo>[01]\d)(?P<d>[0-3]\d) {_CLOCK}"),
    # a date alone: 2024-06-11, 18 Oct, Oct 18, 18 October 2024
    re.compile(r"(?<![\d.])(?P<y>\d{4})-(?P<mo>[01]\d)-(?P<d>[0-3]\d)(?![\d:T])"),
    re.compile(rf"(?<![\d.:/])(?P<d>[0-3]?\d)(?:st|nd|rd|th)? {_MON}(?:,? (?P<y>\d{{4}}))?(?![\w:/])", re.I),
    re.compile(rf"\b{_MON} (?P<d>[0-3]?\d)(?:st|nd|rd|th)?(?:,? (?P<y>\d{{4}}))?(?![\w:/])", re.I),
    # a clock alone: 13:41, 13:41:07Z, 13:41 UTC
    re.compile(rf"(?<![\d:.]){_CLOCK}{_ZONE}(?![\d:])", re.I),
)
# Every reading below needs one of these: most statements and many results hold none.
_ANY_MOMENT = re.compile(r"\d:\d\d|\d{4}-\d\d-\d\d|\d{10}|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)", re.I)
_EPOCH = re.compile(r"(?<![\d.])(?P<n>1[0-9]{9}(?:[0-9]{3}){0,3})(?:\.(?P<f>\d+))?(?![\d])")
_EPOCH_RANGE = (datetime(2001, 9, 9, tzinfo=UTC).timestamp(), datetime(2040, 1, 1, tzinfo=UTC).timestamp())

Clock = tuple[int, int, int | None]


@dataclass(frozen=True)
class Moment:
    start: int
    end: int
    text: str
    date: tuple[int | None, int, int] | None  # (year or None, month, day) as written
    clock: Clock | None  # wall clock as written
    utc: datetime | None  # when the date, the clock and the offset are all known
    zoned: bool  # the text said which clock it is on (Z, UTC, an offset, or an epoch)

    @property
    def precision(self) -> str:
        if self.clock is None:
            return "day"
        return "minute" if self.clock[2] is None else "second"


def find_moments(text: str) -> list[Moment]:
    """Every moment written in `text`, the longest reading first where readings overlap."""
    found: list[Moment] = []
    taken = _Taken()
    if not _ANY_MOMENT.search(text):
        return found
    for pattern in _PATTERNS:
        for match in pattern.finditer(text):
            if taken.overlaps(match.start(), match.end()):
                continue
            moment = _from_match(match)
            if moment is not None:
                found.append(moment)
                taken.add(match.start(), match.end())
    for match in _EPOCH.finditer(text):
        if not taken.overlaps(match.start(), match.end()):
            moment = _from_epoch(match)
            if moment is not None:
                found.append(moment)
    return sorted(found, key=lambda moment: moment.start)


class _Taken:
    """Disjoint spans of text already read as a moment; a range query's thousands of points make a
    linear scan per match quadratic, so they are kept sorted and looked up by bisection."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        # The span starting last before `end` is the only one that can reach past `start`: spans are
        # disjoint, so their ends are in the order of their starts.
        before = bisect.bisect_left(self._starts, end) - 1
        return before >= 0 and self._ends[before] > start

    def add(self, start: int, end: int) -> None:
        at = bisect.bisect_left(self._starts, start)
        self._starts.insert(at, start)
        self._ends.insert(at, end)


def same_moment(claimed: Moment, found: Moment) -> bool:
    """Whether `found` (in a tool result) is the moment `claimed` (in an answer), at the claim's precision."""
    if claimed.date is not None and found.date is not None and not _same_date(claimed, found):
        return False
    if claimed.clock is None:
        return claimed.date is not None and found.date is not None
    clocks: list[Clock] = []
    if found.utc is not None:
        clocks.append((found.utc.hour, found.utc.minute, found.utc.second))
    if found.clock is not None and not (claimed.zoned and found.zoned and found.utc is not None):
        clocks.append(found.clock)  # an unzoned claim may give the wall clock the tool printed
    return any(_same_clock(claimed.clock, clock) for clock in clocks)


def _same_date(claimed: Moment, found: Moment) -> bool:
    if claimed.date is None or found.date is None:
        return True
    candidates = [found.date]
    if found.utc is not None:
        candidates.append((found.utc.year, found.utc.month, found.utc.day))
    year, month, day = claimed.date
    return any(
        (month, day) == (other_month, other_day) and (year is None or other_year is None or year == other_year)
        for other_year, other_month, other_day in candidates
    )


def _same_clock(claimed: Clock, found: Clock) -> bool:
    if claimed[:2] != found[:2]:
        return False
    return claimed[2] is None or found[2] is None or claimed[2] == found[2]


def _from_match(match: re.Match[str]) -> Moment | None:
    groups = match.groupdict()
    month = _month(groups)
    day = int(groups["d"]) if groups.get("d") else None
    year = int(groups["y"]) if groups.get("y") else None
    date = (year, month, day) if month is not None and day is not None else None
    if date is not None and not (1 <= date[1] <= 12 and 1 <= date[2] <= 31):
        return None
    clock: Clock | None = None
    if groups.get("h") is not None:
        clock = (int(groups["h"]), int(groups["m"]), int(groups["s"]) if groups.get("s") else None)
    zone = groups.get("zone")
    offset = _offset(zone)
    utc = None
    if date is not None and year is not None and clock is not None and offset is not None:
        try:
            local = datetime(year, date[1], date[2], clock[0], clock[1], clock[2] or 0, tzinfo=offset)
        except ValueError:
            return None
        utc = local.astimezone(UTC)
    if date is None and clock is None:
        return None
    return Moment(match.start(), match.end(), match.group(0), date, clock, utc, zone is not None)


def _month(groups: dict[str, str | None]) -> int | None:
    if groups.get("mo"):
        return int(groups["mo"] or 0)
    if groups.get("mon"):
        return MONTHS.index((groups["mon"] or "")[:3].lower()) + 1
    return None


def _offset(zone: str | None) -> timezone | None:
    """The zone a time was written in; none written is taken as UTC (tools mostly log in UTC)."""
    if zone is None or zone.upper() in ("Z", "UTC", "GMT"):
        return UTC
    sign = -1 if zone[0] == "-" else 1
    digits = zone[1:].replace(":", "")
    return timezone(sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:])))


def _from_epoch(match: re.Match[str]) -> Moment | None:
    digits = match.group("n")
    scale = {10: 1, 13: 1e3, 16: 1e6, 19: 1e9}.get(len(digits))
    if scale is None:
        return None
    seconds = int(digits) / scale
    if not _EPOCH_RANGE[0] <= seconds <= _EPOCH_RANGE[1]:
        return None
    if match.group("f") and scale == 1:
        seconds += float("0." + match.group("f"))
    utc = datetime.fromtimestamp(seconds, tz=UTC)
    clock = (utc.hour, utc.minute, utc.second)
    return Moment(match.start(), match.end(), match.group(0), (utc.year, utc.month, utc.day), clock, utc, True)
