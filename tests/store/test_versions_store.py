"""Version history and artifacts in the store, on SQLite and PostgreSQL: written with their step, once per
version, safe under concurrent writers; older history entered by the migration without texts."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import Connection, select, text

from tests.store.test_runs import T0, log, run_record, step_record
from vectorstep.domain.artifacts import Artifact
from vectorstep.domain.records import VersionTexts
from vectorstep.errors import NotFoundError
from vectorstep.spec.service import CalibrationSettingsSpec
from vectorstep.store.artifacts import ArtifactRepository
from vectorstep.store.database import Database, connect
from vectorstep.store.feedback import FeedbackRepository, Mark
from vectorstep.store.migrate import HEAD_REVISION, upgrade
from vectorstep.store.runs import RunRepository
from vectorstep.store.tables import agent_versions, step_prompt_versions
from vectorstep.store.versions import VersionRepository

SETTINGS = CalibrationSettingsSpec()
TEXTS = VersionTexts(prompt_template="Investigate {{ labels.service }}", agent_definition="# settings\n{}\n")


async def _step(runs: RunRepository, run_id: str, minutes: float, **fields: object) -> None:
    stage = str(fields.pop("stage", "testing"))
    team = fields.pop("team", "sre")
    at = T0 + timedelta(minutes=minutes)
    await runs.insert_run(replace(run_record(run_id, started=at, team=team), stage=stage), log(run_id, "started"))
    fields.setdefault("version_texts", TEXTS)
    record = step_record(run_id, started_at=at, finished_at=at + timedelta(seconds=2), **fields)
    await runs.insert_step(record, log(run_id, "step", "investigate"))


def _rows(connection: Connection) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    prompts = [dict(row) for row in connection.execute(select(step_prompt_versions)).mappings()]
    agents = [dict(row) for row in connection.execute(select(agent_versions)).mappings()]
    return prompts, agents


async def test_each_version_is_stored_once_with_its_text_and_when_it_was_seen(database: Database) -> None:
    runs = RunRepository(database)
    await _step(runs, "r2", 10)
    await _step(runs, "r1", 0)  # written later, ran earlier: first_seen moves back, last_seen stays
    await _step(runs, "r3", 5, version_texts=None)  # a writer that knows no text changes nothing of it
    prompts, agents = await database.read(_rows)
    assert prompts == [
        {
            "pipeline_name": "checkout-5xx",
            "step_name": "investigate",
            "prompt_hash": "feedfacefeedface",
            "template": "Investigate {{ labels.service }}",
            "first_seen": T0,
            "last_seen": T0 + timedelta(minutes=10, seconds=2),
        }
    ]
    assert [(row["agent_name"], row["agent_version"], row["definition"]) for row in agents] == [
        ("investigator", "0123456789ab", "# settings\n{}\n")
    ]


async def test_a_skipped_step_used_no_version_and_a_version_without_text_gains_it(database: Database) -> None:
    runs = RunRepository(database)
    await _step(runs, "skipped", 0, prompt=None, agent_version=None, prompt_hash="0000000000000000")
    await _step(runs, "old", 1, version_texts=None)
    prompts, agents = await database.read(_rows)
    assert [(row["prompt_hash"], row["template"]) for row in prompts] == [("feedfacefeedface", None)]
    assert [row["definition"] for row in agents] == [None]
    await _step(runs, "new", 2)
    prompts, agents = await database.read(_rows)
    assert [row["template"] for row in prompts] == ["Investigate {{ labels.service }}"]
    assert [row["definition"] for row in agents] == ["# settings\n{}\n"]


async def test_concurrent_writers_of_one_version_make_one_row(database: Database) -> None:
    runs = RunRepository(database)
    for number in range(12):
        await runs.insert_run(run_record(f"c{number}"), log(f"c{number}", "started"))
    await asyncio.gather(
        *[
            runs.insert_step(step_record(f"c{number}", version_texts=TEXTS), log(f"c{number}", "step"))
            for number in range(12)
        ]
    )
    prompts, agents = await database.read(_rows)
    assert len(prompts) == 1 and len(agents) == 1


async def test_versions_are_listed_with_their_runs_steps_and_calibration(database: Database) -> None:
    runs, feedback = RunRepository(database), FeedbackRepository(database)
    production = {"stage": "production", "effective_confidence": 0.8}
    for number, label in enumerate(["correct", "correct", "incorrect"]):
        await _step(runs, f"p{number}", number, **production)
        await feedback.mark(Mark(f"p{number}", "investigate", label, None, "alice", T0))
    edited = VersionTexts(prompt_template="Investigate {{ labels.service }} and say why", agent_definition=None)
    await _step(runs, "n1", 10, prompt_hash="beefbeefbeefbeef", version_texts=edited, team="other")
    versions = VersionRepository(database)

    first, second = await versions.prompt_versions("checkout-5xx", "investigate", SETTINGS)
    assert (first.hash, first.runs, second.hash, second.runs) == ("feedfacefeedface", 3, "beefbeefbeefbeef", 1)
    assert [run.run_id for run in first.recent_runs] == ["p2", "p1", "p0"]
    assert [use.as_json() for use in first.steps] == [{"pipeline": "checkout-5xx", "step": "investigate", "runs": 3}]
    calibration = first.calibration
    assert calibration is not None and second.calibration is None  # testing runs are never counted
    assert (calibration.n, calibration.predicted, calibration.validated_bins, calibration.bins) == (3, 0.8, 0, 1)
    assert abs(calibration.accuracy - 2 / 3) < 1e-6

    scoped = await versions.prompt_versions("checkout-5xx", "investigate", SETTINGS, teams=("other",))
    assert [version.hash for version in scoped] == ["beefbeefbeefbeef"]  # only what its own runs used

    (agent,) = await versions.agent_versions("investigator", SETTINGS)
    assert (agent.runs, agent.calibration is not None and agent.calibration.n) == (4, 3)
    assert await versions.agent_versions("investigator", SETTINGS, pipeline="checkout-5xx", step="elsewhere") == []
    assert await versions.step_agents("checkout-5xx", "investigate") == ["investigator"]
    assert await versions.subjects() == (["checkout-5xx/investigate"], ["investigator"])


async def test_artifacts_are_stored_with_their_step_and_go_with_their_run(database: Database) -> None:
    runs = RunRepository(database)
    kept = (Artifact("report.md", "# Report\n", 9), Artifact("big.log", "x…[truncated]", 5000, truncated=True))
    await _step(runs, "a1", 0, artifacts=kept)
    store = ArtifactRepository(database)
    listed = await store.list("a1", "investigate")
    assert [(item.name, item.size, item.truncated, item.content) for item in listed] == [
        ("big.log", 5000, True, None),
        ("report.md", 9, False, None),
    ]
    assert (await store.get("a1", "investigate", "report.md")).content == "# Report\n"
    with pytest.raises(NotFoundError, match=r"^step investigate of run a1 has no artifact 'nothing.txt'$"):
        await store.get("a1", "investigate", "nothing.txt")

    await database.write(lambda connection: connection.execute(text("DELETE FROM pipeline_runs WHERE id = 'a1'")))
    assert await store.list("a1", "investigate") == []


async def test_the_migration_enters_older_history_without_texts(database_url: str) -> None:
    from alembic import command
    from alembic.config import Config

    from vectorstep.store.migrate import MIGRATIONS

    database = connect(database_url)

    def to_0007(connection: Connection) -> None:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        command.upgrade(config, "0007")

    await database.write(to_0007)
    older = RunRepository(database)
    for run_id, minutes in (("h1", 0), ("h2", 30)):
        at = T0 + timedelta(minutes=minutes)
        await database.write(
            lambda connection, run_id=run_id, at=at: connection.execute(
                text(
                    "INSERT INTO pipeline_runs (id, pipeline_name, status, stage, source, context, input_tokens,"
                    " output_tokens, started_at, updated_at) VALUES (:id, 'p', 'completed', 'testing', 'manual',"
                    " '{}', 0, 0, :at, :at)"
                ),
                {"id": run_id, "at": at.replace(tzinfo=None)},
            )
        )
        await database.write(
            lambda connection, run_id=run_id, at=at: connection.execute(
                text(
                    "INSERT INTO pipeline_steps (run_id, step_index, step_name, status, executor, agent,"
                    " agent_version, prompt, prompt_hash, input_tokens, output_tokens, duration_ms, attempts,"
                    " iterations, started_at, finished_at) VALUES (:id, 0, 's', 'completed', 'gateway', 'a',"
                    " 'v1', 'the prompt', 'h1h1', 0, 0, 1.0, 1, 1, :at, :at)"
                ),
                {"id": run_id, "at": at.replace(tzinfo=None)},
            )
        )
    assert await upgrade(database) == ("0007", HEAD_REVISION)
    (version,) = await VersionRepository(database).prompt_versions("p", "s", SETTINGS)
    (agent,) = await VersionRepository(database).agent_versions("a", SETTINGS)
    await older.database.dispose()
    assert (version.hash, version.text, version.runs) == ("h1h1", None, 2)
    assert (version.first_seen, version.last_seen) == (T0, T0 + timedelta(minutes=30))
    assert (agent.hash, agent.text, agent.runs) == ("v1", None, 2)
