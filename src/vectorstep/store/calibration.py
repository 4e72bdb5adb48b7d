"""The marked history calibration reads (SYSTEM.md §10): one bucket's labels in one bin.

A step's label is its own latest mark; else 0 when one of its deterministic checks failed; else its
run's latest mark; else it is not counted. Only production runs count.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, select

from vectorstep.domain.calibration import Bucket, label_of
from vectorstep.domain.calibration_report import BucketReport, LabelledStep, bucket_report
from vectorstep.spec.service import CalibrationSettingsSpec
from vectorstep.store.calibration_cells import BUCKET_COLUMNS, bucket_of_row, counts, latest_marks, same_as
from vectorstep.store.database import Database
from vectorstep.store.tables import pipeline_runs, pipeline_steps, run_feedback, step_feedback


class CalibrationRepository:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def reports(
        self,
        settings: CalibrationSettingsSpec,
        *,
        step: str | None = None,
        agent: str | None = None,
        pipeline: str | None = None,
        teams: tuple[str, ...] | None = None,
    ) -> list[tuple[Bucket, BucketReport]]:
        """Each bucket with marked history (of `teams` only, when given), measured."""
        found = []
        for bucket in await self.buckets(step=step, agent=agent, pipeline=pipeline, teams=teams):
            team_runs = [] if teams is None else [pipeline_runs.c.team.in_(teams)]
            labelled = await self.history(bucket, *team_runs)
            if labelled:
                report = bucket_report(
                    labelled,
                    bin_width=settings.bin_width,
                    n_min=settings.n_min,
                    estimator=settings.estimator,
                    confidence=settings.confidence,
                )
                found.append((bucket, report))
        return found

    async def buckets(
        self,
        *,
        step: str | None = None,
        agent: str | None = None,
        pipeline: str | None = None,
        teams: tuple[str, ...] | None = None,
    ) -> list[Bucket]:
        """The buckets of production steps, optionally of one step, agent, pipeline or set of teams."""
        steps, runs = pipeline_steps.c, pipeline_runs.c
        keys = BUCKET_COLUMNS
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
        if pipeline is not None:
            query = query.where(runs.pipeline_name == pipeline)
        if teams is not None:
            query = query.where(runs.team.in_(teams))

        def work(connection: Connection) -> list[Bucket]:
            return [bucket_of_row(row) for row in connection.execute(query)]

        return await self.database.read(work)

    async def counts(self, bucket: Bucket, low: float, high: float) -> tuple[int, float]:
        """The counters of the bin [low, high): a read of at most a hundred rows, never of history."""
        return await self.database.read(lambda connection: counts(connection, bucket, low, high))

    async def history(self, bucket: Bucket, *where: Any) -> list[LabelledStep]:
        """The bucket's labelled production steps (optionally narrowed by `where`), oldest first."""
        steps, runs = pipeline_steps.c, pipeline_runs.c
        executor, _, agent = bucket.executor_agent.partition(":")
        query = (
            select(
                steps.run_id,
                steps.step_name,
                steps.deterministic_passed,
                steps.effective_confidence,
                steps.primary_confidence,
                steps.verifier_confidence,
                steps.grounding_score,
                steps.combined_trust,
            )
            .join(pipeline_runs, runs.id == steps.run_id)
            .where(
                runs.stage == "production",
                steps.step_name == bucket.step,
                steps.executor == executor,
                same_as(steps.agent, agent or None),
                same_as(steps.model, bucket.model),
                same_as(steps.provider, bucket.provider),
                same_as(steps.prompt_hash, bucket.prompt_hash),
                same_as(steps.agent_version, bucket.agent_version),
                steps.effective_confidence.is_not(None),
                *where,
            )
            .order_by(steps.id)
        )

        def work(connection: Connection) -> list[LabelledStep]:
            found = connection.execute(query).all()
            if not found:
                return []
            run_ids = {row.run_id for row in found}
            own = latest_marks(connection, step_feedback, with_step=True, run_ids=run_ids)
            of_run = latest_marks(connection, run_feedback, with_step=False, run_ids=run_ids)
            labelled: list[LabelledStep] = []
            for row in found:
                label = label_of(
                    own.get((row.run_id, row.step_name)),
                    row.deterministic_passed is False,
                    of_run.get((row.run_id, None)),
                )
                if label is not None:
                    labelled.append(
                        LabelledStep(
                            predicted=row.effective_confidence,
                            label=label,
                            self_reported=row.primary_confidence,
                            verifier=row.verifier_confidence,
                            grounding=row.grounding_score,
                            combined_trust=row.combined_trust,
                        )
                    )
            return labelled

        return await self.database.read(work)
