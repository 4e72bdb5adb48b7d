"""Server-rendered SVG charts: well-formed, escaped, told apart without colour, and described in words."""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET

import pytest

from vectorstep.web.ui.charts import Series, line_chart, stacked_bar_chart
from vectorstep.web.ui.scatter import scatter_grid

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(1)</script> \"double\" 'single' & </desc>\x00\x1b"


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # raises on anything that is not well-formed XML


def hours(count: int) -> list[str]:
    return [f"2026-12-{3 + h // 24:02d} {h % 24:02d}" for h in range(count)]


def desc(root: ET.Element) -> str:
    element = root.find(f"{SVG}desc")
    assert element is not None
    return element.text or ""


def texts(root: ET.Element, cls: str) -> list[str]:
    return [el.text or "" for el in root.iter(f"{SVG}text") if cls in el.get("class", "").split()]


def groups(root: ET.Element, cls: str) -> list[ET.Element]:
    return [el for el in root.iter(f"{SVG}g") if cls in el.get("class", "").split()]


def title_of(element: ET.Element) -> str:
    found = element.find(f"{SVG}title")
    return "" if found is None else found.text or ""


def markers(group: ET.Element) -> list[ET.Element]:
    return [el for el in group.iter() if "marker" in el.get("class", "").split()]


def y_ticks(root: ET.Element) -> list[float]:
    return [float(label.replace(",", "").rstrip("%")) for label in texts(root, "y-tick")]


def grid_line_ys(root: ET.Element) -> list[float]:
    (axis,) = groups(root, "y-axis")
    return [float(line.get("y1", "nan")) for line in axis.iter(f"{SVG}line")]


def marker_y(element: ET.Element) -> float:
    if element.tag == f"{SVG}circle":
        return float(element.get("cy", "nan"))
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", element.get("points") or element.get("d") or "")]
    ys = numbers[1::2]
    return (min(ys) + max(ys)) / 2


# ---------------------------------------------------------------- every chart


def all_kinds() -> list[str]:
    buckets = hours(30)
    series = [Series("completed", [float(i) for i in range(30)]), Series("failed", [1.0] * 30)]
    return [
        line_chart("a", "Line", buckets, series, y_label="runs", limit=40, limit_label="budget"),
        stacked_bar_chart("b", "Bars", buckets, series, y_label="runs"),
        scatter_grid("c", "Grid", [(8, 8, 40), (1, 9, 3)], x_label="said", y_label="grounded", divergence=0.3),
        line_chart("d", "Empty", [], [], y_label="runs"),
    ]


@pytest.mark.parametrize("index", range(4))
def test_every_chart_is_an_accessible_scalable_svg(index: int) -> None:
    svg = all_kinds()[index]
    root = parse(svg)
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img"
    assert root.get("class") == "chart"
    assert root.get("width") in (None, "100%")
    assert root.get("height") is None
    assert re.fullmatch(r"0 0 \d+(\.\d)? \d+(\.\d)?", root.get("viewBox", ""))
    ids = {el.get("id") for el in root.iter() if el.get("id")}
    labelled_by = root.get("aria-labelledby", "").split()
    assert len(labelled_by) == 2
    assert set(labelled_by) <= ids
    title = root.find(f"{SVG}title")
    assert title is not None
    assert title.get("id") == labelled_by[0]
    assert desc(root)


@pytest.mark.parametrize("index", range(4))
def test_coordinates_are_rounded_to_one_decimal(index: int) -> None:
    root = parse(all_kinds()[index])
    geometry = ("x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "width", "height", "points", "d", "transform")
    for element in root.iter():
        for name in geometry:
            value = element.get(name, "")
            assert not re.search(r"\d\.\d\d", value), (element.tag, name, value)


def test_chart_id_is_sanitised() -> None:
    root = parse(stacked_bar_chart('runs by "hour" <x>&y', "t", ["2026-12-03"], [Series("a", [1])], y_label="n"))
    ids = [el.get("id", "") for el in root.iter() if el.get("id")]
    assert ids
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+", i) for i in ids), ids
    assert "runs-by--hour---x--y-title" in ids


# ---------------------------------------------------------------- line chart


def test_a_line_is_broken_where_a_bucket_has_no_data() -> None:
    root = parse(line_chart("c", "t", hours(5), [Series("s", [1, 2, None, 3, 4])], y_label="n"))
    (group,) = groups(root, "series")
    polylines = group.findall(f"{SVG}polyline")
    assert len(polylines) == 2
    xs = [[float(p.split(",")[0]) for p in line.get("points", "").split()] for line in polylines]
    assert len(xs[0]) == len(xs[1]) == 2
    assert max(xs[0]) < min(xs[1])  # nothing joins bucket 1 to bucket 3
    assert len(markers(group)) == 4


def test_a_lone_point_between_gaps_still_shows_as_a_marker() -> None:
    root = parse(line_chart("c", "t", hours(4), [Series("s", [1, None, 2, 3])], y_label="n"))
    (group,) = groups(root, "series")
    assert len(group.findall(f"{SVG}polyline")) == 1
    assert len(markers(group)) == 3


def test_each_series_has_its_own_dash_and_marker_shape_also_in_the_legend() -> None:
    series = [Series(f"s{k}", [k + 1.0, k + 2.0, k + 1.5]) for k in range(12)]
    root = parse(line_chart("c", "t", hours(3), series, y_label="n"))
    drawn = groups(root, "series")
    assert len(drawn) == 12
    dashes = [g.find(f"{SVG}polyline").get("stroke-dasharray") for g in drawn]  # type: ignore[union-attr]
    shapes = [{m.get("class") for m in markers(g)} for g in drawn]
    assert all(len(s) == 1 for s in shapes)
    assert len(set(dashes)) == 12
    assert len({next(iter(s)) for s in shapes}) == 12
    legend = groups(root, "legend-item")
    assert [title_of(item) for item in legend] == [f"s{k}" for k in range(12)]
    for item, dash, shape in zip(legend, dashes, shapes, strict=True):
        assert item.find(f"{SVG}line").get("stroke-dasharray") == dash  # type: ignore[union-attr]
        assert {m.get("class") for m in markers(item)} == shape


def test_every_point_says_bucket_series_and_value() -> None:
    root = parse(
        line_chart("c", "t", ["2026-12-03 14", "2026-12-03 15"], [Series("completed", [1204, 88])], y_label="n")
    )
    titles = [title_of(m) for m in markers(groups(root, "series")[0])]
    assert titles == ["12-03 14h · completed: 1,204", "12-03 15h · completed: 88"]


def test_a_hostile_series_name_and_labels_are_escaped() -> None:
    svg = line_chart(
        HOSTILE, HOSTILE, [HOSTILE, "2026-12-03"], [Series(HOSTILE, [1, 2]), Series("ok", [2, 1])], y_label=HOSTILE
    )
    root = parse(svg)
    assert "<script>" not in svg
    assert not [el for el in root.iter() if el.tag.endswith("script")]
    legend = groups(root, "legend-item")
    assert title_of(legend[0]).startswith("<script>alert(1)</script> \"double\" 'single' & </desc>")
    assert "<script>alert(1)</script>" in desc(root)
    assert len(groups(root, "series")) == 2  # the name closed no element early


def test_hostile_names_in_bars_and_grid_are_escaped() -> None:
    bars = stacked_bar_chart("b", HOSTILE, [HOSTILE], [Series(HOSTILE, [3])], y_label=HOSTILE)
    grid = scatter_grid("g", HOSTILE, [(1, 1, 2)], x_label=HOSTILE, y_label=HOSTILE, divergence=0.3)
    for svg in (bars, grid):
        root = parse(svg)
        assert "<script>" not in svg
        assert "<script>alert(1)</script>" in desc(root)


def test_at_most_eight_x_labels_and_first_and_last_bucket_are_labelled() -> None:
    buckets = hours(168)
    root = parse(line_chart("c", "t", buckets, [Series("s", [1.0] * 168)], y_label="n"))
    labels = texts(root, "x-tick")
    assert 2 <= len(labels) <= 8
    assert labels[0] == "12-03 00h"
    assert labels[-1] == "12-09 23h"
    assert len(set(labels)) == len(labels)


def test_day_buckets_are_shortened_and_few_buckets_all_labelled() -> None:
    days = ["2026-12-01", "2026-12-02", "2026-12-03"]
    root = parse(stacked_bar_chart("c", "t", days, [Series("s", [1, 2, 3])], y_label="n"))
    assert texts(root, "x-tick") == ["12-01", "12-02", "12-03"]


@pytest.mark.parametrize("peak", [3, 7, 87, 100, 101, 1234, 98_765])
def test_y_axis_ends_at_a_nice_number_at_or_above_the_data(peak: float) -> None:
    root = parse(line_chart("c", "t", hours(3), [Series("s", [0, peak / 2, peak])], y_label="n", y_format="{:g}"))
    ticks = y_ticks(root)
    assert 4 <= len(ticks) <= 6
    assert ticks[0] == 0
    assert peak <= ticks[-1] <= 1.5 * peak
    steps = {round(b - a, 9) for a, b in itertools.pairwise(ticks)}
    assert len(steps) == 1
    (step,) = steps
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert any(math.isclose(mantissa, nice) for nice in (1, 2, 2.5, 5))
    # The peak is drawn on the plot, at or below the top gridline (smaller y is higher).
    top_line = min(grid_line_ys(root))
    assert min(marker_y(m) for m in markers(groups(root, "series")[0])) >= top_line


def test_whole_number_ticks_are_not_misprinted() -> None:
    root = parse(stacked_bar_chart("c", "t", hours(2), [Series("s", [7, 3])], y_label="n"))
    labels = texts(root, "y-tick")
    # 0, 2.5, 5, 7.5 would print as "0, 2, 5, 8": labels must be what they say.
    ticks = [float(label) for label in labels]
    assert ticks == sorted(ticks)
    assert len({round(b - a, 9) for a, b in itertools.pairwise(ticks)}) == 1
    assert ticks[-1] >= 7


def test_large_counts_get_nice_whole_ticks() -> None:
    # Tokens of a busy day: tens of millions, printed whole, in steps of ten million.
    root = parse(
        line_chart("c", "t", hours(2), [Series("tokens", [1_000, 40_123_456])], y_label="n", y_format="{:,.0f}")
    )
    assert texts(root, "y-tick") == ["0", "10,000,000", "20,000,000", "30,000,000", "40,000,000", "50,000,000"]


@pytest.mark.parametrize(("peak", "expected"), [(1, ["0", "1"]), (2, ["0", "1", "2"])])
def test_a_count_of_one_or_two_gets_whole_ticks(peak: int, expected: list[str]) -> None:
    # Three steps of 0.25 or 0.5 would print as "0, 0, 0, 1" in a whole-number format.
    root = parse(stacked_bar_chart("c", "t", hours(2), [Series("runs", [0, peak])], y_label="runs"))
    assert texts(root, "y-tick") == expected


def test_rates_use_the_fixed_top_and_format() -> None:
    root = parse(
        line_chart(
            "c", "t", hours(3), [Series("failure rate", [0.1, 0.3, 0.2])], y_label="rate", y_format="{:.0%}", y_max=1.0
        )
    )
    labels = texts(root, "y-tick")
    assert labels[0] == "0%"
    assert labels[-1] == "100%"
    assert "mean 20%" in desc(root)


def test_a_limit_line_is_drawn_labelled_and_the_axis_reaches_it() -> None:
    root = parse(
        line_chart("c", "t", hours(3), [Series("cost", [10, 80, 40])], y_label="$", limit=500, limit_label="budget")
    )
    (limit,) = groups(root, "limit")
    assert "budget" in "".join(limit.itertext())
    assert y_ticks(root)[-1] >= 500
    line = limit.find(f"{SVG}line")
    assert line is not None
    assert line.get("stroke-dasharray") not in (None, "none")
    assert min(grid_line_ys(root)) <= float(line.get("y1", "nan")) <= max(grid_line_ys(root))
    assert "budget 500" in desc(root)


def test_a_limit_below_the_data_does_not_change_the_axis() -> None:
    series = [Series("cost", [10, 80, 40])]
    with_limit = parse(line_chart("c", "t", hours(3), series, y_label="$", limit=50, limit_label="budget"))
    without = parse(line_chart("c", "t", hours(3), series, y_label="$"))
    assert y_ticks(with_limit) == y_ticks(without)
    assert "exceeded in 1 bucket" in desc(with_limit)
    assert not groups(without, "limit")


def test_desc_summarises_totals_peaks_and_gaps() -> None:
    root = parse(line_chart("c", "t", hours(4), [Series("completed", [1000, 204, None, 0])], y_label="n"))
    text = desc(root)
    assert "4 buckets from 12-03 00h to 12-03 03h" in text
    assert "completed: total 1,204, peak 1,000 at 12-03 00h, no data in 1 bucket" in text


def test_too_many_buckets_and_series_are_bounded_and_said_so() -> None:
    series = [Series(f"s{k}", [1.0] * 250) for k in range(15)]
    root = parse(line_chart("c", "t", hours(250), series, y_label="n"))
    drawn = groups(root, "series")
    assert len(drawn) == 12
    assert all(len(markers(g)) == 200 for g in drawn)
    assert "3 more series not drawn" in desc(root)
    assert "50 more buckets not drawn" in desc(root)


def test_a_short_series_has_no_data_in_the_buckets_it_does_not_reach() -> None:
    root = parse(line_chart("c", "t", hours(4), [Series("s", [1, 2])], y_label="n"))
    assert len(markers(groups(root, "series")[0])) == 2
    assert "no data in 2 buckets" in desc(root)


# ---------------------------------------------------------------- stacked bars


def test_bars_stack_in_series_order_with_distinct_patterns() -> None:
    series = [Series("completed", [5, 0, 2]), Series("failed", [1, 3, None]), Series("cancelled", [2, 2, 2])]
    root = parse(stacked_bar_chart("runs", "t", ["2026-12-01", "2026-12-02", "2026-12-03"], series, y_label="n"))
    drawn = groups(root, "series")
    fills = [{rect.get("fill") for rect in g.iter(f"{SVG}rect")} for g in drawn]
    assert all(len(f) == 1 for f in fills)
    assert len({next(iter(f)) for f in fills}) == 3
    pattern_ids = {p.get("id") for p in root.iter(f"{SVG}pattern")}
    assert {next(iter(f)) for f in fills} == {f"url(#{i})" for i in pattern_ids}
    # Zero and missing segments are not drawn: 2 + 2 + 3 of 9.
    assert [len(list(g.iter(f"{SVG}rect"))) for g in drawn] == [2, 2, 3]
    # In the first bar, "failed" sits on "completed" and "cancelled" on "failed".
    first = [next(g.iter(f"{SVG}rect")) for g in drawn]
    bottoms = [float(r.get("y", "nan")) + float(r.get("height", "nan")) for r in first]
    tops = [float(r.get("y", "nan")) for r in first]
    assert math.isclose(bottoms[0], max(grid_line_ys(root)), abs_tol=0.11)
    assert math.isclose(bottoms[1], tops[0], abs_tol=0.11)
    assert math.isclose(bottoms[2], tops[1], abs_tol=0.11)
    assert title_of(first[1]) == "12-01 · failed: 1"
    legend_fills = [item.find(f"{SVG}rect").get("fill") for item in groups(root, "legend-item")]  # type: ignore[union-attr]
    assert legend_fills == [next(iter(f)) for f in fills]


def test_two_charts_on_one_page_never_share_a_pattern_id() -> None:
    series = [Series("a", [1, 2]), Series("b", [2, 1])]
    first = parse(stacked_bar_chart("runs", "t", hours(2), series, y_label="n"))
    second = parse(stacked_bar_chart("costs", "t", hours(2), series, y_label="n"))
    ids = [{el.get("id") for el in root.iter() if el.get("id")} for root in (first, second)]
    assert len(ids[0]) > 2
    assert not ids[0] & ids[1]


def test_bar_desc_summarises_totals_and_the_tallest_bar() -> None:
    series = [Series("completed", [5, 0, 2]), Series("failed", [1, 3, None])]
    root = parse(stacked_bar_chart("runs", "t", ["2026-12-01", "2026-12-02", "2026-12-03"], series, y_label="n"))
    text = desc(root)
    assert "completed: total 7, peak 5 at 12-01" in text
    assert "failed: total 4, peak 3 at 12-02" in text
    assert "all series: total 11, tallest bar 6 at 12-01" in text
    assert y_ticks(root)[-1] >= 6


# ---------------------------------------------------------------- scatter grid


def cells_by_title(root: ET.Element) -> dict[str, ET.Element]:
    return {title_of(r): r for r in root.iter(f"{SVG}rect") if "cell" in r.get("class", "").split()}


def test_diverging_cells_are_drawn_differently_from_agreeing_ones() -> None:
    # 0.3 apart allowed: (5, 8) is 3 cells apart and agrees, (5, 9) is 4 apart and diverges.
    cells = [(8, 8, 40), (5, 8, 6), (5, 9, 5), (12, -3, 1)]
    root = parse(scatter_grid("g", "t", cells, x_label="said", y_label="grounded", divergence=0.3))
    drawn = cells_by_title(root)
    kinds = {title.split(":")[0]: set(rect.get("class", "").split()) - {"cell"} for title, rect in drawn.items()}
    assert kinds == {
        "said 0.8–0.9 · grounded 0.8–0.9": {"agree"},
        "said 0.5–0.6 · grounded 0.8–0.9": {"agree"},
        "said 0.5–0.6 · grounded 0.9–1.0": {"diverge"},
        "said 0.9–1.0 · grounded 0.0–0.1": {"diverge"},  # clamped from (12, -3)
    }
    agree_fills = {r.get("fill") for r in drawn.values() if "agree" in r.get("class", "")}
    diverge_fills = {r.get("fill") for r in drawn.values() if "diverge" in r.get("class", "")}
    assert agree_fills == {"currentColor"}
    assert len(diverge_fills) == 1
    assert next(iter(diverge_fills)).startswith("url(#g-")  # type: ignore[union-attr]
    text = desc(root)
    assert "52 steps in 4 cells" in text
    assert "6 (12%) where said and grounded are more than 0.3 apart, drawn as hatched" in text
    assert "46 within 0.3, drawn as solid" in text


def test_the_biggest_count_gets_the_biggest_square_and_its_number() -> None:
    cells = [(2, 2, 3), (8, 8, 90), (5, 5, 20), (1, 9, 1)]
    root = parse(scatter_grid("g", "t", cells, x_label="S", y_label="G", divergence=0.3))
    sides = {
        title.split(" (")[0].split(": ")[1]: float(r.get("width", "nan")) for title, r in cells_by_title(root).items()
    }
    assert sides["90"] == max(sides.values())
    assert sides["90"] > sides["20"] > sides["3"] >= sides["1"]
    assert "90" in texts(root, "count")
    assert "1" not in texts(root, "count")  # too small a square to hold it
    assert root.find(f".//{SVG}line[@class='diagonal']") is not None
    assert [t for t in texts(root, "x-tick")][::5] == ["0.0", "1.0"]


def test_cells_at_the_same_place_after_clamping_are_merged() -> None:
    root = parse(scatter_grid("g", "t", [(9, 9, 2), (10, 11, 3)], x_label="S", y_label="G", divergence=0.3))
    assert list(cells_by_title(root)) == ["S 0.9–1.0 · G 0.9–1.0: 5 (agreeing)"]


# ---------------------------------------------------------------- empty data


@pytest.mark.parametrize(
    "svg",
    [
        line_chart("e", "t", [], [Series("s", [])], y_label="n"),
        line_chart("e", "t", hours(3), [Series("s", [None, None, None])], y_label="n", limit=5),
        line_chart("e", "t", hours(3), [], y_label="n"),
        stacked_bar_chart("e", "t", hours(3), [Series("s", [0, 0, None])], y_label="n"),
        scatter_grid("e", "t", [], x_label="S", y_label="G", divergence=0.3),
        scatter_grid("e", "t", [(1, 1, 0)], x_label="S", y_label="G", divergence=0.3),
    ],
)
def test_empty_data_says_so_in_text_and_desc(svg: str) -> None:
    root = parse(svg)
    assert "No data in this period" in texts(root, "no-data")
    assert desc(root) == "No data in this period"
    assert not groups(root, "series")
