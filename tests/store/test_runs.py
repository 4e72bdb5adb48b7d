"""The store: runs, steps and the log round-trip on SQLite and PostgreSQL; migrations; locking."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import Connection, func, select
from sqlalchemy.exc import IntegrityError

from vectorstep.domain.records import LogEntry, RunRecord, StepRecord
from vectorstep.domain.status import RunStatus, StepStatus
from vectorstep.domain.trace import TraceEvent
from vectorstep.errors import NotFoundError
from vectorstep.store.database import Database, connect
from vectorstep.store.migrate import HEAD_REVISION, current_revision, upgrade
from vectorstep.store.runs import RunFilter, RunRepository
from vectorstep.store.tables import metadata

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def run_record(run_id: str, *, pipeline: str = "checkout-5xx", started: datetime = T0, **fields: object) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        pipeline=pipeline,
        status=RunStatus.RUNNING,
        stage=str(fields.pop("stage", "testing")),
        started_at=started,
        source="alertmanager",
        team=fields.pop("team", "sre"),  # type: ignore[arg-type]
        context={"summary": "5xx up", "labels": {"service": "checkout"}, "fingerprint": "fp1"},
    )


def log(run_id: str, message: str, step: str | None = None) -> LogEntry:
    return LogEntry(run_id=run_id, ts=T0, level="info", event="test", message=message, step=step)


def step_record(run_id: str, name: str = "investigate", **fields: object) -> StepRecord:
    base: dict[str, object] = {
        "run_id": run_id,
        "name": name,
        "index": 0,
        "status": StepStatus.COMPLETED,
        "executor": "gateway",
        "started_at": T0,
        "finished_at": T0 + timedelta(seconds=2),
        "duration_ms": 2000.5,
        "agent": "investigator",
        "model": "scripted",
        "provider": "scripted",
        "agent_version": "0123456789ab",
        "prompt": "Investigate checkout",
        "prompt_hash": "feedfacefeedface",
        "raw_output": '{"confidence": 0.9}',
        "output": {"confidence": 0.9, "summary": "deploy 8f3a broke it", "next_step_context": "", "deploy": "8f3a"},
        "confidence": 0.9,
        "effective_confidence": 0.9,
        "combined_trust": 0.9,
        "trace": (
            TraceEvent(type="tool_call", seq=1, ts=T0.isoformat(), call_id="c1", name="m__q", args={"q": "up"}),
            TraceEvent(
                type="tool_result", seq=2, ts=T0.isoformat(), call_id="c1", name="m__q", content="1", is_error=False
            ),
        ),
        "input_tokens": 120,
        "output_tokens": 30,
        "cost": 0.0012,
        "attempts": 2,
        "iterations": 1,
        "warnings": ("undefined in template: 'x' is undefined",),
        "gate_outcome": "passed",
    }
    base.update(fields)
    return StepRecord(**base)  # type: ignore[arg-type]


async def test_a_run_round_trips_with_its_steps_trace_and_log(runs: RunRepository) -> None:
    await runs.insert_run(run_record("r1"), log("r1", "started"))
    written = step_record("r1")
    await runs.insert_step(written, log("r1", "step done", "investigate"))
    await runs.finish_run(
        "r1",
        status=RunStatus.ESCALATED,
        finished_at=T0 + timedelta(seconds=3),
        error="low trust",
        input_tokens=120,
        output_tokens=30,
        cost=0.0012,
        log=log("r1", "finished"),
    )
    run = await runs.get_run("r1", with_log=True)
    assert run.status is RunStatus.ESCALATED and run.error == "low trust"
    assert run.finished_at == T0 + timedelta(seconds=3) and run.started_at.tzinfo is not None
    assert run.context["labels"] == {"service": "checkout"}
    (step,) = run.steps
    assert step == written
    assert [entry.message for entry in run.log] == ["started", "step done", "finished"]


async def test_listing_filters_and_pages_newest_first(runs: RunRepository) -> None:
    for n in range(6):
        pipeline = "a" if n % 2 else "b"
        await runs.insert_run(
            run_record(f"run{n}", pipeline=pipeline, started=T0 + timedelta(minutes=n)), log(f"run{n}", "x")
        )
    await runs.finish_run(
        "run5",
        status=RunStatus.FAILED,
        finished_at=T0,
        error="x",
        input_tokens=0,
        output_tokens=0,
        cost=None,
        log=log("run5", "f"),
    )
    newest = await runs.list_runs(RunFilter(), limit=2)
    assert [run.run_id for run in newest] == ["run5", "run4"]
    assert [run.run_id for run in await runs.list_runs(RunFilter(), limit=2, offset=2)] == ["run3", "run2"]
    assert [run.run_id for run in await runs.list_runs(RunFilter(pipeline="a"))] == ["run5", "run3", "run1"]
    assert [run.run_id for run in await runs.list_runs(RunFilter(status="failed"))] == ["run5"]
    since = await runs.list_runs(RunFilter(since=T0 + timedelta(minutes=4)))
    assert [run.run_id for run in since] == ["run5", "run4"]
    assert await runs.count_runs() == 6


async def test_run_ids_resolve_from_a_unique_prefix(runs: RunRepository) -> None:
    await runs.insert_run(run_record("abc123"), log("abc123", "x"))
    await runs.insert_run(run_record("abd456"), log("abd456", "x"))
    assert await runs.resolve_run_id("abc") == "abc123"
    with pytest.raises(NotFoundError, match="several"):
        await runs.resolve_run_id("ab")
    with pytest.raises(NotFoundError, match="no run"):
        await runs.resolve_run_id("zzz")
    with pytest.raises(NotFoundError):
        await runs.get_run("zzz")


async def test_a_parked_parent_is_continued_only_once_its_child_at_the_current_step_has_ended(
    runs: RunRepository,
) -> None:
    await runs.insert_run(run_record("parent"), log("parent", "x"))
    await runs.insert_step(step_record("parent", "triage"), log("parent", "triage done"))
    done_child = replace(run_record("child-1"), parent_run_id="parent", parent_step="triage")
    await runs.insert_run(done_child, log("child-1", "x"))
    await runs.finish_run(
        "child-1",
        status=RunStatus.COMPLETED,
        finished_at=T0,
        error=None,
        input_tokens=0,
        output_tokens=0,
        cost=None,
        log=log("child-1", "done"),
    )
    waiting_child = replace(run_record("child-2"), parent_run_id="parent", parent_step="diagnose")
    await runs.insert_run(waiting_child, log("child-2", "x"))
    await runs.set_status("child-2", RunStatus.WAITING, log("child-2", "waits"))
    await runs.set_status("parent", RunStatus.WAITING, log("parent", "waits for child-2"))
    later = T0 + timedelta(minutes=5)
    # child-1 ended, but its step (triage) finished long ago; child-2, of the current step, still waits.
    assert await runs.parents_to_continue(later) == []
    await runs.finish_run(
        "child-2",
        status=RunStatus.ESCALATED,
        finished_at=T0,
        error="escalated",
        input_tokens=0,
        output_tokens=0,
        cost=None,
        log=log("child-2", "escalated"),
    )
    assert await runs.parents_to_continue(later) == ["parent"]
    parent = await runs.get_run("parent")
    assert [(link.run_id, link.step, link.status) for link in parent.children] == [
        ("child-1", "triage", "completed"),
        ("child-2", "diagnose", "escalated"),
    ]
    assert (await runs.get_run("child-2")).parent_run_id == "parent"
    await runs.claim("parent", "someone", later + timedelta(seconds=30), later)
    assert await runs.parents_to_continue(later) == []  # a live process holds it


async def test_a_step_row_is_never_half_written(runs: RunRepository) -> None:
    await runs.insert_run(run_record("r1"), log("r1", "x"))
    await runs.insert_step(step_record("r1"), log("r1", "first"))
    with pytest.raises(IntegrityError):
        await runs.insert_step(step_record("r1"), log("r1", "duplicate step and its log line"))
    run = await runs.get_run("r1", with_log=True)
    assert len(run.steps) == 1
    assert "duplicate step and its log line" not in [entry.message for entry in run.log]


async def test_a_rehearsal_of_a_runs_writes_leaves_nothing(runs: RunRepository, database: Database) -> None:
    """A fresh service rehearses a run's writes so its first run finds their statements compiled:
    every table holds what it held before, and real runs are stored as ever after it."""

    def rows(connection: Connection) -> dict[str, int]:
        count = select(func.count())
        return {
            table.name: connection.execute(count.select_from(table)).scalar_one() for table in metadata.sorted_tables
        }

    before = await database.read(rows)
    await runs.rehearse(T0)
    assert await database.read(rows) == before
    assert await runs.list_runs(RunFilter()) == []
    await runs.insert_run(run_record("r1"), log("r1", "started"))
    await runs.insert_step(step_record("r1"), log("r1", "step done", "investigate"))
    assert [step.name for step in (await runs.get_run("r1")).steps] == [step_record("r1").name]


async def test_migrations_are_idempotent(database: Database) -> None:
    assert await current_revision(database) == HEAD_REVISION
    assert await upgrade(database) == (HEAD_REVISION, HEAD_REVISION)


WRITER = """
import asyncio, sys
from datetime import UTC, datetime
from vectorstep.domain.records import LogEntry
from vectorstep.store.database import connect
from vectorstep.store.runs import RunRepository

async def main():
    runs = RunRepository(connect(sys.argv[1]))
    for n in range(int(sys.argv[2])):
        await runs.append_log(LogEntry("shared", datetime.now(UTC), "info", "other-process", f"line {n}"))
    await runs.database.dispose()

asyncio.run(main())
"""


async def test_two_processes_writing_one_sqlite_file_never_fail_with_database_is_locked(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    database = connect(url)
    await upgrade(database)
    runs = RunRepository(database)
    await runs.insert_run(run_record("shared"), log("shared", "start"))
    other = subprocess.Popen([sys.executable, "-c", WRITER, url, "300"], stderr=subprocess.PIPE, text=True)
    for n in range(300):
        await runs.insert_step(step_record("shared", name=f"s{n}", index=n), log("shared", f"mine {n}"))
    _, stderr = await asyncio.to_thread(other.communicate)
    assert other.returncode == 0, stderr
    run = await runs.get_run("shared", with_log=True)
    await database.dispose()
    assert len(run.steps) == 300
    assert sum(1 for entry in run.log if entry.event == "other-process") == 300


async def test_a_database_of_an_older_release_is_upgraded_keeping_its_runs(database_url: str) -> None:
    from alembic import command
    from alembic.config import Config
    from sqlalchemy import text

    from vectorstep.store.migrate import MIGRATIONS

    database = connect(database_url)

    def to_first_release(connection) -> None:  # type: ignore[no-untyped-def]
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        command.upgrade(config, "0001")
        connection.execute(
            text(
                "INSERT INTO pipeline_runs (id, pipeline_name, status, stage, source, context, input_tokens,"
                " output_tokens, started_at, updated_at) VALUES ('old-run', 'p', 'completed', 'testing', 'manual',"
                " '{}', 1, 2, '2026-01-01 00:00:00', '2026-01-01 00:00:00')"
            )
        )

    await database.write(to_first_release)
    assert await current_revision(database) == "0001"
    assert await upgrade(database) == ("0001", HEAD_REVISION)
    run = await RunRepository(database).get_run("old-run")
    await database.dispose()
    assert run.status is RunStatus.COMPLETED and run.input_tokens == 1 and run.spec is None


async def test_a_connection_the_server_dropped_is_replaced_without_failing_the_work(
    database_url: str, runs: RunRepository
) -> None:
    if not database_url.startswith("postgresql"):
        pytest.skip("a server that drops connections: PostgreSQL")
    import asyncpg

    await runs.insert_run(run_record("kept"), log("kept", "x"))
    assert (await runs.get_run("kept")).run_id == "kept"  # the pool now holds open connections
    admin = await asyncpg.connect(database_url.replace("postgresql+asyncpg", "postgresql"))
    try:  # as a restart or a failover would: every other connection to the database is cut
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    finally:
        await admin.close()
    assert (await runs.get_run("kept")).run_id == "kept"  # a read, on a fresh connection
    await runs.insert_run(run_record("after"), log("after", "x"))  # and a write
    assert (await runs.get_run("after")).run_id == "after"
