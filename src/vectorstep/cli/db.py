"""`vectorstep db upgrade`: bring the database schema to the newest revision."""

from __future__ import annotations

from pathlib import Path

import click

from vectorstep.cli.common import config_option, reports_errors, run_async, settings_from
from vectorstep.cli.output import Output
from vectorstep.spec.settings import Settings, redact_url
from vectorstep.store.database import connect
from vectorstep.store.insights import InsightRepository
from vectorstep.store.migrate import upgrade


@click.group("db")
def db_group() -> None:
    """Database maintenance."""


@db_group.command("upgrade")
@config_option
@reports_errors
def upgrade_command(config_path: Path | None) -> int:
    """Apply pending schema migrations (also done automatically on start) and sum the insights of history."""
    settings = settings_from(config_path)
    before, after, summed = run_async(_upgrade(settings))
    target = redact_url(settings.database_url)
    if before == after:
        Output().line(f"{target}: schema is up to date (revision {after})")
    else:
        Output().line(f"{target}: upgraded from {before or 'empty'} to revision {after}")
    if summed:
        Output().line(f"insights: summed {summed:,} hour{'' if summed == 1 else 's'} of history")
    return 0


async def _upgrade(settings: Settings) -> tuple[str | None, str, int]:
    """The schema, then the insight rows of every marked hour, a day's worth per transaction (a short lock)."""
    database = connect(settings.database_url)
    try:
        before, after = await upgrade(database)
        insights = InsightRepository(database)
        marked = await insights.pending()
        for _ in range(-(-marked // 24)):  # bounded: a running service keeps marking the current hour
            await insights.refresh(limit=24)
        return before, after, marked
    finally:
        await database.dispose()
