"""The marking queue: agent steps nobody has marked yet (neither the step nor its run), oldest first, and
how much of the history people have marked (coverage)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, func, select

from vectorstep.store.database import Database
from vectorstep.store.tables import pipeline_runs, pipeline_steps, run_feedback, step_feedback

AGENT_EXECUTORS = ("gateway", "openclaw")


@dataclass(frozen=True)
class QueueFilter:
    stage: str | None = "production"
    pipeline: str | None = None
    team: str | None = None
    teams: tuple[str, ...] | None = None  # only these teams' runs (None: every run)


@dataclass(frozen=True)
class QueuedStep:
    run_id: str
    pipeline: str
    stage: str
    team: str | None
    step: str
    agent: str | None
    summary: str
    confidence: float | None
    combined_trust: float | None
    gate_outcome: str | None
    status: str
    finished_at: datetime


@dataclass(frozen=True)
class Queue:
    steps: tuple[QueuedStep, ...]
    unmarked: int
    total: int  # agent steps in scope, marked or not

    @property
    def coverage(self) -> float | None:
        return None if self.total == 0 else (self.total - self.unmarked) / self.total


class MarkingRepository:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def queue(self, where: QueueFilter, *, limit: int = 50) -> Queue:
        steps, runs = pipeline_steps.c, pipeline_runs.c
        scope: list[ColumnElement[bool]] = [
            steps.executor.in_(AGENT_EXECUTORS),
            steps.effective_confidence.is_not(None),
        ]
        for column, value in ((runs.stage, where.stage), (runs.pipeline_name, where.pipeline), (runs.team, where.team)):
            if value is not None:
                scope.append(column == value)
        if where.teams is not None:
            scope.append(runs.team.in_(where.teams))
        own = select(step_feedback.c.id).where(
            step_feedback.c.run_id == steps.run_id, step_feedback.c.step_name == steps.step_name
        )
        of_run = select(run_feedback.c.id).where(run_feedback.c.run_id == steps.run_id)
        unmarked = [*scope, ~own.exists(), ~of_run.exists()]
        joined = pipeline_steps.join(pipeline_runs, runs.id == steps.run_id)
        listing = (
            select(
                steps.run_id,
                runs.pipeline_name,
                runs.stage,
                runs.team,
                steps.step_name,
                steps.agent,
                steps.parsed_output,
                steps.primary_confidence,
                steps.combined_trust,
                steps.gate_outcome,
                steps.status,
                steps.finished_at,
            )
            .select_from(joined)
            .where(*unmarked)
            .order_by(steps.finished_at, steps.id)
            .limit(limit)
        )

        def work(connection: Connection) -> Queue:
            rows = connection.execute(listing).all()
            total = connection.execute(select(func.count()).select_from(joined).where(*scope)).scalar_one()
            left = connection.execute(select(func.count()).select_from(joined).where(*unmarked)).scalar_one()
            return Queue(tuple(_queued(row) for row in rows), int(left), int(total))

        return await self.database.read(work)


def _queued(row: Any) -> QueuedStep:
    output = row.parsed_output if isinstance(row.parsed_output, dict) else {}
    return QueuedStep(
        run_id=row.run_id,
        pipeline=row.pipeline_name,
        stage=row.stage,
        team=row.team,
        step=row.step_name,
        agent=row.agent,
        summary=str(output.get("summary") or ""),
        confidence=row.primary_confidence,
        combined_trust=row.combined_trust,
        gate_outcome=row.gate_outcome,
        status=row.status,
        finished_at=row.finished_at,
    )
