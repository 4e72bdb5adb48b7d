"""What every command shares: finding the config, opening the store, turning errors into exit codes."""

from __future__ import annotations

import asyncio
import functools
import logging
import signal
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import click

from vectorstep.cli.output import Output
from vectorstep.domain.events import RUN_LOGGER
from vectorstep.domain.secrets import SECRETS
from vectorstep.domain.status import EXIT_INVALID_INPUT
from vectorstep.errors import (
    ConfigError,
    DatabaseUnreachable,
    NotFoundError,
    PayloadError,
    RequestRefused,
    StoreError,
    VectorStepError,
)
from vectorstep.spec.settings import Settings, find_config, load_settings, redact_url
from vectorstep.store.database import Database, connect
from vectorstep.store.migrate import upgrade
from vectorstep.store.runs import RunRepository

P = ParamSpec("P")
T = TypeVar("T")

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path, dir_okay=False),
    default=None,
    help="vectorstep.yaml to use (default: $VECTORSTEP_CONFIG, then ./vectorstep.yaml, then built-in defaults).",
)


# What commands that only read the history use of the settings: the rest is not read, so a variable
# set only where the service runs (a Slack token, say) need not be set for `runs list`.
HISTORY_KEYS = ("database", "calibration", "public_vars")


def settings_from(config_path: Path | None, *, only: tuple[str, ...] | None = None) -> Settings:
    return load_settings(find_config(config_path), only=only)


async def open_runs(settings: Settings) -> RunRepository:
    """Connect to the configured database and bring its schema up to date."""
    database: Database = connect(settings.database_url)
    try:
        await upgrade(database)
    except DatabaseUnreachable:  # it says which database and why already
        await database.dispose()
        raise
    except Exception as error:
        await database.dispose()
        raise StoreError(f"cannot use the database {redact_url(settings.database_url)}: {error}") from error
    return RunRepository(database)


def run_async(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a command's work; SIGTERM stops it as cleanly as Ctrl-C (runs are marked, leases released)."""

    async def main() -> T:
        task = asyncio.current_task()
        if task is not None:
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await coroutine

    try:
        return asyncio.run(main())
    except asyncio.CancelledError:
        raise KeyboardInterrupt from None


def reports_errors(command: Callable[P, int | None]) -> Callable[P, None]:
    """User mistakes become a clear message and exit 2; never a traceback."""

    @functools.wraps(command)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> None:
        errors = Output(stderr=True)
        try:
            code = command(*args, **kwargs)
        except ConfigError as error:
            for problem in error.problems:
                errors.line(str(problem), style="red")
            raise SystemExit(EXIT_INVALID_INPUT) from None
        except (PayloadError, NotFoundError, DatabaseUnreachable, RequestRefused) as error:
            errors.line(f"error: {error}", style="red")
            raise SystemExit(EXIT_INVALID_INPUT) from None
        except VectorStepError as error:
            errors.line(f"error: {error}", style="red")
            raise SystemExit(1) from None
        except KeyboardInterrupt:
            errors.line("interrupted", style="yellow")
            raise SystemExit(130) from None
        raise SystemExit(code or 0)

    return wrapper


class MaskSecrets(logging.Filter):
    """Every log line, libraries' too (httpx logs whole URLs at -v), with `${VAR}` values masked."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = SECRETS.mask(record.getMessage()), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = SECRETS.mask(record.exc_text)
        return True


def configure_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    for handler in logging.getLogger().handlers:  # on the handler: it sees every logger's records
        handler.addFilter(MaskSecrets())
    # Commands that drive runs print their warnings as progress lines; `serve` turns this back on.
    logging.getLogger(RUN_LOGGER).setLevel(logging.DEBUG if verbose else logging.ERROR)
