"""The pieces every chart is made of: safe text, safe ids, short coordinates, the <svg> element itself.

All text that reaches a chart goes through `escaped`, which escapes it and drops characters XML cannot
hold, so a hostile series name or bucket label cannot break the document or inject markup.
"""

from __future__ import annotations

import re
from html import escape

NO_DATA = "No data in this period"

# Characters XML 1.0 cannot carry even escaped; a name holding one would make the whole page unparsable.
_XML_INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_UNSAFE_ID = re.compile(r"[^A-Za-z0-9_-]")


def escaped(value: object) -> str:
    """Text or attribute content, safe inside the SVG whatever the caller passed."""
    return escape(_XML_INVALID.sub("\ufffd", str(value)), quote=True)


def safe_id(chart_id: str) -> str:
    return _UNSAFE_ID.sub("-", chart_id) or "chart"


def coord(value: float) -> str:
    """A coordinate, to one decimal, without a trailing '.0' to keep documents small."""
    rounded = round(value, 1)
    return str(int(rounded)) if rounded == int(rounded) else f"{rounded:.1f}"


def plural(count: int, word: str) -> str:
    return f"{count:,} {word}{'' if count == 1 else 's'}"


def open_svg(cid: str, title: str, desc: str, width: float, height: float) -> str:
    # width="100%" and no height: the viewBox gives the aspect ratio and CSS decides the size.
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-labelledby="{cid}-title {cid}-desc" '
        f'viewBox="0 0 {coord(width)} {coord(height)}" width="100%" class="chart" fill="currentColor" '
        f'font-family="system-ui, sans-serif" font-size="11">'
        f'<title id="{cid}-title">{escaped(title)}</title><desc id="{cid}-desc">{escaped(desc)}</desc>'
    )


def empty_svg(cid: str, title: str) -> str:
    width, height = 320, 56
    return (
        open_svg(cid, title, NO_DATA, width, height)
        + f'<rect x="0.5" y="0.5" width="{width - 1}" height="{height - 1}" fill="none" stroke="currentColor" '
        'stroke-opacity="0.3" stroke-dasharray="4 4"/>'
        + f'<text class="no-data" x="{width / 2:g}" y="{height / 2 + 4:g}" text-anchor="middle">{NO_DATA}</text>'
        + "</svg>"
    )
