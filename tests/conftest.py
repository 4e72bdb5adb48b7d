"""Shared fixtures: a project folder, databases (SQLite always, PostgreSQL when configured), the CLI."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

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


def database_params() -> list[object]:
    params: list[object] = ["sqlite"]
    marks = [] if os.environ.get(PG_ENV) else [pytest.mark.skip(reason=f"{PG_ENV} is not set")]
    params.append(pytest.param("postgresql", marks=[pytest.mark.postgres, *marks]))
    return params


@pytest.fixture(params=database_params())
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database: a new SQLite file, or PostgreSQL's `test` database emptied."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'vectorstep.db'}"
        return
    url = os.environ[PG_ENV]
    asyncio.run(reset_postgres(url))
    yield url


@pytest.fixture
def postgres_url() -> str:
    """PostgreSQL's `test` database, emptied: for what only PostgreSQL does (the job queue, workers)."""
    url = os.environ.get(PG_ENV)
    if not url:
        pytest.skip(f"{PG_ENV} is not set")
    asyncio.run(reset_postgres(url))
    return url


async def reset_postgres(url: str) -> None:
    from sqlalchemy import Connection, text

    database = connect(url)

    def reset(connection: Connection) -> None:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))

    await database.write(reset)
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


def run_cli(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
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


class RecordingServer:
    """A real HTTP server on 127.0.0.1 that records requests and answers from a queue of responses."""

    def __init__(self, *, keep_alive: bool = False) -> None:
        """`keep_alive`: answer in HTTP/1.1 and keep connections open, as model providers do."""
        import http.server
        import json as json_module
        import threading

        self.requests: list[dict[str, Any]] = []
        self.responses: list[tuple[int, str] | tuple[int, str, dict[str, str]]] = []  # (status, body[, headers])
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                try:
                    parsed: object = json_module.loads(body) if body else None
                except ValueError:
                    parsed = body
                server.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers),
                        "body": parsed,
                        "client_port": self.client_address[1],
                    }
                )
                status, text, *extra = server.responses.pop(0) if server.responses else (200, '{"ok": true}')
                payload = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for name, value in (extra[0] if extra else {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle

            def log_message(self, format: str, *args: object) -> None:
                return

        if keep_alive:
            Handler.protocol_version = "HTTP/1.1"
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def http_server() -> Iterator[RecordingServer]:
    server = RecordingServer()
    yield server
    server.close()
