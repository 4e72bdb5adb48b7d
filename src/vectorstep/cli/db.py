"""`vectorstep db upgrade`: bring the database schema to the newest revision."""

from __future__ import annotations

from pathlib import Path

import click

from vectorstep.cli.common import config_option, reports_errors, run_async, settings_from
from vectorstep.cli.output import Output
from vectorstep.spec.settings import Settings, redact_url
from vectorstep.store.database import connect
from vectorstep.store.migrate import upgrade


@click.group("db")
def db_group() -> None:
    """Database maintenance."""


@db_group.command("upgrade")
@config_option
@reports_errors
def upgrade_command(config_path: Path | None) -> int:
    """Apply pending schema migrations (also done automatically on start)."""
    settings = settings_from(config_path)
    before, after = run_async(_upgrade(settings))
    target = redact_url(settings.database_url)
    if before == after:
        Output().line(f"{target}: schema is up to date (revision {after})")
    else:
        Output().line(f"{target}: upgraded from {before or 'empty'} to revision {after}")
    return 0


async def _upgrade(settings: Settings) -> tuple[str | None, str]:
    database = connect(settings.database_url)
    try:
        return await upgrade(database)
    finally:
        await database.dispose()
