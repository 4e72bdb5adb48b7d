"""UI sessions kept server-side: a signed cookie alone could not be ended before it expires."""

from __future__ import annotations

import secrets
from datetime import datetime, timedelta

from sqlalchemy import Connection, delete, insert, select, update

from vectorstep.store.database import Database
from vectorstep.store.tables import ui_sessions


class SessionRepository:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def open(self, principal: str, now: datetime, lasts: timedelta) -> str:
        """A new session's id; sessions that ended or expired are swept at the same time."""
        session_id = secrets.token_urlsafe(32)

        def work(connection: Connection) -> None:
            columns = ui_sessions.c
            connection.execute(delete(ui_sessions).where((columns.expires_at < now) | columns.ended_at.is_not(None)))
            connection.execute(
                insert(ui_sessions).values(
                    id=session_id, principal=principal, created_at=now, expires_at=now + lasts, ended_at=None
                )
            )

        await self.database.write(work)
        return session_id

    async def alive(self, session_id: str, principal: str, now: datetime) -> bool:
        columns = ui_sessions.c
        query = select(columns.id).where(
            columns.id == session_id,
            columns.principal == principal,
            columns.ended_at.is_(None),
            columns.expires_at > now,
        )
        return await self.database.read(lambda connection: connection.execute(query).first() is not None)

    async def end(self, session_id: str, now: datetime) -> None:
        statement = update(ui_sessions).where(ui_sessions.c.id == session_id).values(ended_at=now)
        await self.database.write(lambda connection: connection.execute(statement))
