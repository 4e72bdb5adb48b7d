"""Charts for the insights pages as SVG, drawn on the server: no script, no CDN, readable without colour.

Two kinds here: lines over time buckets and stacked bars over time buckets (the S-against-G grid is in
`scatter.py`). Series are told apart by shape,
dash and fill pattern, never by colour alone; everything is drawn in `currentColor` so the page's
own colours (light or dark) apply. Each chart carries a `<title>` and a `<desc>` that says in words
what the picture shows, for screen readers and for anyone who cannot see the chart.

Every function returns a string the caller wraps in `markupsafe.Markup`: all text that reaches the
SVG goes through `svg.escaped`, which escapes it and drops characters XML cannot hold, so a hostile
series name or bucket label cannot break the document or inject markup.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from vectorstep.web.ui.svg import coord, empty_svg, escaped, open_svg, plural, safe_id

MAX_BUCKETS = 200  # more are ignored: past this a bar or point is thinner than a pixel
MAX_SERIES = 12  # more are ignored: there are only this many distinct dashes, shapes and patterns
MAX_X_LABELS = 8  # a bucket label is ~60 px wide; more would overlap

WIDTH = 640
LEFT, RIGHT, TOP = 72, 36, 20  # room for y tick labels, for the last x label's overhang, for a limit label
PLOT_W = WIDTH - LEFT - RIGHT
PLOT_H = 200
LEGEND_COLUMNS = 3
LEGEND_ROW = 18
LEGEND_NAME_CHARS = 26  # a legend column is ~180 px; a longer name is cut, its full text kept in <title>

# One per series, all different, so a line is identified by its dash even where markers overlap.
DASHES = (
    "none",
    "6 3",
    "2 3",
    "8 3 2 3",
    "12 4",
    "1 4",
    "4 2 1 2 1 2",
    "10 3 3 3",
    "3 6",
    "14 3 2 3 2 3",
    "5 5",
    "2 2 6 2",
)
LIMIT_DASH = "8 4"  # not among DASHES: a budget line is never mistaken for a series
# One per series: filled shapes first (easiest to tell apart), then their open twins and stroke-only marks.
MARKERS = (
    "circle",
    "square",
    "triangle",
    "diamond",
    "cross",
    "circle-open",
    "square-open",
    "triangle-open",
    "diamond-open",
    "plus",
    "triangle-down",
    "triangle-down-open",
)
# Polygon markers as offsets from the point, in units of the marker's half-size.
_POLYGONS: dict[str, tuple[tuple[float, float], ...]] = {
    "square": ((-0.85, -0.85), (0.85, -0.85), (0.85, 0.85), (-0.85, 0.85)),
    "triangle": ((0.0, -1.1), (1.0, 0.75), (-1.0, 0.75)),
    "diamond": ((0.0, -1.15), (1.15, 0.0), (0.0, 1.15), (-1.15, 0.0)),
    "triangle-down": ((0.0, 1.1), (1.0, -0.75), (-1.0, -0.75)),
}
# Fill patterns for stacked bars, one per series, as the content of a 6×6 tile drawn in currentColor.
PATTERNS: tuple[tuple[str, str], ...] = (
    ("solid", '<rect width="6" height="6"/>'),
    ("diagonal", '<path d="M-1 1L1 -1M0 6L6 0M5 7L7 5" stroke="currentColor" stroke-width="1.2"/>'),
    ("dots", '<circle cx="3" cy="3" r="1.3"/>'),
    ("cross-hatch", '<path d="M0 0L6 6M6 0L0 6" stroke="currentColor" stroke-width="0.9"/>'),
    ("horizontal", '<path d="M0 1.5H6M0 4.5H6" stroke="currentColor" stroke-width="1"/>'),
    ("open", ""),
    ("vertical", '<path d="M1.5 0V6M4.5 0V6" stroke="currentColor" stroke-width="1"/>'),
    ("back-diagonal", '<path d="M-1 5L1 7M0 0L6 6M5 -1L7 1" stroke="currentColor" stroke-width="1.2"/>'),
    ("grid", '<path d="M0 0.5H6M0.5 0V6" stroke="currentColor" stroke-width="1"/>'),
    ("dense-dots", '<circle cx="1.5" cy="1.5" r="1"/><circle cx="4.5" cy="4.5" r="1"/>'),
    ("checker", '<rect width="3" height="3"/><rect x="3" y="3" width="3" height="3"/>'),
    ("zigzag", '<path d="M0 4L1.5 2L3 4L4.5 2L6 4" fill="none" stroke="currentColor" stroke-width="0.9"/>'),
)
NICE_MANTISSAS = (1.0, 2.0, 5.0, 2.5)  # in order of preference when two steps reach the same maximum


_BUCKET = re.compile(r"^\d{4}-(\d{2}-\d{2})(?:[ T](\d{2})(?::\d{2})?)?$")

Formatter = Callable[[float], str]


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]  # one per bucket; None: no data in that bucket (a gap in a line)


@dataclass(frozen=True)
class _Data:
    """What will be drawn, after bounding and cleaning: every series has exactly one value per label."""

    labels: list[str]  # shortened bucket labels
    series: list[tuple[str, list[float | None]]]
    buckets_left_out: int
    series_left_out: int


@dataclass(frozen=True)
class _Frame:
    """The plot area of a bucket chart: bucket i is a band of equal width, values run from 0 to y_top."""

    count: int
    y_top: float

    @property
    def band(self) -> float:
        return PLOT_W / self.count

    def x(self, index: int) -> float:
        return LEFT + (index + 0.5) * self.band

    def y(self, value: float) -> float:
        # Clamped so a value the axis cannot hold (a negative one) stays on the plot instead of escaping it.
        share = max(0.0, min(1.0, value / self.y_top))
        return TOP + PLOT_H - share * PLOT_H


# ---------------------------------------------------------------- public API


def line_chart(
    chart_id: str,
    title: str,
    buckets: Sequence[str],
    series: Sequence[Series],
    *,
    y_label: str,
    y_format: str = "{:,.0f}",
    y_max: float | None = None,
    limit: float | None = None,
    limit_label: str = "",
) -> str:
    """Lines over time buckets, broken where a bucket has no data; optionally a horizontal budget line."""
    cid = safe_id(chart_id)
    data = _prepare(buckets, series)
    if _is_empty(data):
        return empty_svg(cid, title)
    fmt = _formatter(y_format)
    budget = limit if limit is not None and math.isfinite(limit) and limit >= 0 else None
    # The axis holds the data, the fixed top the caller asked for, and the budget, so nothing is drawn off it.
    top = max(_largest(data.series), y_max if y_max is not None and math.isfinite(y_max) else 0.0, budget or 0.0)
    ticks = _nice_ticks(top, fmt)
    frame = _Frame(len(data.labels), ticks[-1])
    height = _bucket_chart_height(len(data.series))
    desc = _line_desc(data, fmt, totals=y_max is None, limit=budget, limit_label=limit_label)
    parts = [open_svg(cid, title, desc, WIDTH, height), *_y_axis(frame, ticks, fmt, y_label), *_x_axis(frame, data)]
    parts.extend(_line_series(frame, k, name, values, data.labels, fmt) for k, (name, values) in enumerate(data.series))
    if budget is not None:
        parts.append(_limit_line(frame, budget, limit_label, fmt))
    parts.append(_legend([_line_key(k) for k in range(len(data.series))], [name for name, _ in data.series]))
    parts.append("</svg>")
    return "".join(parts)


def stacked_bar_chart(
    chart_id: str,
    title: str,
    buckets: Sequence[str],
    series: Sequence[Series],
    *,
    y_label: str,
    y_format: str = "{:,.0f}",
) -> str:
    """One bar per bucket, its segments stacked bottom-up in series order, each series a fill pattern."""
    cid = safe_id(chart_id)
    data = _prepare(buckets, series)
    if _is_empty(data):
        return empty_svg(cid, title)
    fmt = _formatter(y_format)
    stacks = _stack_heights(data)
    ticks = _nice_ticks(max(stacks), fmt)
    frame = _Frame(len(data.labels), ticks[-1])
    height = _bucket_chart_height(len(data.series))
    parts = [
        open_svg(cid, title, _bar_desc(data, stacks, fmt), WIDTH, height),
        _pattern_defs(cid, len(data.series)),
        *_y_axis(frame, ticks, fmt, y_label),
        *_x_axis(frame, data),
    ]
    parts.extend(_bar_series(frame, cid, k, data, fmt) for k in range(len(data.series)))
    parts.append(_legend([_bar_key(cid, k) for k in range(len(data.series))], [name for name, _ in data.series]))
    parts.append("</svg>")
    return "".join(parts)


# ---------------------------------------------------------------- shared pieces


def _formatter(y_format: str) -> Formatter:
    return y_format.format


def _clip(name: str, limit: int) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _short_bucket(label: str) -> str:
    """'2026-12-03 14' → '12-03 14h', '2026-12-03' → '12-03': the year is implied by the page's period."""
    match = _BUCKET.match(label)
    if match is None:
        return label
    day, hour = match.groups()
    return f"{day} {hour}h" if hour is not None else day


def _clean(value: float | None) -> float | None:
    # NaN and infinities cannot be placed on an axis; they are treated as "no data" rather than crashing.
    if value is None:
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def _prepare(buckets: Sequence[str], series: Sequence[Series]) -> _Data:
    labels = [_short_bucket(str(bucket)) for bucket in buckets[:MAX_BUCKETS]]
    drawn: list[tuple[str, list[float | None]]] = []
    for one in series[:MAX_SERIES]:
        values = [_clean(value) for value in list(one.values)[: len(labels)]]
        # A series shorter than the buckets has no data in the buckets it does not reach.
        values.extend([None] * (len(labels) - len(values)))
        drawn.append((str(one.name), values))
    return _Data(labels, drawn, max(0, len(buckets) - MAX_BUCKETS), max(0, len(series) - MAX_SERIES))


def _is_empty(data: _Data) -> bool:
    return not data.labels or all(value is None or value == 0 for _, values in data.series for value in values)


def _largest(series: list[tuple[str, list[float | None]]]) -> float:
    return max((value for _, values in series for value in values if value is not None), default=0.0)


def _nice_ticks(top: float, fmt: Formatter) -> list[float]:
    """0 to the smallest 'nice' maximum ≥ top, in 3–5 equal steps (4–6 ticks) of 1, 2, 2.5 or 5 × 10^k.

    A step whose labels the format would misprint is passed over: with "{:,.0f}", ticks 0, 2.5, 5, 7.5
    would read "0, 2, 5, 8"; 0, 2, 4, 6, 8 is chosen instead.
    """
    candidates = _nice_candidates(top if top > 0 else 1.0)
    for ticks in candidates:
        if _labels_faithful(ticks, fmt):
            return ticks
    if top <= 5:  # counts of one or two: whole steps, fewer than three of them
        whole = [float(tick) for tick in range(max(1, math.ceil(top)) + 1)]
        if _labels_faithful(whole, fmt):
            return whole
    return candidates[0]  # no step prints well (say, 0.37 with a whole-number format): the tightest one


def _nice_candidates(top: float) -> list[list[float]]:
    exponent = math.floor(math.log10(top))
    found: list[tuple[float, int, list[float]]] = []
    for power in range(exponent - 1, exponent + 2):
        for rank, mantissa in enumerate(NICE_MANTISSAS):
            step = mantissa * 10.0**power
            # The tolerance keeps float noise (0.3 / 0.1 = 2.9999…) from costing an extra step.
            steps = math.ceil(top / step - 1e-9)
            if 3 <= steps <= 5:
                # Printed to 12 digits so 3 × 0.1 is 0.3, not 0.30000000000000004.
                ticks = [float(f"{i * step:.12g}") for i in range(steps + 1)]
                found.append((ticks[-1], rank, ticks))
    # Never empty: consecutive steps differ by at most ×2 and (2, 5] spans ×2.5, so some step fits.
    found.sort(key=lambda item: (item[0], item[1]))
    return [ticks for _, _, ticks in found]


def _labels_faithful(ticks: list[float], fmt: Formatter) -> bool:
    """Each tick prints distinctly, and not as a rounding of a half-way value (its neighbours print the same)."""
    labels = [fmt(tick) for tick in ticks]
    # Nice ticks misprint only on a rounding boundary of the format (2.5 as "2"); a nudge far smaller
    # than the step crosses such a boundary and changes the label. Relative to the step, not the value:
    # 40,000,000 ± 40 prints differently in a whole-number format though it is printed faithfully.
    nudge = (ticks[1] - ticks[0]) * 1e-7 if len(ticks) > 1 else 1e-7
    steady = all(  # ticks start at 0, and "-0" below it is no misprint
        fmt(max(0.0, tick - nudge)) == label == fmt(tick + nudge) for tick, label in zip(ticks, labels, strict=True)
    )
    return steady and len(set(labels)) == len(labels)


def _tick_indices(count: int) -> list[int]:
    """Which buckets get an x label: all when few, else MAX_X_LABELS spread evenly, first and last included."""
    if count <= MAX_X_LABELS:
        return list(range(count))
    return [round(i * (count - 1) / (MAX_X_LABELS - 1)) for i in range(MAX_X_LABELS)]


def _bucket_chart_height(series_count: int) -> float:
    rows = math.ceil(series_count / LEGEND_COLUMNS)
    return TOP + PLOT_H + 36 + rows * LEGEND_ROW + 4


def _y_axis(frame: _Frame, ticks: list[float], fmt: Formatter, y_label: str) -> list[str]:
    parts = ['<g class="y-axis">']
    for tick in ticks:
        y = coord(frame.y(tick))
        parts.append(
            f'<line class="grid" x1="{LEFT}" y1="{y}" x2="{LEFT + PLOT_W}" y2="{y}" stroke="currentColor" '
            f'stroke-opacity="{0.5 if tick == 0 else 0.15}"/>'
        )
        parts.append(
            f'<text class="y-tick" x="{LEFT - 6}" y="{coord(frame.y(tick) + 3.5)}" text-anchor="end">'
            f"{escaped(fmt(tick))}</text>"
        )
    parts.append(
        f'<text class="y-label" transform="translate(14 {coord(TOP + PLOT_H / 2)}) rotate(-90)" '
        f'text-anchor="middle">{escaped(y_label)}</text></g>'
    )
    return parts


def _x_axis(frame: _Frame, data: _Data) -> list[str]:
    base = TOP + PLOT_H
    parts = ['<g class="x-axis">']
    for index in _tick_indices(frame.count):
        x = coord(frame.x(index))
        parts.append(f'<line x1="{x}" y1="{base}" x2="{x}" y2="{base + 4}" stroke="currentColor"/>')
        parts.append(
            f'<text class="x-tick" x="{x}" y="{base + 16}" text-anchor="middle">{escaped(data.labels[index])}</text>'
        )
    parts.append("</g>")
    return parts


def _legend(keys: list[str], names: list[str]) -> str:
    """Keys (each drawn at 0,0, 30 px wide) with their names, in columns below the x labels."""
    top = TOP + PLOT_H + 36
    column = PLOT_W / LEGEND_COLUMNS
    parts = ['<g class="legend">']
    for k, (key, name) in enumerate(zip(keys, names, strict=True)):
        x, y = LEFT + (k % LEGEND_COLUMNS) * column, top + (k // LEGEND_COLUMNS) * LEGEND_ROW
        parts.append(
            f'<g class="legend-item" data-series="{k}" transform="translate({coord(x)} {coord(y)})">'
            f"<title>{escaped(name)}</title>{key}"
            f'<text x="36" y="4">{escaped(_clip(name, LEGEND_NAME_CHARS))}</text></g>'
        )
    parts.append("</g>")
    return "".join(parts)


def _summary(name: str, values: list[float | None], labels: list[str], fmt: Formatter, *, totals: bool) -> str:
    present = [(i, value) for i, value in enumerate(values) if value is not None]
    if not present:
        return f"{name}: no data"
    peak_at, peak = max(present, key=lambda point: point[1])
    amount = sum(value for _, value in present)
    # A total of rates or latencies means nothing; a chart with a fixed top (rates) gets the mean instead.
    lead = f"total {fmt(amount)}" if totals else f"mean {fmt(amount / len(present))}"
    text = f"{name}: {lead}, peak {fmt(peak)} at {labels[peak_at]}"
    missing = len(values) - len(present)
    return text + (f", no data in {plural(missing, 'bucket')}" if missing else "")


def _span(data: _Data) -> str:
    count = len(data.labels)
    if count == 1:
        return f"1 bucket, {data.labels[0]}"
    return f"{count:,} buckets from {data.labels[0]} to {data.labels[-1]}"


def _left_out(data: _Data) -> list[str]:
    parts = []
    if data.series_left_out:
        parts.append(f"{data.series_left_out:,} more series not drawn")
    if data.buckets_left_out:
        parts.append(f"{plural(data.buckets_left_out, 'more bucket')} not drawn")
    return parts


# ---------------------------------------------------------------- line chart


def _line_desc(data: _Data, fmt: Formatter, *, totals: bool, limit: float | None, limit_label: str) -> str:
    parts = [_span(data)]
    parts.extend(_summary(name, values, data.labels, fmt, totals=totals) for name, values in data.series)
    if limit is not None:
        over = sum(1 for i in range(len(data.labels)) if any((v[i] or 0) > limit for _, v in data.series))
        parts.append(f"{limit_label or 'limit'} {fmt(limit)}, exceeded in {plural(over, 'bucket')}")
    parts.extend(_left_out(data))
    return "; ".join(parts) + "."


def _runs(values: list[float | None]) -> list[list[tuple[int, float]]]:
    """The stretches of consecutive buckets with data: a line is drawn through each, never across a gap."""
    runs: list[list[tuple[int, float]]] = []
    current: list[tuple[int, float]] = []
    for index, value in enumerate(values):
        if value is None:
            if current:
                runs.append(current)
            current = []
        else:
            current.append((index, value))
    if current:
        runs.append(current)
    return runs


def _marker(shape: str, x: float, y: float, size: float, title: str = "") -> str:
    """A point's mark: the shape says which series it belongs to; open shapes are hoverable inside too."""
    filled = not shape.endswith("-open")
    base = shape.removesuffix("-open")
    paint = (
        'fill="currentColor"' if filled else 'fill="none" stroke="currentColor" stroke-width="1.2" pointer-events="all"'
    )
    inner = f"<title>{escaped(title)}</title>" if title else ""
    cls = f'class="marker marker-{shape}"'
    if base == "circle":
        return f'<circle {cls} cx="{coord(x)}" cy="{coord(y)}" r="{coord(size)}" {paint}>{inner}</circle>'
    if base in _POLYGONS:
        points = " ".join(f"{coord(x + dx * size)},{coord(y + dy * size)}" for dx, dy in _POLYGONS[base])
        return f'<polygon {cls} points="{points}" {paint}>{inner}</polygon>'
    # Stroke-only marks: a diagonal cross or an upright plus.
    s = size
    if base == "cross":
        d = (
            f"M{coord(x - s)} {coord(y - s)}L{coord(x + s)} {coord(y + s)}"
            f"M{coord(x - s)} {coord(y + s)}L{coord(x + s)} {coord(y - s)}"
        )
    else:
        d = (
            f"M{coord(x - s * 1.2)} {coord(y)}H{coord(x + s * 1.2)}"
            f"M{coord(x)} {coord(y - s * 1.2)}V{coord(y + s * 1.2)}"
        )
    stroke = 'fill="none" stroke="currentColor" stroke-width="1.6" pointer-events="all"'
    return f'<path {cls} d="{d}" {stroke}>{inner}</path>'


def _line_series(
    frame: _Frame, k: int, name: str, values: list[float | None], labels: list[str], fmt: Formatter
) -> str:
    dash, shape = DASHES[k], MARKERS[k]
    # Markers shrink with the bands so 200 buckets stay legible, but never below a hoverable size.
    size = max(2.0, min(4.0, frame.band * 0.35))
    parts = [f'<g class="series" data-series="{k}">']
    for run in _runs(values):
        if len(run) < 2:
            continue  # a lone point has no line; its marker alone shows it
        points = " ".join(f"{coord(frame.x(i))},{coord(frame.y(v))}" for i, v in run)
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="currentColor" stroke-width="1.5" '
            f'stroke-dasharray="{dash}" stroke-linejoin="round"><title>{escaped(name)}</title></polyline>'
        )
    for index, value in enumerate(values):
        if value is not None:
            title = f"{labels[index]} · {name}: {fmt(value)}"
            parts.append(_marker(shape, frame.x(index), frame.y(value), size, title))
    parts.append("</g>")
    return "".join(parts)


def _limit_line(frame: _Frame, limit: float, label: str, fmt: Formatter) -> str:
    y = frame.y(limit)
    text = f"{label or 'limit'} {fmt(limit)}"
    return (
        f'<g class="limit"><line x1="{LEFT}" y1="{coord(y)}" x2="{LEFT + PLOT_W}" y2="{coord(y)}" '
        'stroke="currentColor" '
        f'stroke-width="2" stroke-opacity="0.7" stroke-dasharray="{LIMIT_DASH}"><title>{escaped(text)}</title></line>'
        f'<text class="limit-label" x="{LEFT + PLOT_W}" y="{coord(y - 4)}" text-anchor="end">{escaped(text)}</text></g>'
    )


def _line_key(k: int) -> str:
    return (
        f'<line x1="0" y1="0" x2="30" y2="0" stroke="currentColor" stroke-width="1.5" '
        f'stroke-dasharray="{DASHES[k]}"/>' + _marker(MARKERS[k], 15, 0, 3.5)
    )


# ---------------------------------------------------------------- stacked bars


def _stack_heights(data: _Data) -> list[float]:
    return [
        sum(max(0.0, values[i] or 0.0) for _, values in data.series)  # negative counts cannot be stacked
        for i in range(len(data.labels))
    ]


def _bar_desc(data: _Data, stacks: list[float], fmt: Formatter) -> str:
    parts = [_span(data)]
    parts.extend(_summary(name, values, data.labels, fmt, totals=True) for name, values in data.series)
    tallest = max(range(len(stacks)), key=stacks.__getitem__)
    parts.append(f"all series: total {fmt(sum(stacks))}, tallest bar {fmt(stacks[tallest])} at {data.labels[tallest]}")
    parts.extend(_left_out(data))
    return "; ".join(parts) + "."


def _pattern_defs(cid: str, count: int) -> str:
    # Ids carry the chart id: two charts on one page must never fill from each other's patterns.
    parts = ["<defs>"]
    for k in range(count):
        kind, tile = PATTERNS[k]
        parts.append(
            f'<pattern id="{cid}-pattern-{k}" class="pattern-{kind}" width="6" height="6" '
            f'patternUnits="userSpaceOnUse">{tile}</pattern>'
        )
    parts.append("</defs>")
    return "".join(parts)


def _bar_series(frame: _Frame, cid: str, k: int, data: _Data, fmt: Formatter) -> str:
    name, values = data.series[k]
    width = frame.band * 0.7
    parts = [f'<g class="series" data-series="{k}">']
    for index, value in enumerate(values):
        if value is None or value <= 0:
            continue  # a zero segment would be a zero-height rect: nothing to see, only noise to hover
        # Segments below this one in the same bar: earlier series, positive values only, as in _stack_heights.
        base = sum(max(0.0, data.series[j][1][index] or 0.0) for j in range(k))
        top, bottom = frame.y(base + value), frame.y(base)
        parts.append(
            f'<rect class="segment" x="{coord(frame.x(index) - width / 2)}" y="{coord(top)}" width="{coord(width)}" '
            f'height="{coord(bottom - top)}" fill="url(#{cid}-pattern-{k})" stroke="currentColor" stroke-width="0.6">'
            f"<title>{escaped(f'{data.labels[index]} · {name}: {fmt(value)}')}</title></rect>"
        )
    parts.append("</g>")
    return "".join(parts)


def _bar_key(cid: str, k: int) -> str:
    return (
        f'<rect x="4" y="-6" width="22" height="12" fill="url(#{cid}-pattern-{k})" stroke="currentColor" '
        'stroke-width="0.8"/>'
    )
