"""A reliability diagram as SVG, drawn on the server: no script, no CDN, readable offline and without colour.

Each bin is a mark at (what the agent said, how often it was right), with its Wilson interval as a
vertical bar and its count written beside it. A validated bin is a filled circle, one with too few
marks a hollow square: the shape, not a colour, says which. The diagonal is perfect calibration; a
mark below it is an agent that oversells itself.
"""

from __future__ import annotations

from html import escape

from vectorstep.domain.calibration_report import BucketReport

SIZE = 240  # the plot's side, in pixels
LEFT, TOP, RIGHT, BOTTOM = 44, 12, 16, 40
TICKS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def reliability_svg(report: BucketReport, title: str) -> str:
    width, height = LEFT + SIZE + RIGHT, TOP + SIZE + BOTTOM
    described = "; ".join(
        f"says {row.predicted:.2f}, right {row.accuracy:.0%} of {row.n}"
        f"{'' if row.validated else ' (too few marks to validate)'}"
        for row in report.bins
    )
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="reliability" role="img" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f"<desc>{escape(described or 'no marked steps')}</desc>",
        f'<rect x="{LEFT}" y="{TOP}" width="{SIZE}" height="{SIZE}" class="frame" fill="none" stroke="currentColor" '
        'stroke-opacity="0.4"/>',
    ]
    for tick in TICKS:
        x, y = _x(tick), _y(tick)
        parts.append(f'<line x1="{x}" y1="{TOP + SIZE}" x2="{x}" y2="{TOP + SIZE + 4}" stroke="currentColor"/>')
        parts.append(f'<text x="{x}" y="{TOP + SIZE + 16}" text-anchor="middle" font-size="10">{tick:.1f}</text>')
        parts.append(f'<line x1="{LEFT - 4}" y1="{y}" x2="{LEFT}" y2="{y}" stroke="currentColor"/>')
        parts.append(f'<text x="{LEFT - 7}" y="{y + 3}" text-anchor="end" font-size="10">{tick:.1f}</text>')
    parts.append(
        f'<text x="{LEFT + SIZE / 2}" y="{height - 6}" text-anchor="middle" font-size="11">what it said (trust)</text>'
    )
    parts.append(
        f'<text transform="translate(12 {TOP + SIZE / 2}) rotate(-90)" text-anchor="middle" font-size="11">'
        "how often it was right</text>"
    )
    parts.append(
        f'<line class="perfect" x1="{_x(0)}" y1="{_y(0)}" x2="{_x(1)}" y2="{_y(1)}" stroke="currentColor" '
        'stroke-dasharray="4 4" stroke-opacity="0.6"><title>perfect calibration</title></line>'
    )
    for row in report.bins:
        parts.extend(_mark(row.predicted, row.accuracy, row.accuracy_low, row.accuracy_high, row.n, row.validated))
    parts.append("</svg>")
    return "".join(parts)


def _mark(predicted: float, accuracy: float, low: float, high: float, n: int, validated: bool) -> list[str]:
    x, y = _x(predicted), _y(accuracy)
    label = f"said {predicted:.2f}, right {accuracy:.0%} of {n} ({low:.0%}–{high:.0%})"
    shape = (
        f'<circle class="bin validated" cx="{x}" cy="{y}" r="5" fill="currentColor"><title>{label}</title></circle>'
        if validated
        else f'<rect class="bin unvalidated" x="{x - 4.5}" y="{y - 4.5}" width="9" height="9" fill="none" '
        f'stroke="currentColor" stroke-width="1.5"><title>{label}, not validated</title></rect>'
    )
    return [
        f'<line class="interval" x1="{x}" y1="{_y(low)}" x2="{x}" y2="{_y(high)}" stroke="currentColor"/>',
        f'<line x1="{x - 4}" y1="{_y(low)}" x2="{x + 4}" y2="{_y(low)}" stroke="currentColor"/>',
        f'<line x1="{x - 4}" y1="{_y(high)}" x2="{x + 4}" y2="{_y(high)}" stroke="currentColor"/>',
        shape,
        f'<text class="count" x="{x + 8}" y="{y + 4}" font-size="10">n={n}</text>',
    ]


def _x(value: float) -> float:
    return round(LEFT + max(0.0, min(1.0, value)) * SIZE, 1)


def _y(value: float) -> float:
    return round(TOP + (1 - max(0.0, min(1.0, value))) * SIZE, 1)
