"""Runs, steps and the run log: rows in, domain records out."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, RowMapping, func, insert, or_, select, update
from sqlalchemy.exc import IntegrityError

from vectorstep.domain.records import DedupRule, LogEntry, RunLink, RunRecord, StepRecord
from vectorstep.domain.status import RUN_ENDED, RunStatus, StepStatus
from vectorstep.domain.trace import TraceEvent
from vectorstep.errors import NotFoundError
from vectorstep.store.artifacts import insert_artifacts
from vectorstep.store.calibration_cells import count_new_step, step_columns
from vectorstep.store.database import Database
from vectorstep.store.dedup import claim_dedup
from vectorstep.store.insight_rollup import mark_hour, mark_run_hour
from vectorstep.store.rows import log_entry, log_row, run_record, run_row, step_record, step_row
from vectorstep.store.tables import pipeline_run_events, pipeline_runs, pipeline_steps
from vectorstep.store.tool_calls import insert_tool_calls
from vectorstep.store.versions import record_versions


@dataclass(frozen=True)
class RunFilter:
    status: str | None = None
    pipeline: str | None = None
    team: str | None = None
    stage: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    teams: tuple[str, ...] | None = None  # only these teams' runs (None: every run)


class RunRepository:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def insert_run(
        self, run: RunRecord, log: LogEntry, *, lease: tuple[str, datetime | None] | None = None
    ) -> None:
        """The run row and its first log line; with a dedup rule, refused (DuplicateRunError) atomically.

        `lease` (owner, until): the process that will drive the run holds it from the first write
        (until None: a queue worker's, alive as long as its worker is).
        """

        def work(connection: Connection) -> None:
            _insert_run(connection, run, log, lease)

        try:
            await self.database.write(work)
        except IntegrityError:
            if run.dedup is None:
                raise
            await self.database.write(work)  # a concurrent twin took the key first: now we see it and refuse

    async def append_log(self, log: LogEntry) -> None:
        await self.database.write(lambda connection: connection.execute(insert(pipeline_run_events), [log_row(log)]))

    async def insert_step(self, record: StepRecord, log: LogEntry, *, pipeline: str | None = None) -> None:
        """The step's row, its artifacts, the versions it ran with and its log line, in one transaction:
        never half a step. `pipeline`: the run's (looked up when not given)."""

        await self.database.write(lambda connection: _insert_step(connection, record, log, pipeline))

    async def finish_run(
        self,
        run_id: str,
        *,
        status: RunStatus,
        finished_at: datetime,
        error: str | None,
        input_tokens: int,
        output_tokens: int,
        cost: float | None,
        log: LogEntry,
        release: bool = False,
    ) -> None:
        """Record how the run ended (or stopped, for now); `release` also gives up its lease."""
        values: dict[str, Any] = {
            "status": status.value,
            "finished_at": finished_at if status.is_terminal else None,
            "error": error,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cost": cost,
            "updated_at": finished_at,
        }
        if release:
            values |= {"lease_owner": None, "lease_expires_at": None}
        await self.database.write(lambda connection: _finish_run(connection, run_id, values, log))

    async def rehearse(self, now: datetime) -> None:
        """A run's writes — the run, a step with a tool call, its end — in a transaction that is rolled
        back. It leaves nothing, but a fresh process's first run finds their statements compiled
        (SQLAlchemy compiles each on first use: about a millisecond apiece)."""
        run_id = f"rehearsal-{uuid.uuid4().hex}"
        run = RunRecord(
            run_id, "rehearsal", RunStatus.RUNNING, "production", now, "rehearsal", dedup=DedupRule(run_id, 60)
        )
        call = TraceEvent("tool_call", 1, now.isoformat(), call_id="c1", name="rehearsal__tool", args={})
        result = TraceEvent("tool_result", 2, now.isoformat(), call_id="c1", name="rehearsal__tool", content="")
        # as a production step of a trust-gated agent is stored: calibration columns, versions, tool calls
        step = StepRecord(
            run_id,
            "rehearsal",
            0,
            StepStatus.COMPLETED,
            "agent",
            now,
            now,
            0.0,
            agent="rehearsal",
            agent_version="rehearsal",
            prompt="rehearsal",
            prompt_hash="rehearsal",
            effective_confidence=1.0,
            deterministic_passed=True,
            trace=(call, result),
        )
        log = LogEntry(run_id, now, "info", "rehearsal", "rehearsal")
        ended = {"status": RunStatus.COMPLETED.value, "finished_at": now, "error": None, "updated_at": now}

        def work(connection: Connection) -> None:
            _insert_run(connection, run, log, ("rehearsal", now))
            _insert_step(connection, step, log, run.pipeline)
            _finish_run(connection, run_id, ended | {"input_tokens": 0, "output_tokens": 0, "cost": None}, log)

        await self.database.rehearse(work)

    async def claim(self, run_id: str, owner: str, until: datetime | None, now: datetime) -> bool:
        """Take the run's lease if nobody holds a live one: only one process drives a run."""
        columns = pipeline_runs.c
        query = (
            update(pipeline_runs)
            .where(
                columns.id == run_id,
                or_(columns.lease_owner.is_(None), columns.lease_owner == owner, columns.lease_expires_at < now),
            )
            .values(lease_owner=owner, lease_expires_at=until)
        )
        return await self.database.write(lambda connection: int(connection.execute(query).rowcount) == 1)

    async def take_over(self, run_id: str, gone: str, owner: str, until: datetime | None) -> bool:
        """Take the lease from `gone`, a holder known to have stopped, unless someone took it first."""
        columns = pipeline_runs.c
        query = (
            update(pipeline_runs)
            .where(columns.id == run_id, columns.lease_owner == gone)
            .values(lease_owner=owner, lease_expires_at=until)
        )
        return await self.database.write(lambda connection: int(connection.execute(query).rowcount) == 1)

    async def renew(self, owner: str, until: datetime) -> None:
        query = update(pipeline_runs).where(pipeline_runs.c.lease_owner == owner).values(lease_expires_at=until)
        await self.database.write(lambda connection: connection.execute(query))

    async def release(self, run_id: str, owner: str) -> None:
        columns = pipeline_runs.c
        query = (
            update(pipeline_runs)
            .where(columns.id == run_id, columns.lease_owner == owner)
            .values(lease_owner=None, lease_expires_at=None)
        )
        await self.database.write(lambda connection: connection.execute(query))

    async def lease(self, run_id: str) -> tuple[str | None, datetime | None]:
        columns = pipeline_runs.c
        query = select(columns.lease_owner, columns.lease_expires_at).where(columns.id == run_id)
        row = await self.database.read(lambda connection: connection.execute(query).first())
        return (row[0], row[1]) if row is not None else (None, None)

    async def unattended(self, status: RunStatus, now: datetime, limit: int = 100) -> list[str]:
        """Runs in `status` that no live process drives (no lease, or one that ran out)."""
        columns = pipeline_runs.c
        query = (
            select(columns.id)
            .where(columns.status == status.value)
            .where(or_(columns.lease_owner.is_(None), columns.lease_expires_at < now))
            .order_by(columns.started_at)
            .limit(limit)
        )
        return await self.database.read(lambda connection: [str(row[0]) for row in connection.execute(query)])

    async def parents_to_continue(self, now: datetime, limit: int = 100) -> list[str]:
        """Waiting runs nobody drives whose sub-pipeline run has ended while the step that started it
        has not finished: the parent continues at that step, which reads the child's outcome."""
        parent, child, steps = pipeline_runs.alias("parent"), pipeline_runs.alias("child"), pipeline_steps
        step_done = (
            select(steps.c.id).where(steps.c.run_id == parent.c.id, steps.c.step_name == child.c.parent_step).exists()
        )
        query = (
            select(parent.c.id)
            .distinct()
            .join(child, child.c.parent_run_id == parent.c.id)
            .where(parent.c.status == RunStatus.WAITING.value)
            .where(or_(parent.c.lease_owner.is_(None), parent.c.lease_expires_at < now))
            .where(child.c.status.in_([status.value for status in RUN_ENDED]))
            .where(~step_done)
            .limit(limit)
        )
        return await self.database.read(lambda connection: [str(row[0]) for row in connection.execute(query)])

    async def leases(self, status: RunStatus, now: datetime, limit: int = 10_000) -> list[tuple[str, str]]:
        """Runs in `status` whose lease has not run out, with its holder."""
        columns = pipeline_runs.c
        query = (
            select(columns.id, columns.lease_owner)
            .where(columns.status == status.value, columns.lease_owner.is_not(None), columns.lease_expires_at >= now)
            .order_by(columns.started_at)
            .limit(limit)
        )
        return await self.database.read(
            lambda connection: [(str(row[0]), str(row[1])) for row in connection.execute(query)]
        )

    async def set_status(
        self,
        run_id: str,
        status: RunStatus,
        log: LogEntry,
        *,
        spent: tuple[int, int, float | None] | None = None,
        release: str | None = None,
    ) -> None:
        """The run's status; with `spent` (input tokens, output tokens, cost), what it has spent so far.

        `release`: in the same transaction, the lease is given up if this owner holds it (a run
        parked without its lease must never be left half-parked by a crash)."""

        def work(connection: Connection) -> None:
            values: dict[str, Any] = {"status": status.value, "updated_at": log.ts}
            if spent is not None:
                values.update(input_tokens=spent[0], output_tokens=spent[1], cost=spent[2])
            columns = pipeline_runs.c
            connection.execute(update(pipeline_runs).where(columns.id == run_id).values(**values))
            if release is not None:
                connection.execute(
                    update(pipeline_runs)
                    .where(columns.id == run_id, columns.lease_owner == release)
                    .values(lease_owner=None, lease_expires_at=None)
                )
            connection.execute(insert(pipeline_run_events), [log_row(log)])
            mark_run_hour(connection, run_id)

        await self.database.write(work)

    async def log_events_after(self, last: Mapping[str, int], limit: int = 500) -> list[tuple[str, int, str]]:
        """(run id, log line id, event) of the lines written to these runs' logs after the ids given."""
        if not last:
            return []
        events = pipeline_run_events.c
        query = (
            select(events.run_id, events.id, events.event)
            .where(or_(*[(events.run_id == run_id) & (events.id > after) for run_id, after in last.items()]))
            .order_by(events.id)
            .limit(limit)
        )
        return await self.database.read(
            lambda connection: [(str(row[0]), int(row[1]), str(row[2])) for row in connection.execute(query)]
        )

    async def resolve_run_id(self, given: str) -> str:
        """A whole run id, or a unique prefix of one (as shown by `runs list`)."""

        def work(connection: Connection) -> list[str]:
            query = select(pipeline_runs.c.id).where(pipeline_runs.c.id.startswith(given, autoescape=True)).limit(2)
            return [str(row[0]) for row in connection.execute(query)]

        found = await self.database.read(work)
        if len(found) == 1:
            return found[0]
        if not found:
            raise NotFoundError(f"no run {given!r}")
        raise NotFoundError(f"{given!r} matches several runs; give more of the id")

    async def get_run(self, run_id: str, *, with_log: bool = False) -> RunRecord:
        def work(connection: Connection) -> RunRecord | None:
            row = connection.execute(select(pipeline_runs).where(pipeline_runs.c.id == run_id)).mappings().first()
            if row is None:
                return None
            steps = connection.execute(
                select(pipeline_steps).where(pipeline_steps.c.run_id == run_id).order_by(pipeline_steps.c.id)
            ).mappings()
            log_rows: Sequence[RowMapping] = []
            if with_log:
                log_rows = (
                    connection.execute(
                        select(pipeline_run_events)
                        .where(pipeline_run_events.c.run_id == run_id)
                        .order_by(pipeline_run_events.c.id)
                    )
                    .mappings()
                    .all()
                )
            runs = pipeline_runs.c
            children = connection.execute(
                select(runs.id, runs.pipeline_name, runs.status, runs.parent_step)
                .where(runs.parent_run_id == run_id)
                .order_by(runs.started_at, runs.id)
            ).all()
            record = run_record(row, [step_record(step) for step in steps], [log_entry(entry) for entry in log_rows])
            links = tuple(RunLink(child.id, child.pipeline_name, child.status, child.parent_step) for child in children)
            return replace(record, children=links)

        found = await self.database.read(work)
        if found is None:
            raise NotFoundError(f"no run {run_id!r}")
        return found

    async def list_runs(self, where: RunFilter, *, limit: int = 50, offset: int = 0) -> list[RunRecord]:
        """Newest first, without steps, log or the pipeline spec (a list never needs them)."""
        columns = pipeline_runs.c
        query = select(*[column for column in columns if column.name != "spec"])
        for column, value in (
            (columns.status, where.status),
            (columns.pipeline_name, where.pipeline),
            (columns.team, where.team),
            (columns.stage, where.stage),
        ):
            if value is not None:
                query = query.where(column == value)
        if where.teams is not None:
            query = query.where(columns.team.in_(where.teams))
        if where.since is not None:
            query = query.where(columns.started_at >= where.since)
        if where.until is not None:
            query = query.where(columns.started_at < where.until)
        query = query.order_by(columns.started_at.desc(), columns.id.desc()).limit(limit).offset(offset)
        return await self.database.read(
            lambda connection: [run_record(row, [], []) for row in connection.execute(query).mappings()]
        )

    async def status_counts(self, since: datetime, teams: tuple[str, ...] | None = None) -> dict[str, int]:
        """How many runs started since `since`, by status (of `teams` only, when given)."""
        columns = pipeline_runs.c
        query = select(columns.status, func.count()).where(columns.started_at >= since).group_by(columns.status)
        if teams is not None:
            query = query.where(columns.team.in_(teams))
        return await self.database.read(
            lambda connection: {str(row[0]): int(row[1]) for row in connection.execute(query)}
        )

    async def count_runs(self) -> int:
        return await self.database.read(
            lambda connection: int(connection.execute(select(func.count()).select_from(pipeline_runs)).scalar_one())
        )


def _pipeline_of(connection: Connection, run_id: str) -> str:
    return str(connection.execute(select(pipeline_runs.c.pipeline_name).where(pipeline_runs.c.id == run_id)).scalar())


def _insert_run(
    connection: Connection, run: RunRecord, log: LogEntry, lease: tuple[str, datetime | None] | None
) -> None:
    if run.dedup is not None:
        claim_dedup(connection, run)
    leased = {"lease_owner": lease[0], "lease_expires_at": lease[1]} if lease else {}
    connection.execute(insert(pipeline_runs).values(**run_row(run), **leased))
    connection.execute(insert(pipeline_run_events).values(log_row(log)))
    mark_hour(connection, run.started_at)


def _insert_step(connection: Connection, record: StepRecord, log: LogEntry, pipeline: str | None) -> None:
    calibration = step_columns(connection, record)
    row = step_row(record)
    if calibration:
        row.update(
            calibration_bucket=calibration["calibration_bucket"],
            calibration_cell=calibration["calibration_cell"],
            calibration_label=calibration["label"],
        )
    connection.execute(insert(pipeline_steps), [row])
    count_new_step(connection, calibration)
    insert_artifacts(connection, record)
    insert_tool_calls(connection, record)
    record_versions(connection, record, pipeline or _pipeline_of(connection, record.run_id))
    connection.execute(insert(pipeline_run_events), [log_row(log)])
    mark_hour(connection, record.started_at)


def _finish_run(connection: Connection, run_id: str, values: Mapping[str, Any], log: LogEntry) -> None:
    connection.execute(update(pipeline_runs).where(pipeline_runs.c.id == run_id).values(**values))
    connection.execute(insert(pipeline_run_events), [log_row(log)])
    mark_run_hour(connection, run_id)
