"""What an insights page shows: the period's buckets, headline figures, charts with their data tables, and a
breakdown. Pure: built from the figures the store read, no I/O."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

from markupsafe import Markup

from vectorstep.domain.status import RunStatus
from vectorstep.errors import PayloadError
from vectorstep.spec.pipeline import BudgetSpec
from vectorstep.store.insight_rollup import DIVERGENCE
from vectorstep.store.insights import DIMENSIONS, Breakdown, Dimension, Grain, InsightFilter, Insights, StepSignals
from vectorstep.web.ui.charts import Series, line_chart, stacked_bar_chart
from vectorstep.web.ui.scatter import scatter_grid

PERIODS: dict[str, tuple[Grain, int]] = {
    "24h": ("h", 24),
    "7d": ("h", 168),
    "14d": ("d", 14),
    "30d": ("d", 30),
    "90d": ("d", 90),
}
DEFAULT_PERIOD = "7d"
# What a page about one value of a dimension is broken down by, unless asked otherwise.
NEXT_DIMENSION: dict[Dimension | None, Dimension] = {
    None: "pipeline",
    "pipeline": "step",
    "team": "pipeline",
    "step": "agent",
    "agent": "model",
    "model": "agent",
    "tool": "step",
}
OUTCOMES = [status.value for status in RunStatus]
RATE = "{:.0%}"


@dataclass(frozen=True)
class Period:
    name: str
    grain: Grain
    buckets: list[str]  # every bucket of the period, oldest first

    def where(self, dimension: Dimension | None, name: str | None, teams: tuple[str, ...] | None) -> InsightFilter:
        return InsightFilter(self.buckets[0], self.buckets[-1], self.grain, dimension, name, teams)


def period_of(name: str, now: datetime) -> Period:
    """The last hours or days up to `now`, the current one included; an unknown name is a 400."""
    if name not in PERIODS:
        raise PayloadError(f"unknown period {name!r}; expected one of: {', '.join(PERIODS)}")
    grain, count = PERIODS[name]
    step, fmt = (timedelta(hours=1), "%Y-%m-%d %H") if grain == "h" else (timedelta(days=1), "%Y-%m-%d")
    now = now.astimezone(UTC)
    return Period(name, grain, [(now - step * back).strftime(fmt) for back in range(count - 1, -1, -1)])


def breakdown_of(by: str, dimension: Dimension | None) -> Dimension:
    chosen = by or NEXT_DIMENSION[dimension]
    if chosen not in DIMENSIONS or chosen == dimension:
        others = [name for name in DIMENSIONS if name != dimension]
        raise PayloadError(f"cannot break this page down by {chosen!r}; expected one of: {', '.join(others)}")
    return chosen


@dataclass(frozen=True)
class Chart:
    id: str
    title: str
    svg: Markup
    columns: list[str]  # the data table under the chart: the bucket, then one column per series
    rows: list[list[str]]
    note: str = ""


@dataclass(frozen=True)
class Figure:
    label: str
    value: str
    detail: str = ""


@dataclass(frozen=True)
class BreakdownRow:
    name: str
    cells: list[str]


@dataclass(frozen=True)
class InsightView:
    figures: list[Figure]
    charts: list[Chart]
    breakdown_columns: list[str]
    breakdown: list[BreakdownRow]


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def _rate_text(part: float, whole: float) -> str:
    share = _share(part, whole)
    return "—" if share is None else f"{share:.1%}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


T = TypeVar("T")


def _by_bucket(items: Sequence[T], key: Callable[[T], str]) -> dict[str, T]:
    return {key(item): item for item in items}


def _chart(
    chart_id: str,
    title: str,
    buckets: list[str],
    series: list[Series],
    draw: Callable[[str, str, list[str], list[Series]], str],
    value_format: str = "{:,.0f}",
    note: str = "",
) -> Chart:
    def cell(value: float | None) -> str:
        return "—" if value is None else value_format.format(value)

    rows = [[bucket, *[cell(line.values[index]) for line in series]] for index, bucket in enumerate(buckets)]
    return Chart(
        chart_id,
        title,
        Markup(draw(chart_id, title, buckets, series)),  # noqa: S704 - built from numbers and escaped text only
        ["bucket", *[line.name for line in series]],
        rows,
        note,
    )


def _lines(
    y_label: str,
    *,
    y_format: str = "{:,.0f}",
    y_max: float | None = None,
    limit: float | None = None,
    limit_label: str = "",
) -> Callable[[str, str, list[str], list[Series]], str]:
    def draw(chart_id: str, title: str, buckets: list[str], series: list[Series]) -> str:
        return line_chart(
            chart_id,
            title,
            buckets,
            series,
            y_label=y_label,
            y_format=y_format,
            y_max=y_max,
            limit=limit,
            limit_label=limit_label,
        )

    return draw


def _stacked(y_label: str) -> Callable[[str, str, list[str], list[Series]], str]:
    def draw(chart_id: str, title: str, buckets: list[str], series: list[Series]) -> str:
        return stacked_bar_chart(chart_id, title, buckets, series, y_label=y_label)

    return draw


def insight_view(insights: Insights, period: Period, budget: BudgetSpec | None) -> InsightView:
    buckets = period.buckets
    figures: list[Figure] = []
    charts: list[Chart] = []
    signals = _by_bucket(insights.signals or [], lambda item: item.bucket)
    if insights.outcomes is not None:
        counts: dict[tuple[str, str], int] = {(bucket, status): n for bucket, status, n in insights.outcomes}
        present = [status for status in OUTCOMES if any(key[1] == status for key in counts)]
        series = [Series(status, [counts.get((bucket, status), 0) for bucket in buckets]) for status in present]
        total = sum(counts.values())
        figures.append(Figure("runs", f"{total:,}"))
        charts.append(_chart("outcomes", "Runs by outcome", buckets, series, _stacked("runs")))
    elif insights.signals is not None:
        series = [
            Series("escalated", [_step(signals, bucket).escalated for bucket in buckets]),
            Series("went on", [_step(signals, bucket).steps - _step(signals, bucket).escalated for bucket in buckets]),
        ]
        charts.append(_chart("outcomes", "Steps: escalated or went on", buckets, series, _stacked("steps")))
    if insights.signals is not None:
        figures.extend(_signal_figures(insights.signals))
        charts.extend(_signal_charts(signals, buckets))
    if insights.scatter is not None:
        graded = sum(n for _, _, n in insights.scatter)
        charts.append(
            Chart(
                "scatter",
                "Self-report (S) against grounding (G)",
                Markup(  # noqa: S704 - built from numbers and escaped text only
                    scatter_grid(
                        "scatter",
                        "Self-report (S) against grounding (G)",
                        insights.scatter,
                        x_label="S — what the agent said",
                        y_label="G — what its tool results back",
                        divergence=DIVERGENCE,
                    )
                ),
                ["S", "G", "steps"],
                [
                    [f"{s / 10:.1f}–{(s + 1) / 10:.1f}", f"{g / 10:.1f}–{(g + 1) / 10:.1f}", f"{n:,}"]
                    for s, g, n in sorted(insights.scatter)
                ],
                f"{graded:,} steps with both S and G; hatched cells are more than {DIVERGENCE:.1f} apart.",
            )
        )
    if insights.approvals is not None:
        figures.extend(_approval_figures(insights))
        charts.append(_approval_chart(insights, buckets))
    if insights.spend is not None or insights.signals is not None:  # a tool's calls have no spend of their own
        charts.extend(_spend_charts(insights, signals, buckets, budget))
    if insights.tools or insights.tool_series:
        figures.extend(_tool_figures(insights))
        charts.append(_tool_chart(insights, buckets))
    columns, rows = _breakdown_rows(insights.breakdown)
    return InsightView(figures, charts, columns, rows)


_NO_STEPS = StepSignals("", 0, 0.0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.0)


def _step(signals: dict[str, StepSignals], bucket: str) -> StepSignals:
    return signals.get(bucket, _NO_STEPS)


def _signal_figures(rows: list[StepSignals]) -> list[Figure]:
    def total(name: str) -> float:
        return float(sum(getattr(row, name) for row in rows))

    steps = total("steps")
    mean = _share(total("trust_sum"), total("trusted"))
    return [
        Figure("steps", f"{int(steps):,}"),
        Figure("escalation rate", _rate_text(total("escalated"), steps), f"{int(total('escalated')):,} escalated"),
        Figure("mean combined trust", "—" if mean is None else f"{mean:.2f}"),
        Figure(
            "S–G divergence",
            _rate_text(total("divergent"), total("graded")),
            f"|S − G| > {DIVERGENCE:.1f} in {int(total('divergent')):,} of {int(total('graded')):,}",
        ),
        Figure(
            "verifier overrides",
            _rate_text(total("overridden"), total("verified")),
            f"{int(total('overridden')):,} of {int(total('verified')):,} verified",
        ),
        Figure(
            "check failures",
            _rate_text(total("check_failures"), total("checked")),
            f"{int(total('check_failures')):,} of {int(total('checked')):,} checked",
        ),
    ]


def _signal_charts(signals: dict[str, StepSignals], buckets: list[str]) -> list[Chart]:
    def rate(part: str, whole: str) -> list[float | None]:
        found = []
        for bucket in buckets:
            row = _step(signals, bucket)
            found.append(_share(getattr(row, part), getattr(row, whole)))
        return found

    trust = [
        Series("mean combined trust", rate("trust_sum", "trusted")),
        Series("escalation rate", rate("escalated", "steps")),
    ]
    disagreement = [
        Series("S–G divergence", rate("divergent", "graded")),
        Series("verifier overrides", rate("overridden", "verified")),
        Series("check failures", rate("check_failures", "checked")),
    ]
    share = _lines("share of steps", y_format=RATE, y_max=1.0)
    return [
        _chart(
            "trust",
            "Trust and escalation",
            buckets,
            trust,
            _lines("trust / share", y_format="{:.2f}", y_max=1.0),
            "{:.2f}",
        ),
        _chart("disagreement", "Where the signals disagree", buckets, disagreement, share, "{:.1%}"),
    ]


def _approval_figures(insights: Insights) -> list[Figure]:
    rows = insights.approvals or []
    asked = sum(row.asked for row in rows)
    decided = sum(row.decided for row in rows)
    timed_out = sum(row.timed_out for row in rows)
    longest = max((row.latency_max_s for row in rows if row.decided), default=None)
    return [
        Figure(
            "approval wait",
            _duration(_share(sum(row.latency_sum_s for row in rows), decided)),
            f"mean of {decided:,} decided by people · longest {_duration(longest)}",
        ),
        Figure("approvals asked", f"{asked:,}", f"{timed_out:,} decided by the clock"),
    ]


def _approval_chart(insights: Insights, buckets: list[str]) -> Chart:
    rows = _by_bucket(insights.approvals or [], lambda item: item.bucket)
    mean = [
        None if bucket not in rows else _minutes(_share(rows[bucket].latency_sum_s, rows[bucket].decided))
        for bucket in buckets
    ]
    longest = [
        _minutes(rows[bucket].latency_max_s) if bucket in rows and rows[bucket].decided else None for bucket in buckets
    ]
    series = [Series("mean wait", mean), Series("longest wait", longest)]
    return _chart(
        "approvals",
        "Approvals: how long a person took to decide",
        buckets,
        series,
        _lines("minutes", y_format="{:,.1f}"),
        "{:,.1f}",
        "Minutes from the question to a person's decision; decisions by the clock are left out.",
    )


def _minutes(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / 60


def _spend_charts(
    insights: Insights, signals: dict[str, StepSignals], buckets: list[str], budget: BudgetSpec | None
) -> list[Chart]:
    if insights.spend is not None:
        spend = _by_bucket(insights.spend, lambda item: item.bucket)
        tokens: list[float | None] = [spend[bucket].tokens if bucket in spend else 0 for bucket in buckets]
        cost: list[float | None] = [spend[bucket].cost if bucket in spend else 0.0 for bucket in buckets]
        largest_tokens: list[float | None] = [
            spend[bucket].max_tokens if bucket in spend else None for bucket in buckets
        ]
        largest_cost: list[float | None] = [spend[bucket].max_cost if bucket in spend else None for bucket in buckets]
    else:
        tokens = [_step(signals, b).input_tokens + _step(signals, b).output_tokens for b in buckets]
        cost = [_step(signals, bucket).cost for bucket in buckets]
        largest_tokens = largest_cost = []
    charts = [
        _chart("tokens", "Tokens", buckets, [Series("tokens", tokens)], _lines("tokens")),
        _chart("cost", "Cost (USD)", buckets, [Series("cost", cost)], _lines("USD", y_format="{:,.2f}"), "{:,.4f}"),
    ]
    if largest_tokens:
        limit = budget.max_tokens if budget is not None else None
        charts.append(
            _chart(
                "run-tokens",
                "Tokens of the largest run",
                buckets,
                [Series("largest run", largest_tokens)],
                _lines("tokens", limit=limit, limit_label="budget"),
                note="" if limit is None else f"The dashed line is the pipeline's budget: max_tokens {limit:,}.",
            )
        )
        usd = budget.max_usd if budget is not None else None
        charts.append(
            _chart(
                "run-cost",
                "Cost of the largest run (USD)",
                buckets,
                [Series("largest run", largest_cost)],
                _lines("USD", y_format="{:,.3f}", limit=usd, limit_label="budget"),
                "{:,.4f}",
                note="" if usd is None else f"The dashed line is the pipeline's budget: max_usd {usd:,.2f}.",
            )
        )
    return charts


def _tool_figures(insights: Insights) -> list[Figure]:
    calls = sum(tool.calls for tool in insights.tools)
    errors = sum(tool.errors for tool in insights.tools)
    denied = sum(tool.denied for tool in insights.tools)
    return [Figure("tool calls", f"{calls:,}", f"{_rate_text(errors, calls)} failed · {denied:,} denied")]


def _tool_chart(insights: Insights, buckets: list[str]) -> Chart:
    rows = _by_bucket(insights.tool_series, lambda item: item.name)

    def figure(bucket: str, pick: Callable[[int, int, int], int]) -> int:
        row = rows.get(bucket)
        return 0 if row is None else pick(row.calls, row.errors, row.denied)

    series = [
        Series("answered", [figure(b, lambda calls, errors, denied: calls - errors) for b in buckets]),
        Series("failed", [figure(b, lambda calls, errors, denied: errors - denied) for b in buckets]),
        Series("denied", [figure(b, lambda calls, errors, denied: denied) for b in buckets]),
    ]
    return _chart("tools", "Tool calls and errors", buckets, series, _stacked("calls"))


def _breakdown_rows(rows: list[Breakdown]) -> tuple[list[str], list[BreakdownRow]]:
    if not rows:
        return [], []
    if all(row.steps == 0 and row.tool_calls for row in rows):
        columns = ["tool calls", "failed", "error rate"]
        return columns, [
            BreakdownRow(
                row.name, [f"{row.tool_calls:,}", f"{row.tool_errors:,}", _rate_text(row.tool_errors, row.tool_calls)]
            )
            for row in rows
        ]
    with_runs = any(row.runs is not None for row in rows)
    columns = [*(["runs"] if with_runs else []), "steps", "escalated", "mean trust", "S–G divergence", "tokens", "cost"]
    found = []
    for row in rows:
        mean = _share(row.trust_sum, row.trusted)
        cells = [
            *([f"{row.runs or 0:,}"] if with_runs else []),
            f"{row.steps:,}",
            _rate_text(row.escalated, row.steps),
            "—" if mean is None else f"{mean:.2f}",
            _rate_text(row.divergent, row.graded),
            f"{row.tokens:,}",
            f"{row.cost:,.4f}",
        ]
        found.append(BreakdownRow(row.name, cells))
    return columns, found


def trend_chart(signals: list[StepSignals], buckets: list[str]) -> Markup:
    """The dashboard's trust trend: mean combined trust and escalation rate per day."""
    found = _by_bucket(signals, lambda item: item.bucket)
    series = [
        Series("mean combined trust", [_share(_step(found, b).trust_sum, _step(found, b).trusted) for b in buckets]),
        Series("escalation rate", [_share(_step(found, b).escalated, _step(found, b).steps) for b in buckets]),
    ]
    return Markup(  # noqa: S704 - built from numbers and escaped text only
        line_chart(
            "trust-trend",
            "Trust trend, last 14 days",
            buckets,
            series,
            y_label="trust / share",
            y_format="{:.2f}",
            y_max=1.0,
        )
    )
