"""The marked history calibration reads (SYSTEM.md §10): one bucket's labels in one bin.

A step's label is its own latest mark; else 0 when one of its deterministic checks failed; else its
run's latest mark; else it is not counted. Only production runs count.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, and_, func, select

from vectorstep.domain.calibration import Bucket
from vectorstep.store.database import Database
from vectorstep.store.tables import pipeline_runs, pipeline_steps, run_feedback, step_feedback

SCORES = {"correct": 1.0, "partial": 0.5, "incorrect": 0.0}


class CalibrationRepository:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def buckets(self, *, step: str | None = None, agent: str | None = None) -> list[Bucket]:
        """The buckets of production steps (gateway agents), optionally of one step or agent."""
        steps, runs = pipeline_steps.c, pipeline_runs.c
        keys = (
            steps.step_name,
            steps.executor,
            steps.agent,
            steps.model,
            steps.provider,
            steps.prompt_hash,
            steps.agent_version,
        )
        query = (
            select(*keys)
            .join(pipeline_runs, runs.id == steps.run_id)
            .where(runs.stage == "production", steps.effective_confidence.is_not(None))
            .group_by(*keys)
            .order_by(*keys)
        )
        if step is not None:
            query = query.where(steps.step_name == step)
        if agent is not None:
            query = query.where(steps.agent == agent)

        def work(connection: Connection) -> list[Bucket]:
            return [
                Bucket(row[0], f"{row[1]}:{row[2] or ''}", row[3], row[4], row[5], row[6])
                for row in connection.execute(query)
            ]

        return await self.database.read(work)

    async def labels(self, bucket: Bucket, low: float, high: float) -> list[float]:
        steps, runs = pipeline_steps.c, pipeline_runs.c
        executor, _, agent = bucket.executor_agent.partition(":")
        in_bin = steps.effective_confidence >= low
        in_bin = and_(in_bin, steps.effective_confidence < high) if high < 1.0 else in_bin
        query = (
            select(steps.run_id, steps.step_name, steps.deterministic_passed)
            .join(pipeline_runs, runs.id == steps.run_id)
            .where(
                runs.stage == "production",
                steps.step_name == bucket.step,
                steps.executor == executor,
                _same(steps.agent, agent or None),
                _same(steps.model, bucket.model),
                _same(steps.provider, bucket.provider),
                _same(steps.prompt_hash, bucket.prompt_hash),
                _same(steps.agent_version, bucket.agent_version),
                in_bin,
            )
        )

        def work(connection: Connection) -> list[float]:
            found = connection.execute(query).all()
            if not found:
                return []
            run_ids = {row.run_id for row in found}
            own = _latest(connection, step_feedback, run_ids, with_step=True)
            of_run = _latest(connection, run_feedback, run_ids, with_step=False)
            labels: list[float] = []
            for row in found:
                label = own.get((row.run_id, row.step_name))
                if label is None and row.deterministic_passed is False:
                    label = 0.0
                if label is None:
                    label = of_run.get((row.run_id, None))
                if label is not None:
                    labels.append(label)
            return labels

        return await self.database.read(work)


def _same(column: Any, value: str | None) -> Any:
    return column.is_(None) if value is None else column == value


def _latest(
    connection: Connection, table: Any, run_ids: set[str], *, with_step: bool
) -> dict[tuple[str, str | None], float]:
    """The latest mark per run (and step): re-marking replaces, the history stays in the table."""
    columns = table.c
    keys = [columns.run_id, *([columns.step_name] if with_step else [])]
    newest = (
        select(*keys, func.max(columns.id).label("id")).where(columns.run_id.in_(run_ids)).group_by(*keys).subquery()
    )
    rows = connection.execute(select(table).join(newest, columns.id == newest.c.id)).mappings()
    return {(row["run_id"], row["step_name"] if with_step else None): SCORES[row["label"]] for row in rows}
