"""The artifacts of answers, stored beside their step (the step's output refers to them by name)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select

from vectorstep.domain.records import StepRecord
from vectorstep.errors import NotFoundError
from vectorstep.store.database import Database
from vectorstep.store.tables import step_artifacts


@dataclass(frozen=True)
class StoredArtifact:
    run_id: str
    step: str
    name: str
    size: int  # bytes of the text the agent wrote
    truncated: bool
    created_at: datetime
    content: str | None = None  # read only when asked for

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "step": self.step,
            "size": self.size,
            "truncated": self.truncated,
            "created_at": self.created_at.isoformat(),
        }


def insert_artifacts(connection: Connection, record: StepRecord) -> None:
    """In the step's own transaction: never a step without its artifacts, nor artifacts without their step."""
    rows = [
        {
            "run_id": record.run_id,
            "step_name": record.name,
            "name": artifact.name,
            "size": artifact.size,
            "truncated": artifact.truncated,
            "content": artifact.content,
            "created_at": record.finished_at,
        }
        for artifact in record.artifacts
    ]
    if rows:
        connection.execute(insert(step_artifacts), rows)


class ArtifactRepository:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def list(self, run_id: str, step: str) -> list[StoredArtifact]:
        """A step's artifacts, by name, without their texts."""
        table = step_artifacts.c
        query = (
            select(table.run_id, table.step_name, table.name, table.size, table.truncated, table.created_at)
            .where(table.run_id == run_id, table.step_name == step)
            .order_by(table.name)
        )
        return await self.database.read(lambda connection: [StoredArtifact(*row) for row in connection.execute(query)])

    async def get(self, run_id: str, step: str, name: str) -> StoredArtifact:
        table = step_artifacts.c
        query = select(
            table.run_id, table.step_name, table.name, table.size, table.truncated, table.created_at, table.content
        ).where(table.run_id == run_id, table.step_name == step, table.name == name)
        row = await self.database.read(lambda connection: connection.execute(query).first())
        if row is None:
            raise NotFoundError(f"step {step} of run {run_id} has no artifact {name!r}")
        return StoredArtifact(*row)
