"""The insight rows: figures per hour and per day, recomputed from runs, steps and approvals when marked.

A write that changes a run, a step or an approval marks the hour its figures belong to (the hour the
run or step started, or the approval was asked) in `insight_dirty_hours`: one insert that does
nothing when the hour is already marked, so the hot path pays one statement and nobody contends for
a counter row. Before the insights are read, each marked hour is recomputed from the rows of that
hour (a range of an index: an hour's runs, not the history) and the day that holds it is summed
again from its hours. The reader takes the marks off first, in its own transaction: a write that
commits while it recomputes marks its hour again and is counted by the next reader.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Float,
    Integer,
    Select,
    and_,
    case,
    delete,
    func,
    insert,
    literal,
    literal_column,
    select,
)
from sqlalchemy.dialects import postgresql, sqlite

from vectorstep.domain.approvals import TIMEOUT
from vectorstep.store.tables import (
    approvals,
    insight_approvals,
    insight_dirty_hours,
    insight_runs,
    insight_scatter,
    insight_steps,
    insight_tools,
    pipeline_runs,
    pipeline_steps,
    step_tool_calls,
)

DIVERGENCE = 0.3  # |S − G| above this: the agent's self-report and the evidence disagree
HOUR_FORMAT = "%Y-%m-%d %H"
_RUNS, _STEPS, _TOOLS, _APPROVALS = pipeline_runs.c, pipeline_steps.c, step_tool_calls.c, approvals.c
RECOMPUTE_LOCK = 7_340_215  # the advisory lock a recompute holds on PostgreSQL (any constant of ours)
TABLES = (insight_runs, insight_steps, insight_scatter, insight_tools, insight_approvals)


def hour_of(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime(HOUR_FORMAT)


def mark_hour(connection: Connection, moment: datetime) -> None:
    connection.execute(_mark(connection.dialect.name), {"hour": hour_of(moment)})


def mark_run_hour(connection: Connection, run_id: str) -> None:
    """The hour of a run whose status or spending changes (read in the same transaction)."""
    started = connection.execute(select(_RUNS.started_at).where(_RUNS.id == run_id)).scalar_one_or_none()
    if started is not None:
        mark_hour(connection, started)


def mark_approval_hour(connection: Connection, approval_id: str) -> None:
    asked = connection.execute(select(_APPROVALS.created_at).where(_APPROVALS.id == approval_id)).scalar_one_or_none()
    if asked is not None:
        mark_hour(connection, asked)


@functools.cache
def _mark(dialect: str) -> Any:
    statement = (
        postgresql.insert(insight_dirty_hours) if dialect == "postgresql" else sqlite.insert(insight_dirty_hours)
    )
    return statement.on_conflict_do_nothing(index_elements=["hour"])


def pending_hours(connection: Connection) -> int:
    return int(connection.execute(select(func.count()).select_from(insight_dirty_hours)).scalar_one())


def take_marks(connection: Connection, limit: int | None = None) -> list[str]:
    """Take the marks off the newest `limit` marked hours (all, without one); the hours this reader took.

    Its own short transaction: a writer that marks an hour again meanwhile inserts a fresh mark instead
    of waiting for the recompute (on PostgreSQL an insert would wait on a mark deleted but uncommitted).
    """
    query = select(insight_dirty_hours.c.hour).order_by(insight_dirty_hours.c.hour.desc())
    wanted = [row[0] for row in connection.execute(query if limit is None else query.limit(limit))]
    if not wanted:
        return []
    # RETURNING says which this reader took: a concurrent one took the rest.
    taken = delete(insight_dirty_hours).where(insight_dirty_hours.c.hour.in_(wanted))
    return sorted(row[0] for row in connection.execute(taken.returning(insight_dirty_hours.c.hour)))


def recompute(connection: Connection, hours: list[str]) -> None:
    """The figures of `hours` and of the days that hold them, from the raw rows."""
    if connection.dialect.name == "postgresql":
        # Two readers that took the same hour (marked again in between) must not interleave: each deletes
        # what the other inserted before it committed, and the second insert would break the primary key.
        connection.execute(select(func.pg_advisory_xact_lock(RECOMPUTE_LOCK)))
    for hour in hours:
        _recompute_hour(connection, hour)
    for day in sorted({hour[:10] for hour in hours}):
        _recompute_day(connection, day)


def mark_hours(connection: Connection, hours: list[str]) -> None:
    """Marks put back: a recompute that failed leaves its hours to the next reader."""
    if hours:
        connection.execute(_mark(connection.dialect.name), [{"hour": hour} for hour in hours])


def _recompute_hour(connection: Connection, hour: str) -> None:
    start = datetime.strptime(hour, HOUR_FORMAT).replace(tzinfo=UTC)
    end = start + timedelta(hours=1)
    head = (literal("h"), literal(hour))
    dialect = connection.dialect.name
    for table, query in (
        (insight_runs, _run_figures(head, start, end)),
        (insight_steps, _step_figures(head, start, end)),
        (insight_scatter, _scatter_figures(head, start, end, dialect)),
        (insight_tools, _tool_figures(head, start, end)),
        (insight_approvals, _approval_figures(head, start, end, dialect)),
    ):
        connection.execute(delete(table).where(table.c.grain == "h", table.c.bucket == hour))
        connection.execute(insert(table).from_select([column.name for column in table.columns], query))


def _recompute_day(connection: Connection, day: str) -> None:
    for table in TABLES:
        connection.execute(delete(table).where(table.c.grain == "d", table.c.bucket == day))
        keys = [column for column in table.primary_key.columns if column.name not in ("grain", "bucket")]
        figures = [column for column in table.columns if not column.primary_key]
        summed = [
            (func.max if column.name.startswith(("max_", "latency_max")) else func.sum)(column) for column in figures
        ]
        query = (
            select(literal("d"), literal(day), *keys, *summed)
            .where(table.c.grain == "h", table.c.bucket >= f"{day} 00", table.c.bucket <= f"{day} 23")
            .group_by(*keys)
        )
        connection.execute(insert(table).from_select([column.name for column in table.columns], query))


# Constants in grouped expressions are written inline: PostgreSQL would see two bound parameters in the
# SELECT and the GROUP BY as two different expressions.
_EMPTY: ColumnElement[str] = literal_column("''")
_TEN: ColumnElement[int] = literal_column("10")
_NINE: ColumnElement[int] = literal_column("9")


def _text(column: Any) -> ColumnElement[str]:
    return func.coalesce(column, _EMPTY)


def _zero(column: Any) -> ColumnElement[int]:
    return func.coalesce(column, literal_column("0"))


def _count_if(condition: ColumnElement[bool]) -> ColumnElement[int]:
    return func.sum(case((condition, 1), else_=0))


Head = tuple[ColumnElement[str], ColumnElement[str]]  # the grain and the bucket, as literals


def _run_figures(head: Head, start: datetime, end: datetime) -> Select[Any]:
    tokens = _RUNS.input_tokens + _RUNS.output_tokens
    keys = (_RUNS.pipeline_name, _text(_RUNS.team), _RUNS.status)
    return (
        select(
            *head,
            *keys,
            func.count(),
            func.sum(_RUNS.input_tokens),
            func.sum(_RUNS.output_tokens),
            func.coalesce(func.sum(_RUNS.cost), 0.0),
            func.max(tokens),
            func.coalesce(func.max(_RUNS.cost), 0.0),
        )
        .where(_RUNS.started_at >= start, _RUNS.started_at < end)
        .group_by(*keys)
    )


def _step_keys() -> tuple[Any, ...]:
    return (_RUNS.pipeline_name, _text(_RUNS.team), _STEPS.step_name, _text(_STEPS.agent), _text(_STEPS.model))


def _steps_of(query: Select[Any], start: datetime, end: datetime) -> Select[Any]:
    return query.join_from(pipeline_steps, pipeline_runs, _RUNS.id == _STEPS.run_id).where(
        _STEPS.started_at >= start, _STEPS.started_at < end
    )


def _step_figures(head: Head, start: datetime, end: datetime) -> Select[Any]:
    s, v, e, g = (
        _STEPS.primary_confidence,
        _STEPS.verifier_confidence,
        _STEPS.effective_confidence,
        _STEPS.grounding_score,
    )
    graded = and_(s.is_not(None), g.is_not(None))
    query = select(
        *head,
        *_step_keys(),
        func.count(),
        func.coalesce(func.sum(_STEPS.combined_trust), 0.0),
        func.count(_STEPS.combined_trust),
        _count_if(_STEPS.status == "escalated"),
        _count_if(graded),
        _count_if(and_(graded, func.abs(s - g) > DIVERGENCE + 1e-9)),  # 1.0 − 0.7 is 0.30000000000000004
        func.count(v),
        _count_if(and_(v.is_not(None), e < s)),
        func.count(_STEPS.deterministic_passed),
        _count_if(_STEPS.deterministic_passed.is_(False)),
        # The step's whole spend, as its run counts it: primary, verifier and judge calls.
        func.sum(_STEPS.input_tokens + _zero(_STEPS.verifier_input_tokens) + _zero(_STEPS.grounding_input_tokens)),
        func.sum(_STEPS.output_tokens + _zero(_STEPS.verifier_output_tokens) + _zero(_STEPS.grounding_output_tokens)),
        func.coalesce(func.sum(_STEPS.cost), 0.0),
    )
    return _steps_of(query, start, end).group_by(*_step_keys())


def _tenth(column: Any, dialect: str) -> ColumnElement[int]:
    """The cell of a score in tenths, 1.0 in the top cell (PostgreSQL's CAST rounds where SQLite's truncates)."""
    scaled = column * _TEN
    if dialect == "postgresql":
        return func.least(func.cast(func.floor(scaled), Integer), _NINE)
    return func.min(func.cast(scaled, Integer), _NINE)


def _scatter_figures(head: Head, start: datetime, end: datetime, dialect: str) -> Select[Any]:
    cells = (_tenth(_STEPS.primary_confidence, dialect), _tenth(_STEPS.grounding_score, dialect))
    query = select(*head, *_step_keys(), *cells, func.count()).where(
        _STEPS.primary_confidence.is_not(None), _STEPS.grounding_score.is_not(None)
    )
    return _steps_of(query, start, end).group_by(*_step_keys(), *cells)


def _tool_figures(head: Head, start: datetime, end: datetime) -> Select[Any]:
    keys = (*_step_keys(), _TOOLS.tool_name)
    return (
        select(*head, *keys, func.sum(_TOOLS.calls), func.sum(_TOOLS.errors), func.sum(_TOOLS.denied))
        .join_from(step_tool_calls, pipeline_runs, _RUNS.id == _TOOLS.run_id)
        .join(pipeline_steps, and_(_STEPS.run_id == _TOOLS.run_id, _STEPS.step_name == _TOOLS.step_name))
        .where(_TOOLS.started_at >= start, _TOOLS.started_at < end)
        .group_by(*keys)
    )


def _latency_seconds(dialect: str) -> ColumnElement[float]:
    if dialect == "postgresql":
        return func.cast(func.extract("epoch", _APPROVALS.decided_at - _APPROVALS.created_at), Float)
    return (func.julianday(_APPROVALS.decided_at) - func.julianday(_APPROVALS.created_at)) * 86400.0


def _approval_figures(head: Head, start: datetime, end: datetime, dialect: str) -> Select[Any]:
    by_person = and_(_APPROVALS.decided_at.is_not(None), _APPROVALS.decided_by != TIMEOUT)
    latency = case((by_person, _latency_seconds(dialect)), else_=None)
    keys = (_APPROVALS.pipeline_name, _text(_APPROVALS.team), _APPROVALS.step_name)
    return (
        select(
            *head,
            *keys,
            func.count(),
            _count_if(by_person),
            _count_if(_APPROVALS.decided_by == TIMEOUT),
            func.coalesce(func.sum(latency), 0.0),
            func.coalesce(func.max(latency), 0.0),
        )
        .where(_APPROVALS.created_at >= start, _APPROVALS.created_at < end)
        .group_by(*keys)
    )
