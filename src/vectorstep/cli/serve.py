"""`vectorstep serve`: the service (webhook, API, UI, /metrics, background runs) in one process."""

from __future__ import annotations

import dataclasses
import ipaddress
import logging
import socket
from pathlib import Path

import click

from vectorstep.cli.common import config_option, reports_errors, run_async, settings_from
from vectorstep.cli.output import Output
from vectorstep.domain.events import RUN_LOGGER
from vectorstep.errors import ConfigError
from vectorstep.spec.settings import Settings, redact_url, resolve_database_url
from vectorstep.store.database import connect
from vectorstep.store.migrate import upgrade


@click.command("serve")
@config_option
@click.option("--host", default=None, help="Address to listen on (default: server.host, 127.0.0.1).")
@click.option("--port", type=click.IntRange(1, 65535), default=None, help="Port (default: server.port, 8080).")
@click.option(
    "--database",
    default=None,
    help="Database URL instead of the settings' (a relative SQLite path is from here), e.g. sqlite:///./vectorstep.db.",
)
@click.option(
    "--workers-inline/--no-workers-inline",
    default=True,
    show_default=True,
    help="PostgreSQL: also drive runs in this process; without, only `vectorstep worker` processes do.",
)
@reports_errors
def serve_command(
    config_path: Path | None, host: str | None, port: int | None, database: str | None, workers_inline: bool
) -> int:
    """Serve the webhook, the API under /api, the UI under /ui and /metrics."""
    settings = settings_from(config_path)
    if database is not None:
        settings = dataclasses.replace(settings, database_url=resolve_database_url(database, Path.cwd()))
    if not workers_inline and settings.database_url.startswith("sqlite"):
        raise ConfigError.single(
            "serve",
            "--no-workers-inline needs PostgreSQL: SQLite is single-process, so `serve` drives its runs itself",
        )
    host = host or settings.spec.server.host
    port = port or settings.spec.server.port
    refuse_open_exposure(settings, host)
    # Imported here: the other commands do not pay for the web stack.
    import uvicorn  # noqa: PLC0415

    from vectorstep.web.app import create_app  # noqa: PLC0415

    logging.getLogger(RUN_LOGGER).setLevel(logging.WARNING)  # nobody else shows runs' warnings here
    run_async(_reachable(settings))  # a database that does not answer is one clear line, not a traceback
    listener = bind_listener(host, port)  # a port in use is one clear line, before anything says it listens
    app = create_app(settings, workers_inline=workers_inline)
    where = f"http://{host}:{port}"
    out = Output(stderr=True)
    database = redact_url(settings.database_url)
    out.line(f"VectorStep on {where}  (UI {where}/ui/, API docs {where}/api/docs, database {database})")
    if not settings.spec.auth.tokens:
        out.line(
            "no auth.tokens configured: open to anyone who can reach this address (localhost only)", style="yellow"
        )
    # The standard asyncio loop, not uvloop: shell checks spawn processes, and CPython's spawn (vfork)
    # costs ~1 ms where uvloop's fork of a large process costs ~6 ms (benchmarks/bench_service.py).
    config = uvicorn.Config(
        app,
        loop="asyncio",
        http="httptools",
        log_level="info",
        access_log=False,
        server_header=False,
        log_config=None,  # uvicorn's lines go through our handler, which masks secrets
    )
    uvicorn.Server(config).run(sockets=[listener])
    return 0


async def _reachable(settings: Settings) -> None:
    database = connect(settings.database_url)
    try:
        await upgrade(database)
    finally:
        await database.dispose()


def bind_listener(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP named, not left 0: asyncio turns Nagle off only on connections of a socket that says it
    # is TCP; with it on, a keep-alive answer's body waits ~40 ms for the ACK of its headers.
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as error:
        listener.close()
        raise ConfigError.single("serve", f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    listener.listen(2048)
    return listener


def refuse_open_exposure(settings: Settings, host: str) -> None:
    """Without tokens the service is open, so it only listens on the loopback interface."""
    if settings.spec.auth.tokens or _loopback(host):
        return
    raise ConfigError(
        [
            settings.problem(
                ("auth", "tokens"),
                f"refusing to listen on {host} without auth tokens: add `auth.tokens: [{{name, token, role, teams}}]` "
                "(tokens from ${VAR}) or listen on 127.0.0.1",
            )
        ]
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
