"""Connecting to the database: SQLite (the embedded default) or PostgreSQL.

SQLite is set up so that runs are never stranded by "database is locked": WAL (readers never
block the writer), a generous busy timeout, and write transactions that take the write lock at
BEGIN (`BEGIN IMMEDIATE`), so two writers queue instead of failing on a lock upgrade. Within the
process, writes go through a single connection and so never contend with each other.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import event
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 30_000
LOCK_RETRIES = 5
T = TypeVar("T")


@dataclass
class Database:
    url: str
    reader: AsyncEngine
    writer: AsyncEngine

    @property
    def is_sqlite(self) -> bool:
        return self.url.startswith("sqlite")

    @asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """A write transaction, committed on success."""
        async with self.writer.begin() as connection:
            yield connection

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.reader.connect() as connection:
            yield connection

    async def retry_locked(self, operation: Callable[[], Awaitable[T]]) -> T:
        """Run a write, retrying if another process held SQLite's lock past the busy timeout."""
        for attempt in range(1, LOCK_RETRIES + 1):
            try:
                return await operation()
            except OperationalError as error:
                if not self.is_sqlite or "locked" not in str(error).lower() or attempt == LOCK_RETRIES:
                    raise
                log.warning("database is locked (attempt %d of %d); retrying", attempt, LOCK_RETRIES)
                await asyncio.sleep(0.05 * 2**attempt)
        raise AssertionError("unreachable")

    async def dispose(self) -> None:
        await self.writer.dispose()
        if self.reader is not self.writer:
            await self.reader.dispose()


def connect(url: str) -> Database:
    """Engines for `url` (already resolved to an async driver by the settings)."""
    if not url.startswith("sqlite"):
        engine = create_async_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=10)
        return Database(url=url, reader=engine, writer=engine)
    if url.endswith(":memory:"):
        engine = create_async_engine(url)
        _sqlite_pragmas(engine, begin="BEGIN IMMEDIATE")
        return Database(url=url, reader=engine, writer=engine)
    writer = create_async_engine(url, pool_size=1, max_overflow=0, pool_timeout=120)
    reader = create_async_engine(url, pool_size=5, max_overflow=5)
    _sqlite_pragmas(writer, begin="BEGIN IMMEDIATE")
    _sqlite_pragmas(reader, begin="BEGIN")
    return Database(url=url, reader=reader, writer=writer)


def _sqlite_pragmas(engine: AsyncEngine, *, begin: str) -> None:
    @event.listens_for(engine.sync_engine, "connect")
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

    @event.listens_for(engine.sync_engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql(begin)
