"""Insight figures, as the store writes and reads them on SQLite and PostgreSQL: every figure a page shows
comes out of the runs, steps and approvals written through the repositories, and a late write moves it."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from pathlib import Path

from sqlalchemy import Connection, text

from tests.conftest import run_cli
from tests.store.test_runs import T0, log, run_record, step_record
from vectorstep.domain.approvals import TIMEOUT, ApprovalRequest, ApprovalStatus
from vectorstep.domain.status import RunStatus, StepStatus
from vectorstep.domain.trace import TraceEvent
from vectorstep.store.approvals import ApprovalRepository
from vectorstep.store.database import Database, connect
from vectorstep.store.insights import InsightFilter, InsightRepository
from vectorstep.store.runs import RunRepository
from vectorstep.testing import ProjectDir

HOUR = T0.strftime("%Y-%m-%d %H")  # 2026-03-01 09
DAY = T0.strftime("%Y-%m-%d")


def hours(dimension: str | None = None, name: str | None = None, teams: tuple[str, ...] | None = None) -> InsightFilter:
    return InsightFilter("2026-03-01 00", "2026-03-01 23", "h", dimension, name, teams)  # type: ignore[arg-type]


def days(dimension: str | None = None, name: str | None = None) -> InsightFilter:
    return InsightFilter("2026-02-01", "2026-03-31", "d", dimension, name)  # type: ignore[arg-type]


def tool_trace(*calls: tuple[str, bool]) -> tuple[TraceEvent, ...]:
    events = []
    for number, (name, failed) in enumerate(calls):
        at = T0.isoformat()
        events.append(TraceEvent(type="tool_call", seq=2 * number, ts=at, call_id=f"c{number}", name=name, args={}))
        events.append(
            TraceEvent(
                type="tool_result",
                seq=2 * number + 1,
                ts=at,
                call_id=f"c{number}",
                name=name,
                content="x",
                is_error=failed,
            )
        )
    return tuple(events)


async def finish(runs: RunRepository, run_id: str, status: RunStatus, tokens: int, cost: float) -> None:
    await runs.finish_run(
        run_id,
        status=status,
        finished_at=T0 + timedelta(minutes=5),
        error=None,
        input_tokens=tokens,
        output_tokens=0,
        cost=cost,
        log=log(run_id, "finished"),
    )


async def history(runs: RunRepository) -> None:
    """Three runs of checkout (team sre) and one of disk (team infra), all started at 09:30."""
    for run_id, pipeline, team in (("a", "checkout", "sre"), ("b", "checkout", "sre"), ("c", "checkout", "sre")):
        await runs.insert_run(run_record(run_id, pipeline=pipeline, team=team), log(run_id, "started"))
    await runs.insert_run(
        run_record("d", pipeline="disk", team="infra", started=T0 + timedelta(hours=2)), log("d", "x")
    )
    # S, V-adjusted S, G, checks: a agrees with itself; b oversells (S 0.95, G 0.2) and a verifier lowered it;
    # c escalated with a failed check; d has no G.
    await runs.insert_step(
        step_record(
            "a",
            confidence=0.9,
            effective_confidence=0.9,
            grounding_score=0.85,
            combined_trust=0.85,
            deterministic_passed=True,
            trace=tool_trace(("prom__query", False), ("prom__query", True)),
        ),
        log("a", "step"),
    )
    await runs.insert_step(
        step_record(
            "b",
            confidence=0.95,
            verifier_confidence=0.5,
            effective_confidence=0.6,
            grounding_score=0.2,
            combined_trust=0.2,
            trace=tool_trace(("loki__query", False)),
            verifier_input_tokens=200,
            verifier_output_tokens=20,
            grounding_input_tokens=400,
            grounding_output_tokens=10,
        ),
        log("b", "step"),
    )
    await runs.insert_step(
        step_record(
            "c",
            status=StepStatus.ESCALATED,
            confidence=0.7,
            effective_confidence=0.7,
            grounding_score=1.0,
            combined_trust=0.5,
            deterministic_passed=False,
            model="gpt-4o",
            trace=(),
        ),
        log("c", "step"),
    )
    await runs.insert_step(
        step_record(
            "d",
            name="triage",
            confidence=0.8,
            effective_confidence=0.8,
            grounding_score=None,
            combined_trust=0.8,
            started_at=T0 + timedelta(hours=2),
            trace=(),
        ),
        log("d", "step"),
    )
    await finish(runs, "a", RunStatus.COMPLETED, 1000, 0.01)
    await finish(runs, "b", RunStatus.COMPLETED, 3000, 0.05)
    await finish(runs, "c", RunStatus.ESCALATED, 500, 0.002)
    await finish(runs, "d", RunStatus.FAILED, 100, 0.001)


async def test_every_figure_comes_from_the_runs_steps_and_approvals_written(database: Database) -> None:
    runs = RunRepository(database)
    await history(runs)
    found = await InsightRepository(database).insights(hours(), "pipeline")

    assert sorted(found.outcomes or []) == [
        (HOUR, "completed", 2),
        (HOUR, "escalated", 1),
        ("2026-03-01 11", "failed", 1),
    ]
    (nine, eleven) = found.signals or []
    assert (nine.bucket, nine.steps, nine.escalated, nine.trusted) == (HOUR, 3, 1, 3)
    assert abs(nine.trust_sum - (0.85 + 0.2 + 0.5)) < 1e-9
    assert (nine.graded, nine.divergent) == (3, 1)  # only b: |0.95 − 0.2| > 0.3
    assert (nine.verified, nine.overridden) == (1, 1)
    assert (nine.checked, nine.check_failures) == (2, 1)
    assert (eleven.steps, eleven.graded) == (1, 0)
    # A step's spend is all of its calls, as its run counts them: primary, verifier and judge.
    assert (nine.input_tokens, nine.output_tokens) == (3 * 120 + 200 + 400, 3 * 30 + 20 + 10)
    assert sorted(found.scatter or []) == [(7, 9, 1), (9, 2, 1), (9, 8, 1)]  # G 1.0 lands in the top cell
    assert [(tool.name, tool.calls, tool.errors) for tool in found.tools] == [
        ("prom__query", 2, 1),
        ("loki__query", 1, 0),
    ]
    nine_spend = next(spend for spend in found.spend or [] if spend.bucket == HOUR)
    assert (nine_spend.runs, nine_spend.tokens, nine_spend.max_tokens) == (3, 4500, 3000)
    assert abs(nine_spend.max_cost - 0.05) < 1e-9
    by_pipeline = {row.name: row for row in found.breakdown}
    assert (by_pipeline["checkout"].runs, by_pipeline["checkout"].steps, by_pipeline["checkout"].escalated) == (3, 3, 1)
    assert by_pipeline["disk"].runs == 1


async def test_a_page_narrows_to_its_pipeline_team_model_or_tool(database: Database) -> None:
    runs = RunRepository(database)
    await history(runs)
    insights = InsightRepository(database)
    disk = await insights.insights(hours("pipeline", "disk"), "step")
    assert [(row.name, row.steps) for row in disk.breakdown] == [("triage", 1)]
    assert sum(n for _, _, n in disk.outcomes or []) == 1
    model = await insights.insights(hours("model", "gpt-4o"), "agent")
    assert model.outcomes is None  # runs have no model: their chart does not apply
    assert [signal.steps for signal in model.signals or []] == [1]
    tool = await insights.insights(hours("tool", "loki__query"), "step")
    assert [(row.name, row.tool_calls) for row in tool.breakdown] == [("investigate", 1)]
    assert tool.signals is None
    seen_by_infra = await insights.insights(hours(teams=("infra",)), "pipeline")
    assert [row.name for row in seen_by_infra.breakdown] == ["disk"]


async def test_days_are_the_sums_of_their_hours(database: Database) -> None:
    runs = RunRepository(database)
    await history(runs)
    found = await InsightRepository(database).insights(days(), "team")
    assert sorted(found.outcomes or []) == [(DAY, "completed", 2), (DAY, "escalated", 1), (DAY, "failed", 1)]
    (day,) = found.signals or []
    assert (day.bucket, day.steps, day.divergent) == (DAY, 4, 1)
    (spend,) = found.spend or []
    assert (spend.max_tokens, spend.tokens) == (3000, 4600)  # the most of one run, not a sum of maxima
    assert {row.name: row.runs for row in found.breakdown} == {"sre": 3, "infra": 1}


async def test_a_write_after_a_read_moves_the_figures_and_a_resumed_run_is_counted_once(database: Database) -> None:
    runs = RunRepository(database)
    insights = InsightRepository(database)
    await history(runs)
    before = await insights.insights(hours(), "pipeline")
    assert sum(n for _, status, n in before.outcomes or [] if status == "escalated") == 1
    # A step lands in an hour already summed (a long run); the escalated run is resumed and completes.
    await runs.insert_step(
        step_record(
            "a",
            name="remediate",
            confidence=0.4,
            grounding_score=0.9,
            combined_trust=0.4,
            started_at=T0 + timedelta(minutes=20),
        ),
        log("a", "late"),
    )
    await finish(runs, "c", RunStatus.COMPLETED, 800, 0.003)
    after = await insights.insights(hours(), "pipeline")
    statuses = {status: n for bucket, status, n in after.outcomes or [] if bucket == HOUR}
    assert statuses == {"completed": 3}
    nine = next(signal for signal in after.signals or [] if signal.bucket == HOUR)
    assert (nine.steps, nine.divergent) == (4, 2)
    assert await insights.pending() == 0


async def test_hostile_tool_names_and_page_names_neither_fail_a_write_nor_a_read(database: Database) -> None:
    runs = RunRepository(database)
    insights = InsightRepository(database)
    await runs.insert_run(run_record("h", pipeline="checkout", team="sre"), log("h", "started"))
    # An agent may call a tool by any name: NUL (PostgreSQL keeps no NUL in text), and far too long.
    hostile, huge = "prom\x00__query", "\x00" * 150 + "x" * 5000
    await runs.insert_step(step_record("h", trace=tool_trace((hostile, False), (huge, True))), log("h", "step"))
    found = await insights.insights(hours(), "tool")
    assert sorted((tool.name, tool.calls, tool.errors) for tool in found.tools) == [
        ("\\u0000" * 33 + "\\u", 1, 1),
        ("prom\\u0000__query", 1, 0),
    ]
    for dimension in ("pipeline", "team", "tool", "step"):
        empty = await insights.insights(hours(dimension, "a\x00b"), "model" if dimension != "model" else "agent")
        assert empty.tools == [] and not any(n for _, _, n in empty.outcomes or [])
    escaped = await insights.insights(hours("tool", hostile), "step")
    assert [(tool.name, tool.calls) for tool in escaped.tools] == [("prom\\u0000__query", 1)]
    assert [(row.name, row.tool_calls) for row in escaped.breakdown] == [("investigate", 1)]


async def test_pages_read_while_runs_are_written_lose_no_run(database: Database) -> None:
    runs = RunRepository(database)
    insights = InsightRepository(database)
    await history(runs)
    before = await insights.insights(hours(), "pipeline")
    completed = sum(n for _, status, n in before.outcomes or [] if status == "completed")

    async def write(number: int) -> None:
        run_id = f"w{number}"
        await runs.insert_run(run_record(run_id, pipeline="checkout", team="sre"), log(run_id, "started"))
        await finish(runs, run_id, RunStatus.COMPLETED, 10, 0.0)

    # Readers take and recompute the same hour while writers mark it again: none fails, none loses a run.
    await asyncio.gather(*(write(n) for n in range(12)), *(insights.insights(hours(), "pipeline") for _ in range(6)))
    final = await insights.insights(hours(), "pipeline")
    assert sum(n for _, _, n in final.outcomes or []) == 4 + 12
    assert sum(n for _, status, n in final.outcomes or [] if status == "completed") == completed + 12
    assert await insights.pending() == 0


async def test_approval_waits_count_people_and_leave_the_clock_out(database: Database) -> None:
    runs = RunRepository(database)
    await runs.insert_run(run_record("r"), log("r", "x"))
    approvals = ApprovalRepository(database)
    for number, (waited, by) in enumerate(((120, "alice"), (600, "bob"), (3600, TIMEOUT), (None, None))):
        request = ApprovalRequest("r", "checkout-5xx", f"step{number}", None, "ok?", "sre", "production", 3600)
        approval, _ = await approvals.create_approval(
            request, approval_id=f"ap{number}", channel="ui", created_at=T0, expires_at=T0 + timedelta(hours=1)
        )
        if waited is not None and by is not None:
            await approvals.decide_approval(approval.id, ApprovalStatus.APPROVED, by, T0 + timedelta(seconds=waited))
    found = await InsightRepository(database).insights(hours(), None)
    (hour,) = found.approvals or []
    assert (hour.asked, hour.decided, hour.timed_out) == (4, 2, 1)
    assert round(hour.latency_sum_s) == 720 and round(hour.latency_max_s) == 600
    step0 = await InsightRepository(database).insights(hours("step", "step0"), None)
    assert [row.asked for row in step0.approvals or []] == [1]


async def test_db_upgrade_sums_the_history_stored_before_insights(database_url: str, tmp_path: Path) -> None:
    from alembic import command
    from alembic.config import Config

    from vectorstep.store.migrate import MIGRATIONS

    database = connect(database_url)

    def to_0008(connection: Connection) -> None:
        config = Config()
        config.set_main_option("script_location", str(MIGRATIONS))
        config.attributes["connection"] = connection
        command.upgrade(config, "0008")

    await database.write(to_0008)
    for run_id, at, status in (("h1", T0, "completed"), ("h2", T0 + timedelta(hours=3), "escalated")):
        await database.write(
            lambda connection, run_id=run_id, at=at, status=status: connection.execute(
                text(
                    "INSERT INTO pipeline_runs (id, pipeline_name, status, stage, source, context, input_tokens,"
                    " output_tokens, started_at, updated_at) VALUES (:id, 'p', :status, 'production', 'manual',"
                    " '{}', 10, 5, :at, :at)"
                ),
                {"id": run_id, "at": at.replace(tzinfo=None), "status": status},
            )
        )
    await database.dispose()
    project = ProjectDir(tmp_path / "project")
    project.settings({"database": {"url": database_url}})
    upgraded = run_cli("db", "upgrade", "--config", str(project.config), cwd=project.root)
    assert upgraded.returncode == 0, upgraded.stderr
    assert "upgraded from 0008 to revision 0009" in upgraded.stdout
    assert "insights: summed 2 hours of history" in upgraded.stdout
    database = connect(database_url)
    found = await InsightRepository(database).insights(hours(), "pipeline")
    await database.dispose()
    assert sorted(found.outcomes or []) == [(HOUR, "completed", 1), ("2026-03-01 12", "escalated", 1)]
    assert found.pending_hours == 0
