"""Insights over a period (docs/insights.md), read from the insight rows: per hour or per day, never a scan of
the runs. Each figure is one GROUP BY over a range of the primary key (grain, bucket); marked hours are
recomputed first (`insight_rollup`)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import ColumnElement, Connection, Table, func, select

from vectorstep.store.database import Database
from vectorstep.store.insight_rollup import mark_hours, pending_hours, recompute, take_marks
from vectorstep.store.tables import insight_approvals, insight_runs, insight_scatter, insight_steps, insight_tools

Dimension = Literal["pipeline", "step", "agent", "model", "tool", "team"]
DIMENSIONS: tuple[Dimension, ...] = ("pipeline", "step", "agent", "model", "tool", "team")
Grain = Literal["h", "d"]
REFRESH_PER_READ = 72  # marked hours recomputed before one page (the rest: by the next, or `db upgrade`)
BREAKDOWN_ROWS = 200


@dataclass(frozen=True)
class InsightFilter:
    first: str  # the first bucket of the period ('YYYY-MM-DD HH' or 'YYYY-MM-DD'), inclusive
    last: str  # the last, inclusive
    grain: Grain
    dimension: Dimension | None = None
    name: str | None = None  # the value of the dimension the page is about
    teams: tuple[str, ...] | None = None  # only these teams' figures (None: everyone's)


@dataclass(frozen=True)
class StepSignals:
    """One bucket of steps: how many, how trusted, how often each signal disagreed or failed."""

    bucket: str
    steps: int
    trust_sum: float
    trusted: int
    escalated: int
    graded: int
    divergent: int
    verified: int
    overridden: int
    checked: int
    check_failures: int
    input_tokens: int
    output_tokens: int
    cost: float


@dataclass(frozen=True)
class RunSpend:
    bucket: str
    runs: int
    tokens: int
    cost: float
    max_tokens: int  # of one run
    max_cost: float


@dataclass(frozen=True)
class ToolFigures:
    name: str  # a tool, or a bucket
    calls: int
    errors: int
    denied: int


@dataclass(frozen=True)
class ApprovalFigures:
    bucket: str
    asked: int
    decided: int  # by a person
    timed_out: int
    latency_sum_s: float  # of the decisions people made
    latency_max_s: float


@dataclass(frozen=True)
class Breakdown:
    """One value of a dimension over the whole period."""

    name: str  # "" for steps with no agent or model, runs with no team
    runs: int | None  # for pipelines and teams
    steps: int
    escalated: int
    trust_sum: float
    trusted: int
    graded: int
    divergent: int
    tokens: int
    cost: float
    tool_calls: int = 0  # for tools: calls and errors instead of steps
    tool_errors: int = 0


@dataclass(frozen=True)
class Insights:
    outcomes: list[tuple[str, str, int]] | None  # (bucket, status, runs); None where runs do not apply
    spend: list[RunSpend] | None
    signals: list[StepSignals] | None
    scatter: list[tuple[int, int, int]] | None  # (S cell, G cell, steps), in tenths
    tools: list[ToolFigures]
    tool_series: list[ToolFigures]
    approvals: list[ApprovalFigures] | None
    breakdown: list[Breakdown]
    pending_hours: int = 0  # marked hours not yet summed into these figures


_KEYS: dict[str, tuple[str, ...]] = {
    insight_runs.name: ("pipeline", "team"),
    insight_steps.name: ("pipeline", "team", "step", "agent", "model"),
    insight_scatter.name: ("pipeline", "team", "step", "agent", "model"),
    insight_tools.name: ("pipeline", "team", "step", "agent", "model", "tool"),
    insight_approvals.name: ("pipeline", "team", "step"),
}


def _applies(table: Table, where: InsightFilter) -> bool:
    return where.dimension is None or where.dimension in _KEYS[table.name]


def _scope(table: Table, where: InsightFilter) -> list[ColumnElement[bool]]:
    found = [table.c.grain == where.grain, table.c.bucket >= where.first, table.c.bucket <= where.last]
    if where.teams is not None:
        found.append(table.c.team.in_(where.teams))
    if where.dimension is not None and where.name is not None:
        found.append(table.c[where.dimension] == where.name)
    return found


def _sums(table: Table, *names: str) -> list[ColumnElement[Any]]:
    return [func.sum(table.c[name]) for name in names]


_SIGNAL_FIGURES = (
    "steps",
    "trust_sum",
    "trusted",
    "escalated",
    "graded",
    "divergent",
    "verified",
    "overridden",
    "checked",
    "check_failures",
    "input_tokens",
    "output_tokens",
    "cost",
)


def _signals(connection: Connection, where: InsightFilter) -> list[StepSignals]:
    table = insight_steps
    bucket = table.c.bucket
    query = select(bucket, *_sums(table, *_SIGNAL_FIGURES)).where(*_scope(table, where)).group_by(bucket)
    rows = connection.execute(query.order_by(bucket))
    return [_step_signals(row) for row in rows]


def _step_signals(row: Any) -> StepSignals:
    n = [int(value) for value in row[1:13]]  # every count; trust_sum (2) and cost (13) are read as floats
    return StepSignals(
        row[0], n[0], float(row[2]), n[2], n[3], n[4], n[5], n[6], n[7], n[8], n[9], n[10], n[11], float(row[13])
    )


def _outcomes(connection: Connection, where: InsightFilter) -> list[tuple[str, str, int]]:
    table = insight_runs
    query = (
        select(table.c.bucket, table.c.status, func.sum(table.c.runs))
        .where(*_scope(table, where))
        .group_by(table.c.bucket, table.c.status)
    )
    return [(row[0], row[1], int(row[2])) for row in connection.execute(query)]


def _spend(connection: Connection, where: InsightFilter) -> list[RunSpend]:
    table = insight_runs
    query = (
        select(
            table.c.bucket,
            func.sum(table.c.runs),
            func.sum(table.c.input_tokens + table.c.output_tokens),
            func.sum(table.c.cost),
            func.max(table.c.max_tokens),
            func.max(table.c.max_cost),
        )
        .where(*_scope(table, where))
        .group_by(table.c.bucket)
        .order_by(table.c.bucket)
    )
    return [
        RunSpend(row[0], int(row[1]), int(row[2]), float(row[3]), int(row[4]), float(row[5]))
        for row in connection.execute(query)
    ]


def _scatter(connection: Connection, where: InsightFilter) -> list[tuple[int, int, int]]:
    table = insight_scatter
    cells = (table.c.s_cell, table.c.g_cell)
    query = select(*cells, func.sum(table.c.steps)).where(*_scope(table, where)).group_by(*cells)
    return [(int(row[0]), int(row[1]), int(row[2])) for row in connection.execute(query)]


def _tools(connection: Connection, where: InsightFilter, by: Any) -> list[ToolFigures]:
    table = insight_tools
    calls = func.sum(table.c.calls).label("calls")
    query = select(by, calls, *_sums(table, "errors", "denied")).where(*_scope(table, where)).group_by(by)
    rows = connection.execute(query.order_by(by if by is table.c.bucket else calls.desc()).limit(BREAKDOWN_ROWS))
    return [ToolFigures(row[0], int(row[1]), int(row[2]), int(row[3])) for row in rows]


def _approvals(connection: Connection, where: InsightFilter) -> list[ApprovalFigures]:
    table = insight_approvals
    query = (
        select(
            table.c.bucket,
            *_sums(table, "asked", "decided", "timed_out", "latency_sum_s"),
            func.max(table.c.latency_max_s),
        )
        .where(*_scope(table, where))
        .group_by(table.c.bucket)
        .order_by(table.c.bucket)
    )
    return [
        ApprovalFigures(row[0], int(row[1]), int(row[2]), int(row[3]), float(row[4]), float(row[5]))
        for row in connection.execute(query)
    ]


def _breakdown(connection: Connection, where: InsightFilter, by: Dimension) -> list[Breakdown]:
    """Every value of `by` in the period (within the page's own narrowing), busiest first."""
    if by == "tool" or where.dimension == "tool":  # tool calls by tool, or a tool's calls by step, agent, model…
        return [
            Breakdown(tool.name, None, 0, 0, 0.0, 0, 0, 0, 0, 0.0, tool.calls, tool.errors)
            for tool in _tools(connection, where, insight_tools.c[by])
        ]
    table = insight_steps
    if not _applies(table, where):
        return []
    column = table.c[by]
    steps = func.sum(table.c.steps).label("n")
    query = (
        select(
            column,
            steps,
            *_sums(table, "escalated", "trust_sum", "trusted", "graded", "divergent"),
            func.sum(table.c.input_tokens + table.c.output_tokens),
            func.sum(table.c.cost),
        )
        .where(*_scope(table, where))
        .group_by(column)
        .order_by(steps.desc())
        .limit(BREAKDOWN_ROWS)
    )
    runs: dict[str, int] = {}
    if by in _KEYS[insight_runs.name] and _applies(insight_runs, where):
        runs_query = (
            select(insight_runs.c[by], func.sum(insight_runs.c.runs))
            .where(*_scope(insight_runs, where))
            .group_by(insight_runs.c[by])
        )
        runs = {row[0]: int(row[1]) for row in connection.execute(runs_query)}
    return [
        Breakdown(
            row[0],
            runs.get(row[0], 0) if by in ("pipeline", "team") else None,
            int(row[1]),
            int(row[2]),
            float(row[3]),
            int(row[4]),
            int(row[5]),
            int(row[6]),
            int(row[7]),
            float(row[8]),
        )
        for row in connection.execute(query)
    ]


class InsightRepository:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def refresh(self, limit: int | None = REFRESH_PER_READ) -> int:
        """Recompute marked hours (at most `limit`, newest first); how many are still marked."""
        if not await self.database.read(pending_hours):
            return 0  # nothing marked: no write transaction (on SQLite it would queue behind the runs' writes)
        hours = await self.database.write(lambda connection: take_marks(connection, limit))
        if hours:
            try:
                await self.database.write(lambda connection: recompute(connection, hours))
            except BaseException:
                await asyncio.shield(self.database.write(lambda connection: mark_hours(connection, hours)))
                raise
        return await self.database.read(pending_hours)

    async def insights(self, where: InsightFilter, breakdown: Dimension | None) -> Insights:
        """Every figure of one insights page."""
        left = await self.refresh()

        def work(connection: Connection) -> Insights:
            return Insights(
                outcomes=_outcomes(connection, where) if _applies(insight_runs, where) else None,
                spend=_spend(connection, where) if _applies(insight_runs, where) else None,
                signals=_signals(connection, where) if _applies(insight_steps, where) else None,
                scatter=_scatter(connection, where) if _applies(insight_scatter, where) else None,
                tools=_tools(connection, where, insight_tools.c.tool),
                tool_series=_tools(connection, where, insight_tools.c.bucket),
                approvals=_approvals(connection, where) if _applies(insight_approvals, where) else None,
                breakdown=[] if breakdown is None else _breakdown(connection, where, breakdown),
                pending_hours=left,
            )

        return await self.database.read(work)

    async def trust_trend(self, where: InsightFilter) -> list[StepSignals]:
        """The dashboard's trend: trust and escalations of steps per bucket."""
        await self.refresh()
        return await self.database.read(lambda connection: _signals(connection, where))

    async def pending(self) -> int:
        return await self.database.read(pending_hours)
