"""The evidence promotion readiness reads (trust/readiness.py): each step's recent executions in its
pipeline's own testing runs — never a replay's — with the label each carries and where it came from.

A step's label (SYSTEM.md §10) is its own latest mark; else 0 when one of its deterministic checks
failed; else its run's latest mark. Unlike calibration's counters this reads testing runs, so it is
worked out here, in one query per pipeline: the steps' rows ranked newest first per step name (a
window function, the same on SQLite and PostgreSQL), at most `EVIDENCE_LIMIT` of each, joined to the
latest mark of the step and of its run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Connection, Select, Subquery, and_, func, or_, select

from vectorstep.domain.calibration import label_of
from vectorstep.domain.readiness import Execution, LabelSource
from vectorstep.spec.readiness import EVIDENCE_LIMIT
from vectorstep.store.calibration_cells import SCORES
from vectorstep.store.database import Database
from vectorstep.store.tables import pipeline_runs, pipeline_steps, run_feedback, step_feedback

NOT_EXECUTIONS = ("skipped", "waiting")  # a skipped step did not run; a waiting one has not finished
Subject = tuple[str, bool]  # a step's name, and whether it is a fan-out (its executions are `name/0`, ...)


class ReadinessRepository:
    def __init__(self, database: Database) -> None:
        self.database = database

    async def executions(
        self,
        pipeline: str,
        subjects: Sequence[Subject],
        *,
        teams: tuple[str, ...] | None = None,
        limit: int = EVIDENCE_LIMIT,
    ) -> dict[str, list[Execution]]:
        """Per step name, its executions in `pipeline`'s testing runs (of `teams` only, when given), newest first."""
        if not subjects:
            return {}
        scope = _run_scope(pipeline, teams)
        query = _evidence_query(scope, subjects, limit)
        exact = {name for name, fan_out in subjects if not fan_out}

        def work(connection: Connection) -> dict[str, list[Execution]]:
            found: dict[str, list[Execution]] = {name: [] for name, _ in subjects}
            for row in connection.execute(query):
                name = row.step_name if row.step_name in exact else str(row.step_name).partition("/")[0]
                if name in found and len(found[name]) < limit:
                    found[name].append(_execution(row))
            return found

        return await self.database.read(work)


def _run_scope(pipeline: str, teams: tuple[str, ...] | None) -> list[ColumnElement[bool]]:
    runs = pipeline_runs.c
    scope = [runs.pipeline_name == pipeline, runs.stage == "testing", runs.source != "replay"]
    if teams is not None:
        scope.append(runs.team.in_(teams))
    return scope


def _evidence_query(scope: list[ColumnElement[bool]], subjects: Sequence[Subject], limit: int) -> Select[Any]:
    steps = pipeline_steps.c
    names = [name for name, fan_out in subjects if not fan_out]
    branches = [steps.step_name.startswith(f"{name}/", autoescape=True) for name, fan_out in subjects if fan_out]
    recency = func.row_number().over(partition_by=steps.step_name, order_by=(steps.finished_at.desc(), steps.id.desc()))
    ranked = (
        select(
            steps.id,
            steps.run_id,
            steps.step_name,
            steps.status,
            steps.finished_at,
            steps.combined_trust,
            steps.effective_confidence,
            steps.deterministic_passed,
            steps.prompt_hash,
            steps.agent_version,
            recency.label("recency"),
        )
        .join(pipeline_runs, pipeline_runs.c.id == steps.run_id)
        .where(*scope, steps.status.not_in(NOT_EXECUTIONS), or_(steps.step_name.in_(names), *branches))
        .subquery("ranked")
    )
    runs_in_scope = select(pipeline_runs.c.id).where(*scope)
    own = _latest_marks(step_feedback, runs_in_scope, with_step=True)
    of_run = _latest_marks(run_feedback, runs_in_scope, with_step=False)
    joined = ranked.outerjoin(
        own, and_(own.c.run_id == ranked.c.run_id, own.c.step_name == ranked.c.step_name)
    ).outerjoin(of_run, of_run.c.run_id == ranked.c.run_id)
    return (
        select(ranked, own.c.label.label("own_label"), of_run.c.label.label("run_label"))
        .select_from(joined)
        .where(ranked.c.recency <= limit)
        .order_by(ranked.c.finished_at.desc(), ranked.c.id.desc())
    )


def _latest_marks(table: Any, runs_in_scope: Select[Any], *, with_step: bool) -> Subquery:
    """The latest mark per run (and step) of the runs in scope: re-marking replaces, the history stays."""
    columns = table.c
    keys = [columns.run_id, *([columns.step_name] if with_step else [])]
    newest = (
        select(*keys, func.max(columns.id).label("id")).where(columns.run_id.in_(runs_in_scope)).group_by(*keys)
    ).subquery()
    return select(*keys, columns.label).select_from(table.join(newest, columns.id == newest.c.id)).subquery()


def _execution(row: Any) -> Execution:
    own = SCORES.get(row.own_label) if row.own_label is not None else None
    of_run = SCORES.get(row.run_label) if row.run_label is not None else None
    failed = row.deterministic_passed is False
    source: LabelSource | None = None
    if own is not None:
        source = "step_mark"
    elif failed:
        source = "failed_check"
    elif of_run is not None:
        source = "run_mark"
    return Execution(
        run_id=row.run_id,
        status=row.status,
        finished_at=row.finished_at,
        trust=row.combined_trust if row.combined_trust is not None else row.effective_confidence,
        predicted=row.effective_confidence,
        label=label_of(own, failed, of_run),
        label_source=source,
        prompt_hash=row.prompt_hash,
        agent_version=row.agent_version,
    )
