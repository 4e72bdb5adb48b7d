"""Bringing the schema to the newest revision (on start, or with `vectorstep db upgrade`)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Connection, inspect, text
from sqlalchemy.exc import SQLAlchemyError

from vectorstep.errors import DatabaseUnreachable
from vectorstep.spec.settings import redact_url
from vectorstep.store.database import Database

HEAD_REVISION = "0009"
MIGRATION_LOCK = 7_340_213  # the advisory lock PostgreSQL migrations hold (any constant of ours)
MIGRATIONS = Path(__file__).parent / "migrations"


async def current_revision(database: Database) -> str | None:
    return await database.read(_revision)


async def upgrade(database: Database) -> tuple[str | None, str]:
    """Apply pending migrations; returns (revision before, revision after).

    Raises DatabaseUnreachable, saying which database and why, when it does not answer.
    """
    try:
        before = await current_revision(database)
    except (OSError, SQLAlchemyError) as error:
        reason = str(getattr(error, "orig", None) or error).splitlines()[0]
        raise DatabaseUnreachable(f"cannot reach the database {redact_url(database.url)}: {reason}") from None
    if before == HEAD_REVISION:
        return before, before  # the common case: skip loading Alembic at all
    await database.write(_upgrade)
    return before, HEAD_REVISION


def _revision(connection: Connection) -> str | None:
    if not inspect(connection).has_table("alembic_version"):
        return None
    return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def _upgrade(connection: Connection) -> None:
    from alembic import command  # noqa: PLC0415 - only needed when the schema is behind
    from alembic.config import Config  # noqa: PLC0415

    if connection.dialect.name == "postgresql":
        # Processes starting together (a service and its workers) upgrade one after the other.
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK})
        if _revision(connection) == HEAD_REVISION:
            return

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    command.upgrade(config, "head")
