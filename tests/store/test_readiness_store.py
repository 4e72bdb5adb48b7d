"""Readiness evidence: a pipeline's own testing executions with their labels, on SQLite and PostgreSQL."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from tests.store.test_runs import T0, log, run_record, step_record
from vectorstep.domain.status import StepStatus
from vectorstep.store.database import Database
from vectorstep.store.feedback import FeedbackRepository, Mark
from vectorstep.store.readiness import ReadinessRepository
from vectorstep.store.runs import RunRepository


async def _run(
    runs: RunRepository, run_id: str, minute: int, *steps: tuple[str, dict[str, object]], **run: object
) -> None:
    await runs.insert_run(replace(run_record(run_id), **run), log(run_id, "started"))  # type: ignore[arg-type]
    finished = T0 + timedelta(minutes=minute)
    for name, fields in steps:
        record = step_record(run_id, name, finished_at=finished, **fields)
        await runs.insert_step(record, log(run_id, "step", name))


async def _mark(feedback: FeedbackRepository, run_id: str, step: str | None, label: str, minute: int) -> None:
    await feedback.mark(Mark(run_id, step, label, None, "alice", T0 + timedelta(minutes=minute)))


async def test_only_the_pipelines_own_testing_executions_count_newest_first(database: Database) -> None:
    runs = RunRepository(database)
    await _run(runs, "old", 1, ("investigate", {}))
    await _run(runs, "new", 2, ("investigate", {"status": StepStatus.ESCALATED, "combined_trust": 0.4}))
    await _run(runs, "prod", 3, ("investigate", {}), stage="production")
    await _run(runs, "replayed", 4, ("investigate", {}), source="replay")
    await _run(runs, "elsewhere", 5, ("investigate", {}), pipeline="another")
    await _run(runs, "skipped", 6, ("investigate", {"status": StepStatus.SKIPPED}))
    found = await ReadinessRepository(database).executions("checkout-5xx", [("investigate", False)])
    assert [(e.run_id, e.status, e.trust) for e in found["investigate"]] == [
        ("new", "escalated", 0.4),
        ("old", "completed", 0.9),
    ]
    assert (
        found["investigate"][0].prompt_hash == "feedfacefeedface"
        and found["investigate"][0].agent_version == "0123456789ab"
    )


async def test_each_execution_carries_its_label_and_where_it_came_from(database: Database) -> None:
    runs, feedback = RunRepository(database), FeedbackRepository(database)
    await _run(runs, "own", 1, ("investigate", {}))
    await _run(runs, "check", 2, ("investigate", {"deterministic_passed": False}))
    await _run(runs, "run", 3, ("investigate", {}))
    await _run(runs, "remarked", 4, ("investigate", {}))
    await _run(runs, "none", 5, ("investigate", {}))
    await _mark(feedback, "own", "investigate", "correct", 10)
    await _mark(feedback, "own", None, "incorrect", 11)  # the step's own mark comes first
    await _mark(feedback, "check", None, "correct", 12)  # a failed check comes before the run's mark
    await _mark(feedback, "run", None, "partial", 13)
    await _mark(feedback, "remarked", "investigate", "incorrect", 14)
    await _mark(feedback, "remarked", "investigate", "correct", 15)  # re-marking replaces
    found = await ReadinessRepository(database).executions("checkout-5xx", [("investigate", False)])
    labels = {e.run_id: (e.label, e.label_source, e.marked_by_a_person) for e in found["investigate"]}
    assert labels == {
        "own": (1.0, "step_mark", True),
        "check": (0.0, "failed_check", False),
        "run": (0.5, "run_mark", True),
        "remarked": (1.0, "step_mark", True),
        "none": (None, None, False),
    }


async def test_a_fan_out_reads_its_items_and_a_branch_its_own_name(database: Database) -> None:
    runs = RunRepository(database)
    await _run(
        runs,
        "r1",
        1,
        ("per_pod/0", {}),
        ("per_pod/1", {"status": StepStatus.FAILED}),
        ("perXpod/0", {}),  # `_` is not a wildcard here
        ("per_pod", {"executor": "fan_out"}),  # the group's own row is not an execution of its work
        ("checks/db", {}),
    )
    found = await ReadinessRepository(database).executions(
        "checkout-5xx", [("per_pod", True), ("checks/db", False), ("never-ran", False)]
    )
    assert sorted(e.status for e in found["per_pod"]) == ["completed", "failed"]
    assert len(found["checks/db"]) == 1 and found["never-ran"] == []


async def test_teams_and_the_limit_narrow_the_evidence(database: Database) -> None:
    runs = RunRepository(database)
    for number in range(5):
        await _run(runs, f"r{number}", number, ("investigate", {}), team="sre" if number % 2 else "shop")
    repository = ReadinessRepository(database)
    shop = await repository.executions("checkout-5xx", [("investigate", False)], teams=("shop",))
    assert [e.run_id for e in shop["investigate"]] == ["r4", "r2", "r0"]
    newest = await repository.executions("checkout-5xx", [("investigate", False)], limit=2)
    assert [e.run_id for e in newest["investigate"]] == ["r4", "r3"]
    assert await repository.executions("checkout-5xx", []) == {}
