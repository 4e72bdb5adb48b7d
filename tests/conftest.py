"""Shared fixtures: a project folder, databases (SQLite always, PostgreSQL when configured), the CLI."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from vectorstep.store.database import Database, connect
from vectorstep.store.migrate import upgrade
from vectorstep.store.runs import RunRepository
from vectorstep.testing import ProjectDir

TESTS = Path(__file__).parent
TOOL_SERVER = TESTS / "fixtures" / "tool_server.py"
PG_ENV = "VECTORSTEP_TEST_DATABASE_URL"


@pytest.fixture
def project(tmp_path: Path) -> ProjectDir:
    return ProjectDir(tmp_path / "project")


def tool_server_config(name: str = "tools", *extra_args: str) -> dict[str, object]:
    return {name: {"command": sys.executable, "args": [str(TOOL_SERVER), *extra_args]}}


def _database_params() -> list[object]:
    params: list[object] = ["sqlite"]
    marks = [] if os.environ.get(PG_ENV) else [pytest.mark.skip(reason=f"{PG_ENV} is not set")]
    params.append(pytest.param("postgresql", marks=[pytest.mark.postgres, *marks]))
    return params


@pytest.fixture(params=_database_params())
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database: a new SQLite file, or PostgreSQL's `test` database emptied."""
    if request.param == "sqlite":
        yield f"sqlite+aiosqlite:///{tmp_path / 'vectorstep.db'}"
        return
    url = os.environ[PG_ENV]
    asyncio.run(_reset_postgres(url))
    yield url


async def _reset_postgres(url: str) -> None:
    from sqlalchemy import text

    database = connect(url)
    async with database.write() as connection:
        await connection.execute(text("DROP SCHEMA public CASCADE"))
        await connection.execute(text("CREATE SCHEMA public"))
    await database.dispose()


@pytest.fixture
async def database(database_url: str) -> AsyncIterator[Database]:
    database = connect(database_url)
    await upgrade(database)
    yield database
    await database.dispose()


@pytest.fixture
async def runs(database: Database) -> RunRepository:
    return RunRepository(database)


def run_cli(*args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    """The real `vectorstep` command in a subprocess, as a user runs it."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("VECTORSTEP_")}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "vectorstep", *args],
        cwd=cwd,
        env=environment,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
