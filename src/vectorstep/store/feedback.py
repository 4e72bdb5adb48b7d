"""People's marks on runs and steps: `correct`, `partial` or `incorrect` (calibration reads them later)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, insert, select

from vectorstep.errors import NotFoundError
from vectorstep.store.calibration_cells import relabel_run, relabel_step
from vectorstep.store.database import Database
from vectorstep.store.tables import pipeline_runs, pipeline_steps, run_feedback, step_feedback

LABELS = ("correct", "partial", "incorrect")


@dataclass(frozen=True)
class Mark:
    run_id: str
    step: str | None
    label: str
    comment: str | None
    marked_by: str
    created_at: datetime

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "step": self.step,
            "label": self.label,
            "comment": self.comment,
            "marked_by": self.marked_by,
            "created_at": self.created_at.isoformat(),
        }


class FeedbackRepository:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def mark(self, mark: Mark) -> tuple[str, str]:
        """Store the mark; returns the run's pipeline and stage."""

        def work(connection: Connection) -> tuple[str, str]:
            columns = pipeline_runs.c
            run = connection.execute(
                select(columns.pipeline_name, columns.stage).where(columns.id == mark.run_id)
            ).first()
            if run is None:
                raise NotFoundError(f"no run {mark.run_id!r}")
            row: dict[str, Any] = {
                "run_id": mark.run_id,
                "label": mark.label,
                "comment": mark.comment,
                "marked_by": mark.marked_by,
                "created_at": mark.created_at,
            }
            if mark.step is None:
                connection.execute(insert(run_feedback), [row])
                relabel_run(connection, mark.run_id, mark.label)
                return str(run.pipeline_name), str(run.stage)
            step = select(pipeline_steps.c.id).where(
                pipeline_steps.c.run_id == mark.run_id, pipeline_steps.c.step_name == mark.step
            )
            if connection.execute(step).first() is None:
                raise NotFoundError(f"run {mark.run_id!r} has no step {mark.step!r}")
            connection.execute(insert(step_feedback), [{**row, "step_name": mark.step}])
            relabel_step(connection, mark.run_id, mark.step, mark.label)
            return str(run.pipeline_name), str(run.stage)

        return await self.database.write(work)

    async def marks(self, run_id: str) -> list[Mark]:
        def work(connection: Connection) -> list[Mark]:
            runs = connection.execute(select(run_feedback).where(run_feedback.c.run_id == run_id)).mappings()
            steps = connection.execute(select(step_feedback).where(step_feedback.c.run_id == run_id)).mappings()
            found = [Mark(r["run_id"], None, r["label"], r["comment"], r["marked_by"], r["created_at"]) for r in runs]
            found += [
                Mark(r["run_id"], r["step_name"], r["label"], r["comment"], r["marked_by"], r["created_at"])
                for r in steps
            ]
            return sorted(found, key=lambda mark: mark.created_at)

        return await self.database.read(work)
