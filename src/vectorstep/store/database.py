"""Connecting to the database: SQLite (the embedded default) or PostgreSQL.

The repository hands the database a unit of work — a plain function over a SQLAlchemy
`Connection` — and gets its result back; the same code serves both databases:

- PostgreSQL runs it on asyncpg through `run_sync`.
- SQLite runs writes inline on the event loop, one transaction at a time. A local WAL write
  commits in a fraction of a millisecond, far less than the thread hand-offs of an async driver
  (measured: ~1.7 ms per transaction with aiosqlite, ~0.2 ms inline). Writes that tasks queue in
  the same turn of the loop commit together (group commit): under load a transaction carries
  several runs' writes; a unit that fails is retried alone, so it never takes the others down.
  Runs are never stranded by "database is locked": WAL (readers never block the writer), write transactions that take
  the lock at BEGIN (`BEGIN IMMEDIATE`, so writers queue instead of deadlocking on an upgrade),
  and, when another process holds the lock, a short busy wait followed by retries that sleep
  without blocking the loop. Reads run in a worker thread so a large page never stalls the loop.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DBAPIError, OperationalError, SQLAlchemyError
from sqlalchemy.pool import ConnectionPoolEntry, StaticPool

log = logging.getLogger(__name__)

T = TypeVar("T")
Work = Callable[[Connection], T]

# Kept short so the event loop is never blocked for long; `LOCK_PATIENCE_SECONDS` of async retries follow.
BUSY_TIMEOUT_MS = 100
LOCK_PATIENCE_SECONDS = 60.0


class Database(Protocol):
    url: str

    async def write(self, work: Work[T]) -> T:
        """Run `work` in a write transaction, committed when it returns."""
        ...

    async def read(self, work: Work[T]) -> T: ...

    async def rehearse(self, work: Work[Any]) -> None:
        """Run `work` in a write transaction that is rolled back (its statements compiled, nothing kept)."""
        ...

    async def dispose(self) -> None: ...


def connect(url: str) -> Database:
    """A database for `url` (already resolved by the settings: `sqlite:///...` or `postgresql+asyncpg://...`)."""
    if url.startswith("sqlite"):
        return SqliteDatabase(url)
    return PostgresDatabase(url)


class SqliteDatabase:
    def __init__(self, url: str) -> None:
        self.url = url
        if url.endswith(":memory:"):
            shared = create_engine(url, poolclass=StaticPool, connect_args={"check_same_thread": False})
            _prepare(shared, begin="BEGIN IMMEDIATE")
            self._writer = self._reader = shared
        else:
            Path(url.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
            self._writer = create_engine(url, pool_size=1, max_overflow=0, connect_args={"check_same_thread": False})
            self._reader = create_engine(url, pool_size=4, max_overflow=4, connect_args={"check_same_thread": False})
            _prepare(self._writer, begin="BEGIN IMMEDIATE")
            _prepare(self._reader, begin="BEGIN")
        self._pending: list[tuple[Work[Any], asyncio.Future[Any]]] = []
        self._flusher: asyncio.Task[None] | None = None

    async def write(self, work: Work[T]) -> T:
        """Queued, then committed together with the writes other tasks queued meanwhile (group commit)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.append((work, future))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush())
        result: T = await future
        return result

    async def _flush(self) -> None:
        while self._pending:
            batch, self._pending = self._pending, []
            try:
                results = await self._transaction(functools.partial(_all_of, batch))
            except Exception as error:
                if len(batch) == 1:
                    _settle(batch[0][1], error=error)
                    continue
                # One unit failed and the transaction rolled back: each runs alone, so only that one fails.
                for work, future in batch:
                    try:
                        _settle(future, result=await self._transaction(work))
                    except Exception as alone:
                        _settle(future, error=alone)
                continue
            for (_, future), result in zip(batch, results, strict=True):
                _settle(future, result=result)

    async def _transaction(self, work: Work[T]) -> T:
        delay, waited = 0.01, 0.0
        while True:
            try:
                with self._writer.begin() as connection:
                    return work(connection)
            except OperationalError as error:
                if "locked" not in str(error).lower() or waited >= LOCK_PATIENCE_SECONDS:
                    raise
                log.info("database is locked by another process; retrying in %.2fs", delay)
                await asyncio.sleep(delay)
                waited += delay
                delay = min(delay * 2, 1.0)

    async def rehearse(self, work: Work[Any]) -> None:
        with self._writer.connect() as connection, connection.begin() as transaction:
            work(connection)
            transaction.rollback()

    async def read(self, work: Work[T]) -> T:
        if self._reader is self._writer:
            with self._reader.connect() as connection:
                return work(connection)
        return await asyncio.to_thread(self._read, work)

    def _read(self, work: Work[T]) -> T:
        with self._reader.connect() as connection:
            return work(connection)

    async def dispose(self) -> None:
        self._writer.dispose()
        self._reader.dispose()


def _all_of(batch: list[tuple[Work[Any], asyncio.Future[Any]]], connection: Connection) -> list[Any]:
    return [work(connection) for work, _ in batch]


def _settle(future: asyncio.Future[Any], *, result: Any = None, error: Exception | None = None) -> None:
    if future.done():  # its writer was cancelled; the write itself stands
        return
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class PostgresDatabase:
    """asyncpg through SQLAlchemy. A pooled connection is not pinged before each use (a round trip on
    every query); instead, work that meets a connection the server dropped (a restart, a failover) is
    done once more on a fresh one — which is safe, since nothing of it was committed."""

    def __init__(self, url: str) -> None:
        # Imported here: a SQLite installation never pays for the async engine (~8 MB).
        from sqlalchemy.ext.asyncio import create_async_engine  # noqa: PLC0415

        self.url = url
        self._engine = create_async_engine(url, pool_size=10, max_overflow=10, pool_recycle=1800)
        # Reads need no transaction of their own: no BEGIN and ROLLBACK around each one.
        self._reader = self._engine.execution_options(isolation_level="AUTOCOMMIT")

    async def write(self, work: Work[T]) -> T:
        for attempt in (1, 2):
            try:
                async with self._engine.begin() as connection:
                    return await connection.run_sync(work)
            except DBAPIError as error:
                if attempt == 2 or not error.connection_invalidated:
                    raise
        raise AssertionError("unreachable")

    async def rehearse(self, work: Work[Any]) -> None:
        async with self._engine.connect() as connection:
            transaction = await connection.begin()
            try:
                await connection.run_sync(work)
            finally:
                await transaction.rollback()

    async def read(self, work: Work[T]) -> T:
        for attempt in (1, 2):
            try:
                async with self._reader.connect() as connection:
                    return await connection.run_sync(work)
            except DBAPIError as error:
                if attempt == 2 or not error.connection_invalidated:
                    raise
        raise AssertionError("unreachable")

    async def dispose(self) -> None:
        await self._engine.dispose()


def _prepare(engine: Engine, *, begin: str) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
        # Let SQLAlchemy, not the driver, decide when transactions begin (see `_on_begin`).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        for pragma in (
            "PRAGMA journal_mode=WAL",
            "PRAGMA synchronous=NORMAL",
            f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}",
            "PRAGMA foreign_keys=ON",
        ):
            cursor.execute(pragma)
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql(begin)


async def answers(database: Database) -> bool:
    """Whether the database answers a trivial query (the health check)."""
    try:
        await database.read(lambda connection: connection.execute(text("SELECT 1")).scalar_one())
    except SQLAlchemyError:
        return False
    return True
