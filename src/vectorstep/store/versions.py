"""Version history in the store: written as steps land, read back per step or per agent.

Each prompt template (per pipeline and step) and each agent version is a row of its own, written by
the transaction that stores a step that ran it: one upsert per version, which on a version already
known moves `last_seen` (never back) and fills a text the row lacks (rows entered by migration 0008
from older history have none). The runs that used a version, and its calibration, are read from
`pipeline_steps` and the calibration history, of the caller's teams only.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, Table, case, func, select
from sqlalchemy.dialects import postgresql, sqlite

from vectorstep.domain.calibration import Bucket
from vectorstep.domain.calibration_report import LabelledStep
from vectorstep.domain.records import StepRecord, VersionTexts
from vectorstep.domain.versions import RunUse, StepUse, StepVersions, Version, version_calibration
from vectorstep.spec.service import CalibrationSettingsSpec
from vectorstep.store.calibration import CalibrationRepository
from vectorstep.store.database import Database
from vectorstep.store.tables import agent_versions, pipeline_runs, pipeline_steps, step_prompt_versions

RECENT_RUNS = 10  # per version: the newest runs that used it (a page links to the rest)


def record_versions(connection: Connection, record: StepRecord, pipeline: str) -> None:
    """In the step's own transaction: the versions it ran with are known, with their texts."""
    texts = record.version_texts or VersionTexts()
    seen = {"first_seen": record.started_at, "last_seen": record.finished_at}
    dialect = connection.dialect.name
    if record.prompt_hash and record.prompt is not None:  # its prompt went out (a skipped step ran nothing)
        keys = {"pipeline_name": pipeline, "step_name": record.name, "prompt_hash": record.prompt_hash}
        statement = _upsert(dialect, step_prompt_versions, tuple(keys), "template")
        connection.execute(statement, {**keys, "template": texts.prompt_template, **seen})
    if record.agent and record.agent_version:
        keys = {"agent_name": record.agent, "agent_version": record.agent_version}
        statement = _upsert(dialect, agent_versions, tuple(keys), "definition")
        connection.execute(statement, {**keys, "definition": texts.agent_definition, **seen})


@functools.cache
def _upsert(dialect: str, table: Table, keys: tuple[str, ...], column: str) -> postgresql.Insert | sqlite.Insert:
    # Built once: constructing this statement costs twenty times what running it does (~0.6 ms).
    # ON CONFLICT on both databases: concurrent writers of the same version never collide.
    statement = postgresql.insert(table) if dialect == "postgresql" else sqlite.insert(table)
    new, old = statement.excluded, table.c
    return statement.on_conflict_do_update(
        index_elements=[old[key] for key in keys],
        set_={
            "last_seen": case((new.last_seen > old.last_seen, new.last_seen), else_=old.last_seen),
            "first_seen": case((new.first_seen < old.first_seen, new.first_seen), else_=old.first_seen),
            column: func.coalesce(old[column], new[column]),
        },
    )


class VersionRepository:
    def __init__(self, database: Database) -> None:
        self.database = database
        self._calibration = CalibrationRepository(database)

    async def prompt_versions(
        self,
        pipeline: str,
        step: str,
        settings: CalibrationSettingsSpec,
        teams: tuple[str, ...] | None = None,
    ) -> list[Version]:
        """The prompt templates `pipeline/step` ran with, oldest first (of `teams`' runs, when given)."""
        steps, runs = pipeline_steps.c, pipeline_runs.c
        narrow = [runs.pipeline_name == pipeline, steps.step_name == step, steps.prompt.is_not(None)]
        table = step_prompt_versions.c
        rows = select(step_prompt_versions).where(table.pipeline_name == pipeline, table.step_name == step)

        def work(connection: Connection) -> list[Version]:
            found = []
            for row in connection.execute(rows.order_by(table.first_seen)).mappings():
                used = [*narrow, steps.prompt_hash == row["prompt_hash"]]
                found.append(_version(connection, "prompt", row["prompt_hash"], f"{pipeline}/{step}", row, used, teams))
            return found

        versions = await self.database.read(work)
        labelled = await self._labelled(settings, teams, step=step, pipeline=pipeline)
        return _calibrated(_visible(versions, teams), labelled, "prompt_hash", settings)

    async def agent_versions(
        self,
        agent: str,
        settings: CalibrationSettingsSpec,
        teams: tuple[str, ...] | None = None,
        *,
        pipeline: str | None = None,
        step: str | None = None,
    ) -> list[Version]:
        """The versions of `agent`, oldest first; with `pipeline` and `step`, only those that step ran
        with, counted (runs, calibration) for that step alone."""
        steps, runs = pipeline_steps.c, pipeline_runs.c
        narrow = [steps.agent == agent]
        if pipeline is not None and step is not None:
            narrow += [runs.pipeline_name == pipeline, steps.step_name == step]
        table = agent_versions.c
        rows = select(agent_versions).where(table.agent_name == agent).order_by(table.first_seen)

        def work(connection: Connection) -> list[Version]:
            found = []
            for row in connection.execute(rows).mappings():
                used = [*narrow, steps.agent_version == row["agent_version"]]
                found.append(_version(connection, "agent", row["agent_version"], agent, row, used, teams))
            return found

        versions = await self.database.read(work)
        if pipeline is not None:
            versions = [version for version in versions if version.runs]  # of this step only
        labelled = await self._labelled(settings, teams, agent=agent, step=step, pipeline=pipeline)
        return _calibrated(_visible(versions, teams), labelled, "agent_version", settings)

    async def of_step(
        self, pipeline: str, step: str, settings: CalibrationSettingsSpec, teams: tuple[str, ...] | None = None
    ) -> StepVersions:
        """The step's prompt versions, and the versions of each agent it ran with (counted for this step)."""
        prompts = await self.prompt_versions(pipeline, step, settings, teams)
        agents: list[Version] = []
        for agent in await self.step_agents(pipeline, step):
            agents += await self.agent_versions(agent, settings, teams, pipeline=pipeline, step=step)
        return StepVersions(pipeline, step, tuple(prompts), tuple(agents))

    async def step_agents(self, pipeline: str, step: str) -> list[str]:
        """The agents a step has run with (its executor_config may have named several over time)."""
        steps, runs = pipeline_steps.c, pipeline_runs.c
        query = (
            select(steps.agent)
            .join(pipeline_runs, runs.id == steps.run_id)
            .where(runs.pipeline_name == pipeline, steps.step_name == step, steps.agent.is_not(None))
            .where(steps.agent_version.is_not(None))
            .group_by(steps.agent)
            .order_by(steps.agent)
        )
        return await self.database.read(lambda connection: [str(row[0]) for row in connection.execute(query)])

    async def subjects(self) -> tuple[list[str], list[str]]:
        """What has history: every `pipeline/step` with a prompt version, and every agent with a version."""
        prompts, agents = step_prompt_versions.c, agent_versions.c

        def work(connection: Connection) -> tuple[list[str], list[str]]:
            steps = connection.execute(
                select(prompts.pipeline_name, prompts.step_name)
                .distinct()
                .order_by(*[prompts.pipeline_name, prompts.step_name])
            )
            names = connection.execute(select(agents.agent_name).distinct().order_by(agents.agent_name))
            return [f"{row[0]}/{row[1]}" for row in steps], [str(row[0]) for row in names]

        return await self.database.read(work)

    async def _labelled(
        self, settings: CalibrationSettingsSpec, teams: tuple[str, ...] | None, **narrow: str | None
    ) -> list[tuple[Bucket, list[LabelledStep]]]:
        """Each calibration bucket in view with its labelled steps (the calibration code's own reading)."""
        where: list[Any] = [] if teams is None else [pipeline_runs.c.team.in_(teams)]
        if narrow.get("pipeline") is not None:
            where.append(pipeline_runs.c.pipeline_name == narrow["pipeline"])
        found = []
        for bucket in await self._calibration.buckets(teams=teams, **narrow):
            found.append((bucket, await self._calibration.history(bucket, *where)))
        return found


def _version(  # noqa: PLR0917
    connection: Connection,
    kind: Any,
    hash_: str,
    subject: str,
    row: Any,
    used: Sequence[Any],
    teams: tuple[str, ...] | None,
) -> Version:
    steps, runs = pipeline_steps.c, pipeline_runs.c
    scoped = [*used, *([] if teams is None else [runs.team.in_(teams)])]
    uses = connection.execute(
        select(runs.pipeline_name, steps.step_name, func.count(func.distinct(steps.run_id)))
        .join(pipeline_runs, runs.id == steps.run_id)
        .where(*scoped)
        .group_by(runs.pipeline_name, steps.step_name)
        .order_by(runs.pipeline_name, steps.step_name)
    ).all()
    recent = connection.execute(
        select(
            runs.id, runs.pipeline_name, steps.step_name, runs.status, runs.stage, runs.started_at, steps.combined_trust
        )
        .join(pipeline_runs, runs.id == steps.run_id)
        .where(*scoped)
        .order_by(runs.started_at.desc(), runs.id.desc())
        .limit(RECENT_RUNS)
    ).all()
    total = connection.execute(
        select(func.count(func.distinct(steps.run_id))).join(pipeline_runs, runs.id == steps.run_id).where(*scoped)
    ).scalar_one()
    text = row["template"] if kind == "prompt" else row["definition"]
    return Version(
        kind=kind,
        hash=hash_,
        subject=subject,
        text=text,
        first_seen=row["first_seen"],
        last_seen=row["last_seen"],
        runs=int(total),
        steps=tuple(StepUse(str(use[0]), str(use[1]), int(use[2])) for use in uses),
        recent_runs=tuple(RunUse(*run) for run in recent),
    )


def _visible(versions: list[Version], teams: tuple[str, ...] | None) -> list[Version]:
    """A caller limited to teams sees the versions their teams' runs used."""
    return versions if teams is None else [version for version in versions if version.runs]


def _calibrated(
    versions: list[Version],
    labelled: list[tuple[Bucket, list[LabelledStep]]],
    key: str,
    settings: CalibrationSettingsSpec,
) -> list[Version]:
    pooled: dict[str, list[LabelledStep]] = {}
    for bucket, steps in labelled:
        pooled.setdefault(getattr(bucket, key) or "", []).extend(steps)
    return [
        replace(
            version,
            calibration=version_calibration(
                pooled.get(version.hash, []),
                bin_width=settings.bin_width,
                n_min=settings.n_min,
                estimator=settings.estimator,
                confidence=settings.confidence,
            ),
        )
        for version in versions
    ]
