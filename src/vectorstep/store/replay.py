"""What a replay reads: the most recent marked production executions of a step's current bucket."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Connection, Row, func, insert, select

from vectorstep.domain.calibration import label_of
from vectorstep.domain.records import LogEntry, RunRecord, StepRecord
from vectorstep.domain.replay import RecordedExecution
from vectorstep.store.artifacts import insert_artifacts
from vectorstep.store.calibration_cells import latest_marks, same_as
from vectorstep.store.database import Database
from vectorstep.store.rows import log_row, run_row, step_row
from vectorstep.store.tables import pipeline_run_events, pipeline_runs, pipeline_steps, run_feedback, step_feedback

REPLAY_SOURCE = "replay"  # a replay's run: `source: replay`, stage testing
REPORT_EVENT = "replay_report"  # the log entry that holds its report


@dataclass(frozen=True)
class CurrentConfig:
    """The step as it is configured now: its history under another prompt or agent version is another bucket."""

    pipeline: str
    step: str
    executor: str
    agent: str | None
    prompt_hash: str
    agent_version: str | None


@dataclass(frozen=True)
class MarkedHistory:
    samples: tuple[RecordedExecution, ...]
    marked: int  # marked production executions of the step, in any bucket
    marked_current: int  # of those, with the step's current prompt and agent version
    model: str | None  # the bucket's model and provider: those of the newest marked execution
    provider: str | None


class ReplayRepository:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def marked_history(self, config: CurrentConfig, k: int) -> MarkedHistory:
        return await self.database.read(lambda connection: _marked_history(connection, config, k))

    async def reports(
        self, pipeline: str, *, teams: tuple[str, ...] | None = None, limit: int = 20
    ) -> list[Mapping[str, Any]]:
        """The pipeline's stored replay reports, newest first (of `teams` only, when given)."""
        events, runs = pipeline_run_events.c, pipeline_runs.c
        query = (
            select(events.data)
            .join(pipeline_runs, runs.id == events.run_id)
            .where(runs.pipeline_name == pipeline, runs.source == REPLAY_SOURCE, events.event == REPORT_EVENT)
            .order_by(runs.started_at.desc(), events.id.desc())
            .limit(limit)
        )
        if teams is not None:
            query = query.where(runs.team.in_(teams))
        return await self.database.read(lambda connection: [row.data for row in connection.execute(query)])

    async def save(self, run: RunRecord, steps: list[StepRecord], log: list[LogEntry]) -> None:
        """The whole batch in one transaction: a replay is stored complete, or not at all."""

        def work(connection: Connection) -> None:
            connection.execute(insert(pipeline_runs).values(run_row(run)))
            if steps:
                connection.execute(insert(pipeline_steps), [step_row(step) for step in steps])
            for step in steps:  # a sample's versions are not entered in version history: it is not the step
                insert_artifacts(connection, step)
            connection.execute(insert(pipeline_run_events), [log_row(entry) for entry in log])

        await self.database.write(work)


def _marked(*where: ColumnElement[bool]) -> Any:
    steps, runs = pipeline_steps.c, pipeline_runs.c
    own = select(step_feedback.c.id).where(
        step_feedback.c.run_id == steps.run_id, step_feedback.c.step_name == steps.step_name
    )
    of_run = select(run_feedback.c.id).where(run_feedback.c.run_id == steps.run_id)
    return (
        select(steps.id)
        .join(pipeline_runs, runs.id == steps.run_id)
        .where(runs.stage == "production", steps.effective_confidence.is_not(None), own.exists() | of_run.exists())
        .where(*where)
    )


def _count(connection: Connection, query: Any) -> int:
    return int(connection.execute(select(func.count()).select_from(query.subquery())).scalar_one())


def _marked_history(connection: Connection, config: CurrentConfig, k: int) -> MarkedHistory:
    steps, runs = pipeline_steps.c, pipeline_runs.c
    of_step = [runs.pipeline_name == config.pipeline, steps.step_name == config.step]
    current = [
        *of_step,
        steps.executor == config.executor,
        same_as(steps.agent, config.agent),
        steps.prompt_hash == config.prompt_hash,
        # No version known here (a remote gateway's agents): the gateway's answers say which ran.
        *([same_as(steps.agent_version, config.agent_version)] if config.agent_version is not None else []),
    ]
    marked = _count(connection, _marked(*of_step))
    newest = connection.execute(
        select(steps.model, steps.provider).where(steps.id.in_(_marked(*current))).order_by(steps.id.desc()).limit(1)
    ).first()
    if newest is None:
        return MarkedHistory((), marked, 0, None, None)
    bucket = [*current, same_as(steps.model, newest.model), same_as(steps.provider, newest.provider)]
    marked_current = _count(connection, _marked(*bucket))
    rows = connection.execute(
        select(pipeline_steps, runs.context)
        .join(pipeline_runs, runs.id == steps.run_id)
        .where(steps.id.in_(_marked(*bucket)))
        .order_by(steps.id.desc())
        .limit(k)
    ).all()
    samples = _recorded(connection, rows)
    return MarkedHistory(tuple(samples), marked, marked_current, newest.model, newest.provider)


def _recorded(connection: Connection, rows: Sequence[Row[Any]]) -> list[RecordedExecution]:
    run_ids = {row.run_id for row in rows}
    own = latest_marks(connection, step_feedback, with_step=True, run_ids=run_ids)
    of_run = latest_marks(connection, run_feedback, with_step=False, run_ids=run_ids)
    earlier = _outputs(connection, run_ids)
    found = []
    for row in rows:
        label = label_of(
            own.get((row.run_id, row.step_name)), row.deterministic_passed is False, of_run.get((row.run_id, None))
        )
        if label is None:
            continue
        found.append(
            RecordedExecution(
                run_id=row.run_id,
                step=row.step_name,
                label=label,
                prompt=row.prompt,
                output=row.parsed_output,
                self_reported=row.primary_confidence,
                grounding=row.grounding_score,
                combined_trust=row.combined_trust,
                deterministic_passed=row.deterministic_passed,
                cost=row.cost,
                duration_ms=row.duration_ms,
                finished_at=row.finished_at.isoformat(),
                context=row.context,
                outputs={name: output for index, name, output in earlier.get(row.run_id, ()) if index < row.step_index},
            )
        )
    return found


def _outputs(connection: Connection, run_ids: set[str]) -> Mapping[str, list[tuple[int, str, Mapping[str, Any]]]]:
    """Each run's recorded step outputs, as later steps' templates saw them (`steps.<name>`)."""
    steps = pipeline_steps.c
    found: dict[str, list[tuple[int, str, Mapping[str, Any]]]] = {}
    query = select(steps.run_id, steps.step_index, steps.step_name, steps.parsed_output).where(
        steps.run_id.in_(run_ids), steps.parsed_output.is_not(None)
    )
    for row in connection.execute(query):
        found.setdefault(row.run_id, []).append((row.step_index, row.step_name, row.parsed_output))
    return found
