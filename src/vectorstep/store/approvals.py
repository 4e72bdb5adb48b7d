"""Approvals in the database: created once per (run, step, check), decided once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, RowMapping, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from vectorstep.domain.approvals import Approval, ApprovalRequest, ApprovalStatus
from vectorstep.errors import NotFoundError
from vectorstep.store.database import Database
from vectorstep.store.insight_rollup import mark_approval_hour, mark_hour
from vectorstep.store.tables import approvals


class ApprovalRepository:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def create_approval(
        self, request: ApprovalRequest, *, approval_id: str, channel: str, created_at: datetime, expires_at: datetime
    ) -> tuple[Approval, bool]:
        row = {
            "id": approval_id,
            "run_id": request.run_id,
            "pipeline_name": request.pipeline,
            "step_name": request.step,
            "check_name": request.check or "",
            "message": request.message,
            "team": request.team,
            "stage": request.stage,
            "channel": channel,
            "status": ApprovalStatus.PENDING.value,
            "created_at": created_at,
            "expires_at": expires_at,
            "checkpoint": dict(request.checkpoint) if request.checkpoint is not None else None,
        }

        def work(connection: Connection) -> None:
            connection.execute(insert(approvals), [row])
            mark_hour(connection, created_at)

        try:
            await self.database.write(work)
        except IntegrityError:  # asked before (a resumed run asks again): the same approval
            existing = await self.find(request.run_id, request.step, request.check)
            if existing is None:
                raise
            return existing, False
        return _approval(row), True

    async def find(self, run_id: str, step: str, check: str | None) -> Approval | None:
        query = select(approvals).where(
            approvals.c.run_id == run_id, approvals.c.step_name == step, approvals.c.check_name == (check or "")
        )
        row = await self.database.read(lambda connection: connection.execute(query).mappings().first())
        return _approval(row) if row is not None else None

    async def get_approval(self, approval_id: str) -> Approval:
        def work(connection: Connection) -> list[RowMapping]:
            found = connection.execute(select(approvals).where(approvals.c.id == approval_id)).mappings().first()
            if found is not None:
                return [found]
            prefix = approvals.c.id.startswith(approval_id, autoescape=True)  # as `approvals list` shows them
            return list(connection.execute(select(approvals).where(prefix).limit(2)).mappings())

        rows = await self.database.read(work)
        if not rows:
            raise NotFoundError(f"no approval {approval_id!r}")
        if len(rows) > 1:
            raise NotFoundError(f"{approval_id!r} matches several approvals; give more of the id")
        return _approval(rows[0])

    async def decide_approval(
        self, approval_id: str, status: ApprovalStatus, by: str, at: datetime
    ) -> tuple[Approval, bool]:
        full_id = (await self.get_approval(approval_id)).id

        def work(connection: Connection) -> int:
            result = connection.execute(
                update(approvals)
                .where(approvals.c.id == full_id, approvals.c.status == ApprovalStatus.PENDING.value)
                .values(status=status.value, decided_by=by, decided_at=at)
            )
            mark_approval_hour(connection, full_id)
            return int(result.rowcount)

        changed = await self.database.write(work)
        return await self.get_approval(full_id), changed == 1

    async def for_run(self, run_id: str) -> list[Approval]:
        query = select(approvals).where(approvals.c.run_id == run_id).order_by(approvals.c.created_at)
        rows = await self.database.read(lambda connection: list(connection.execute(query).mappings()))
        return [_approval(row) for row in rows]

    async def count_pending(self, teams: tuple[str, ...] | None = None) -> int:
        query = select(func.count()).select_from(approvals).where(approvals.c.status == ApprovalStatus.PENDING.value)
        if teams is not None:
            query = query.where(approvals.c.team.in_(teams))
        return await self.database.read(lambda connection: int(connection.execute(query).scalar_one()))

    async def list_approvals(
        self, *, status: ApprovalStatus | None = None, limit: int = 100, teams: tuple[str, ...] | None = None
    ) -> list[Approval]:
        """Newest first; of `teams` only, when given."""
        query = select(approvals).order_by(approvals.c.created_at.desc()).limit(limit)
        if status is not None:
            query = query.where(approvals.c.status == status.value)
        if teams is not None:
            query = query.where(approvals.c.team.in_(teams))
        rows = await self.database.read(lambda connection: list(connection.execute(query).mappings()))
        return [_approval(row) for row in rows]


def _approval(row: RowMapping | dict[str, Any]) -> Approval:
    return Approval(
        id=row["id"],
        run_id=row["run_id"],
        pipeline=row["pipeline_name"],
        step=row["step_name"],
        check=row["check_name"] or None,
        message=row["message"],
        team=row["team"],
        stage=row["stage"],
        channel=row["channel"],
        status=ApprovalStatus(row["status"]),
        created_at=row["created_at"],
        expires_at=row["expires_at"],
        decided_at=row.get("decided_at"),
        decided_by=row.get("decided_by"),
        checkpoint=row.get("checkpoint"),
    )
