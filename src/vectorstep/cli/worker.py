"""`vectorstep worker`: a process that takes runs off the PostgreSQL job queue and drives them.

Start as many as you like, on as many machines, beside one or more `vectorstep serve` processes
sharing the database. SIGTERM stops it cleanly: the runs it still drives after
`concurrency.shutdown_grace_seconds` (10) are left to the other workers, which take them up after
their last finished step. SIGHUP loads the project again (so does a reload from the UI or API,
which every process hears).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import signal
from pathlib import Path
from typing import TYPE_CHECKING

import click

from vectorstep.cli.common import config_option, reports_errors, run_async, settings_from
from vectorstep.cli.output import Output
from vectorstep.domain.events import RUN_LOGGER
from vectorstep.errors import ConfigError
from vectorstep.spec.settings import Settings, redact_url
from vectorstep.store.database import connect
from vectorstep.store.migrate import upgrade

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from prometheus_client import CollectorRegistry

    from vectorstep.dispatch.host import RunHost

log = logging.getLogger(__name__)


@click.command("worker")
@config_option
@click.option(
    "--concurrency",
    type=click.IntRange(1, 1000),
    default=None,
    help="Runs this worker drives at once (default: concurrency.max_runs).",
)
@click.option(
    "--metrics-port", type=click.IntRange(1, 65535), default=None, help="Serve this worker's Prometheus metrics."
)
@click.option("--metrics-host", default="127.0.0.1", show_default=True, help="Address of the metrics endpoint.")
@reports_errors
def worker_command(
    config_path: Path | None, concurrency: int | None, metrics_port: int | None, metrics_host: str
) -> int:
    """Drive runs from the job queue (PostgreSQL), beside `vectorstep serve --no-workers-inline` or any serve."""
    settings = settings_from(config_path)
    if settings.database_url.startswith("sqlite"):
        raise ConfigError.single(
            "worker",
            "a worker needs PostgreSQL (database.url: postgresql://…): SQLite is single-process, and "
            "`vectorstep serve` drives its runs itself",
        )
    if concurrency is not None:
        spec = settings.spec.model_copy(
            update={"concurrency": settings.spec.concurrency.model_copy(update={"max_runs": concurrency})}
        )
        settings = dataclasses.replace(settings, spec=spec)
    logging.getLogger(RUN_LOGGER).setLevel(logging.WARNING)  # runs' warnings go to this process's stderr
    run_async(_reachable(settings))  # a database that does not answer is one clear line, not a traceback
    return run_async(_work(settings, metrics_port, metrics_host))


async def _reachable(settings: Settings) -> None:
    database = connect(settings.database_url)
    try:
        await upgrade(database)
    finally:
        await database.dispose()


async def _work(settings: Settings, metrics_port: int | None, metrics_host: str) -> int:
    # Imported here: the other commands do not pay for the job queue.
    from vectorstep.dispatch.host import RunHost  # noqa: PLC0415
    from vectorstep.dispatch.queue import QueueDispatcher  # noqa: PLC0415

    host = RunHost(settings, lambda host: QueueDispatcher(host, work=True), role="worker")
    metrics = _serve_metrics(host.metrics.registry, metrics_host, metrics_port) if metrics_port else None
    out = Output(stderr=True)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for stop_signal in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(stop_signal, stopping.set)
    loop.add_signal_handler(signal.SIGHUP, lambda: asyncio.ensure_future(_reload(host)))
    try:
        await host.start()
        concurrency = settings.spec.concurrency.max_runs
        where = f", metrics on http://{metrics_host}:{metrics_port}/metrics" if metrics_port else ""
        database = redact_url(settings.database_url)
        out.line(f"VectorStep worker {host.name} (database {database}, {concurrency} runs at once{where})")
        await stopping.wait()
        grace = settings.spec.concurrency.shutdown_grace_seconds
        out.line(f"stopping: runs in flight get {grace:g} s to finish, then other workers take them up")
    finally:
        await host.stop()
        if metrics is not None:
            metrics.shutdown()
    return 0


async def _reload(host: RunHost) -> None:
    problems = await host.reload(announce=False)
    log.warning("reloaded on SIGHUP: %d problem(s)", len(problems))


def _serve_metrics(registry: CollectorRegistry, host: str, port: int) -> WSGIServer:
    from prometheus_client import start_http_server  # noqa: PLC0415

    try:
        server, _ = start_http_server(port, host, registry=registry)
    except OSError as error:
        reason = error.strerror or error
        raise ConfigError.single("worker", f"cannot serve metrics on {host}:{port}: {reason}") from None
    return server
