"""A 10×10 grid of what agents said (self-reported confidence) against how grounded they were, as SVG.

Cells far from the diagonal are hatched outlines and the others solid squares: the fill, never colour
alone, says which; a cell's area grows with its count.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from vectorstep.web.ui.svg import coord, empty_svg, escaped, open_svg, plural, safe_id

GRID_CELLS = 10  # the scatter grid is in tenths
GRID_SIZE = 240
GRID_CELL = GRID_SIZE / GRID_CELLS
GRID_LEFT, GRID_TOP, GRID_RIGHT = 56, 16, 24
GRID_WIDTH = GRID_LEFT + GRID_SIZE + GRID_RIGHT
LEGEND_ROW = 18


def scatter_grid(
    chart_id: str,
    title: str,
    cells: Sequence[tuple[int, int, int]],
    *,
    x_label: str,
    y_label: str,
    divergence: float,
) -> str:
    """What was said (x) against how grounded it was (y), in tenths; cells far from the diagonal drawn hatched."""
    cid = safe_id(chart_id)
    counts = _grid_counts(cells)
    if not counts:
        return empty_svg(cid, title)
    # In whole cells; rounded so 0.3 × 10 = 3.0000000000000004 does not make a 3-apart cell diverge.
    threshold = round(divergence * GRID_CELLS, 6)
    biggest = max(counts.values())
    legend_top = GRID_TOP + GRID_SIZE + 44
    height = legend_top + 2 * LEGEND_ROW + 4
    desc = _grid_desc(counts, threshold, divergence, x_label, y_label)
    parts = [
        open_svg(cid, title, desc, GRID_WIDTH, height),
        f'<defs><pattern id="{cid}-diverge" width="5" height="5" patternUnits="userSpaceOnUse">'
        '<path d="M-1 1L1 -1M0 5L5 0M4 6L6 4" stroke="currentColor" stroke-width="1"/></pattern></defs>',
        *_grid_axes(x_label, y_label),
    ]
    for (gx, gy), count in sorted(counts.items()):
        parts.append(_grid_cell(cid, gx, gy, count, biggest, abs(gx - gy) > threshold, x_label, y_label))
    parts.append(_grid_legend(cid, legend_top, divergence))
    parts.append("</svg>")
    return "".join(parts)


def _grid_counts(cells: Sequence[tuple[int, int, int]]) -> dict[tuple[int, int], int]:
    """Counts per cell, out-of-range cells clamped to the edge (and merged with what is there)."""
    counts: dict[tuple[int, int], int] = {}
    for x, y, count in cells:
        if count <= 0:
            continue
        key = (_clamp_cell(x), _clamp_cell(y))
        counts[key] = counts.get(key, 0) + int(count)
    return counts


def _clamp_cell(index: int) -> int:
    return max(0, min(GRID_CELLS - 1, int(index)))


def _tenths(index: int) -> str:
    return f"{index / GRID_CELLS:.1f}–{(index + 1) / GRID_CELLS:.1f}"


def _grid_desc(
    counts: dict[tuple[int, int], int], threshold: float, divergence: float, x_label: str, y_label: str
) -> str:
    total = sum(counts.values())
    diverging = sum(count for (gx, gy), count in counts.items() if abs(gx - gy) > threshold)
    (bx, by), most = max(counts.items(), key=lambda item: item[1])
    return (
        f"{total:,} steps in {plural(len(counts), 'cell')}; "
        f"{diverging:,} ({diverging / total:.0%}) where {x_label} and {y_label} are more than {divergence:g} apart, "
        f"drawn as hatched outlined squares; {total - diverging:,} within {divergence:g}, drawn as solid squares; "
        f"largest cell: {x_label} {_tenths(bx)}, {y_label} {_tenths(by)}, {most:,} steps."
    )


def _grid_x(value: float) -> float:
    return GRID_LEFT + value * GRID_SIZE


def _grid_y(value: float) -> float:
    return GRID_TOP + (1 - value) * GRID_SIZE


def _grid_axes(x_label: str, y_label: str) -> list[str]:
    bottom = GRID_TOP + GRID_SIZE
    parts = [
        f'<rect x="{GRID_LEFT}" y="{GRID_TOP}" width="{GRID_SIZE}" height="{GRID_SIZE}" fill="none" '
        'stroke="currentColor" stroke-opacity="0.4"/>'
    ]
    for i in range(GRID_CELLS + 1):
        value = i / GRID_CELLS
        x, y = coord(_grid_x(value)), coord(_grid_y(value))
        # A faint line at every tenth shows the cells; labels every fifth of the way keep the axis readable.
        parts.append(
            f'<line x1="{x}" y1="{GRID_TOP}" x2="{x}" y2="{bottom}" stroke="currentColor" stroke-opacity="0.1"/>'
            f'<line x1="{GRID_LEFT}" y1="{y}" x2="{GRID_LEFT + GRID_SIZE}" y2="{y}" stroke="currentColor" '
            'stroke-opacity="0.1"/>'
        )
        if i % 2 == 0:
            parts.append(f'<text class="x-tick" x="{x}" y="{bottom + 14}" text-anchor="middle">{value:.1f}</text>')
            parts.append(
                f'<text class="y-tick" x="{GRID_LEFT - 6}" y="{coord(_grid_y(value) + 3.5)}" '
                f'text-anchor="end">{value:.1f}</text>'
            )
    parts.append(
        f'<line class="diagonal" x1="{coord(_grid_x(0))}" y1="{coord(_grid_y(0))}" x2="{coord(_grid_x(1))}" '
        f'y2="{coord(_grid_y(1))}" stroke="currentColor" stroke-opacity="0.6" stroke-dasharray="4 4">'
        "<title>where both agree</title></line>"
    )
    parts.append(
        f'<text class="x-label" x="{coord(_grid_x(0.5))}" y="{bottom + 32}" text-anchor="middle">'
        f"{escaped(x_label)}</text>"
    )
    parts.append(
        f'<text class="y-label" transform="translate(14 {coord(_grid_y(0.5))}) rotate(-90)" '
        f'text-anchor="middle">{escaped(y_label)}</text>'
    )
    return parts


def _grid_cell(
    cid: str, gx: int, gy: int, count: int, biggest: int, diverging: bool, x_label: str, y_label: str
) -> str:
    # Area, not side, grows with the count, so a cell with four times the steps looks four times as big.
    side = max(3.0, GRID_CELL * 0.9 * math.sqrt(count / biggest))
    cx, cy = _grid_x((gx + 0.5) / GRID_CELLS), _grid_y((gy + 0.5) / GRID_CELLS)
    # Diverging cells are hatched outlines, agreeing ones solid: the fill, not a colour, says which.
    paint = (
        f'fill="url(#{cid}-diverge)" stroke="currentColor" stroke-width="1.2"'
        if diverging
        else 'fill="currentColor" fill-opacity="0.35" stroke="currentColor" stroke-width="0.8"'
    )
    kind = "diverge" if diverging else "agree"
    title = f"{x_label} {_tenths(gx)} · {y_label} {_tenths(gy)}: {count:,} ({'diverging' if diverging else 'agreeing'})"
    parts = [
        f'<rect class="cell {kind}" x="{coord(cx - side / 2)}" y="{coord(cy - side / 2)}" width="{coord(side)}" '
        f'height="{coord(side)}" {paint}><title>{escaped(title)}</title></rect>'
    ]
    digits = f"{count:,}"
    if side >= max(10.0, 5.0 * len(digits)):  # written only where the square can hold the number
        parts.append(
            f'<text class="count" x="{coord(cx)}" y="{coord(cy + 3)}" text-anchor="middle" font-size="8" '
            f'font-weight="bold">{digits}</text>'
        )
    return "".join(parts)


def _grid_legend(cid: str, top: float, divergence: float) -> str:
    return (
        f'<g class="legend"><g class="legend-item agree" transform="translate({GRID_LEFT} {coord(top)})">'
        '<rect x="0" y="-6" width="12" height="12" fill="currentColor" fill-opacity="0.35" stroke="currentColor"/>'
        f'<text x="18" y="4">agree: within {divergence:g}</text></g>'
        f'<g class="legend-item diverge" transform="translate({GRID_LEFT} {coord(top + LEGEND_ROW)})">'
        f'<rect x="0" y="-6" width="12" height="12" fill="url(#{cid}-diverge)" stroke="currentColor"/>'
        f'<text x="18" y="4">diverge: more than {divergence:g} apart</text></g></g>'
    )
