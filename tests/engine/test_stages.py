"""People, checks and the outside world through the real engine, row by row of the stage table."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import timedelta
from typing import Any

import pytest

from tests.conftest import RecordingServer
from vectorstep.domain.approvals import ApprovalStatus
from vectorstep.domain.records import ResumePoint, RunRecord
from vectorstep.domain.status import RunStatus, StepStatus
from vectorstep.engine.services import Engine
from vectorstep.intake.generic import manual_context
from vectorstep.spec.project import Project, load_project
from vectorstep.spec.settings import load_settings
from vectorstep.store.approvals import ApprovalRepository
from vectorstep.store.database import Database
from vectorstep.store.runs import RunRepository
from vectorstep.store.writer import StoreWriter
from vectorstep.testing import FakeClock, ProjectDir, answer


def build(project: ProjectDir, steps: list[dict[str, Any]], *, stage: str, **pipeline: Any) -> Project:
    project.scripted_agent("planner", answer(0.9, "roll back 8f3a", target="checkout; rm -rf /"))
    project.scripted_agent("unsure", answer(0.4, "maybe restart"))
    hook = pipeline.pop("hook", "http://127.0.0.1:9/unused")
    project.pipeline("p", {"name": "p", "stage": stage, "steps": steps, **pipeline})
    project.settings({"notifications": {"webhook": {"url": hook}}})
    loaded = load_project(load_settings(project.config))
    assert loaded.problems == ()
    return loaded


async def run_it(loaded: Project, database: Database, clock: FakeClock | None = None) -> RunRecord:
    runs = RunRepository(database)
    engine = Engine(
        loaded, observers=[StoreWriter(runs)], approvals=ApprovalRepository(database), clock=clock or FakeClock()
    )
    async with engine:
        record = await engine.run(
            loaded.pipelines["p"].spec, manual_context(FakeClock().now(), summary="5xx on checkout")
        )
    return await runs.get_run(record.run_id, with_log=True)


def plan(**fields: Any) -> dict[str, Any]:
    return {"name": "act", "executor": "gateway", "executor_config": {"agent": "planner"}, **fields}


@pytest.mark.parametrize(("stage", "status"), [("testing", StepStatus.COMPLETED), ("production", StepStatus.FAILED)])
async def test_a_human_step_nobody_decides(
    project: ProjectDir, database: Database, stage: str, status: StepStatus
) -> None:
    loaded = build(
        project,
        [{"name": "ask", "executor": "human", "executor_config": {"message": "ok?", "timeout_seconds": 30}}],
        stage=stage,
    )
    run = await run_it(loaded, database)
    (step,) = run.steps
    assert step.status is status
    if stage == "testing":
        assert step.confidence == 1.0 and step.output is not None and step.output["decided_by"] == "timeout"
    else:
        assert step.error is not None and "not decided within 30s: rejected (stage production)" in step.error
    assert [entry.event for entry in run.log if entry.event.startswith("run_")] == [
        "run_started",
        "run_waiting",
        "run_resumed",
        "run_finished",
    ]


async def test_a_rejected_human_check_forces_trust_to_zero(project: ProjectDir, database: Database) -> None:
    checks = [
        {
            "type": "shell",
            "name": "target-is-literal",
            "run": "printf '%s' {{ steps.act.target }}",
            "expect": "result == steps.act.target",
        },
        {"type": "human", "name": "signoff", "message": "Roll back {{ steps.act.target }}?", "timeout_seconds": 600},
    ]
    loaded = build(project, [plan(deterministic_checks=checks)], stage="production")
    approvals = ApprovalRepository(database)

    async def person() -> None:
        while not (pending := await approvals.list_approvals(status=ApprovalStatus.PENDING)):
            await asyncio.sleep(0.01)
        assert pending[0].message == "Roll back checkout; rm -rf /?"
        await approvals.decide_approval(pending[0].id, ApprovalStatus.REJECTED, "alice", FakeClock().now())

    from vectorstep.clock import SystemClock

    run, _ = await asyncio.gather(run_it(loaded, database, SystemClock()), person())  # type: ignore[arg-type]
    (step,) = run.steps
    assert step.status is StepStatus.ESCALATED and step.combined_trust == 0.0 and step.deterministic_passed is False
    report = step.trust_report or {}
    assert report["mode"] == "enforced" and report["signals"]["D"] is False
    assert [(c["name"], c["passed"]) for c in report["deterministic_checks"]] == [
        ("target-is-literal", True),
        ("signoff", False),
    ]
    assert report["deterministic_checks"][1]["detail"].startswith("rejected by alice")
    assert run.error is not None and "(check signoff failed)" in run.error


async def test_nobody_is_asked_when_the_answer_cannot_matter(project: ProjectDir, database: Database) -> None:
    failing = [
        {"type": "shell", "name": "still-broken", "run": "exit 1"},
        {"type": "human", "name": "signoff", "message": "ok?"},
    ]
    human_only = [{"type": "human", "name": "signoff", "message": "ok?"}]
    loaded = build(
        project,
        [
            plan(name="a", deterministic_checks=failing, on_low_confidence="proceed"),
            {**plan(name="b", deterministic_checks=human_only), "executor_config": {"agent": "unsure"}},
        ],
        stage="production",
    )
    run = await run_it(loaded, database)
    a, b = run.steps
    assert (a.trust_report or {})["deterministic_checks"][1]["detail"] == "not asked: still-broken failed"
    assert (b.trust_report or {})["deterministic_checks"][0][
        "detail"
    ] == "not asked: trust 0.4 is already below the threshold 0.75"
    assert await ApprovalRepository(database).list_approvals() == []


NOTIFY = {
    "escalate": [
        {
            "channel": "webhook",
            "template": "{{ escalation_reason }} | trust={{ combined_trust }} | failed={{ failed_checks | join(',') }} | {{ step_summary }}",
        }
    ]
}


@pytest.mark.parametrize("stage", ["testing", "production"])
async def test_notifications_leave_the_process_only_in_production(
    project: ProjectDir, database: Database, http_server: RecordingServer, stage: str
) -> None:
    checks = [{"type": "shell", "name": "still-broken", "run": "exit 1"}]
    loaded = build(
        project,
        [plan(deterministic_checks=checks)],
        stage=stage,
        notifications=NOTIFY,
        hook=http_server.url + "/notify",
    )
    run = await run_it(loaded, database)
    assert run.status is RunStatus.ESCALATED
    expected = "step act escalated: combined_trust 0 is below its confidence_threshold 0.75 (check still-broken failed) | trust=0.0 | failed=still-broken | roll back 8f3a"
    messages = [entry.message for entry in run.log]
    if stage == "testing":
        assert http_server.requests == []
        assert f"notification escalate → webhook: logged, not sent (stage testing): {expected}" in messages
    else:
        (sent,) = http_server.requests
        assert sent["body"]["text"] == expected and sent["body"]["action"] == "escalate"  # type: ignore[index]
        assert "notification escalate → webhook sent" in messages


@pytest.mark.parametrize("stage", ["testing", "production"])
async def test_on_failure_webhook_by_stage(
    project: ProjectDir, database: Database, http_server: RecordingServer, stage: str
) -> None:
    failing = {
        "name": "call",
        "executor": "webhook",
        "executor_config": {"url": "http://127.0.0.1:9/down"},
        "on_failure": {
            "policy": "continue",
            "webhook": {
                "url": http_server.url + "/failed",
                "payload": {"step": "{{ step_name }}", "error": "{{ error }}"},
            },
        },
    }
    loaded = build(project, [failing, plan()], stage=stage)
    run = await run_it(loaded, database)
    assert run.status is RunStatus.COMPLETED  # `continue` went on
    if stage == "testing":
        assert http_server.requests == []
        assert any("on_failure webhook not sent (stage testing)" in entry.message for entry in run.log)
    else:
        (sent,) = http_server.requests
        assert sent["body"]["step"] == "call" and "ConnectError" in sent["body"]["error"]  # type: ignore[index]


async def test_stopped_aborted_and_budget_actions(
    project: ProjectDir, database: Database, http_server: RecordingServer
) -> None:
    notifications = {
        name: [{"channel": "webhook", "template": name + ": {{ escalation_reason }}"}]
        for name in ("stopped", "page", "notify")
    }
    project.scripted_agent("quitter", answer(0.9, "nothing to do", proceed=False, proceed_reason="resolved"))
    loaded = build(
        project,
        [{"name": "q", "executor": "gateway", "executor_config": {"agent": "quitter"}}],
        stage="production",
        notifications=notifications,
        hook=http_server.url,
    )
    await run_it(loaded, database)
    project.pipeline(
        "p",
        {
            "name": "p",
            "stage": "production",
            "notifications": notifications,
            "steps": [
                {**plan(), "executor_config": {"agent": "unsure"}, "on_low_confidence": "abort", "on_abort": "page"}
            ],
        },
    )
    await run_it(load_project(load_settings(project.config)), database)
    project.pipeline(
        "p",
        {
            "name": "p",
            "stage": "production",
            "notifications": notifications,
            "budget": {"max_tokens": 5},
            "steps": [plan()],
        },
    )
    await run_it(load_project(load_settings(project.config)), database)
    assert [request["body"]["text"] for request in http_server.requests] == [  # type: ignore[index]
        "stopped: step q said not to proceed: resolved",
        "page: step act aborted: combined_trust 0.4 is below its confidence_threshold 0.75",
        "notify: budget exceeded: " + http_server.requests[2]["body"]["text"].split("budget exceeded: ")[1],  # type: ignore[index]
    ]


async def test_a_waiting_run_resumes_elsewhere_without_asking_the_agent_again(
    project: ProjectDir, database: Database
) -> None:
    checks = [{"type": "human", "name": "signoff", "message": "Roll back?", "timeout_seconds": 3600}]
    loaded = build(project, [plan(deterministic_checks=checks), {**plan(name="after")}], stage="production")
    runs, approvals = RunRepository(database), ApprovalRepository(database)
    from vectorstep.clock import SystemClock

    first = Engine(loaded, observers=[StoreWriter(runs)], approvals=approvals, clock=SystemClock())
    task = asyncio.create_task(first.run(loaded.pipelines["p"].spec, manual_context(FakeClock().now())))
    while not (pending := await approvals.list_approvals(status=ApprovalStatus.PENDING)) or (
        (await runs.get_run(pending[0].run_id)).status is not RunStatus.WAITING
    ):
        await asyncio.sleep(0.01)
    task.cancel()  # the process that waited is gone
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await first.aclose()
    waiting = await runs.get_run(pending[0].run_id)
    assert waiting.status is RunStatus.WAITING and waiting.steps == ()
    decided, _ = await approvals.decide_approval(pending[0].id, ApprovalStatus.APPROVED, "alice", FakeClock().now())
    async with Engine(loaded, observers=[StoreWriter(runs)], approvals=approvals, clock=SystemClock()) as second:
        resumed = await second.resume(ResumePoint(await runs.get_run(waiting.run_id), decided))
    assert resumed.status is RunStatus.COMPLETED
    act, after = (await runs.get_run(waiting.run_id)).steps
    checkpoint = pending[0].checkpoint or {}
    assert [event.as_dict() for event in act.trace] == checkpoint["primary"]["trace"]  # the same answer, not a new one
    assert act.deterministic_passed is True and after.status is StepStatus.COMPLETED


async def test_a_step_timeout_shorter_than_the_approval_still_lets_the_stage_decide(
    project: ProjectDir, database: Database
) -> None:
    step = {
        "name": "ask",
        "executor": "human",
        "timeout_seconds": 5,
        "executor_config": {"message": "ok?", "timeout_seconds": 3600},
    }
    loaded = build(project, [step], stage="testing")
    run = await run_it(loaded, database)
    (approval,) = await ApprovalRepository(database).list_approvals()
    assert run.steps[0].status is StepStatus.COMPLETED and approval.decided_by == "timeout"
    assert approval.expires_at - approval.created_at == timedelta(seconds=5)


async def test_queries_run_in_testing_too(
    project: ProjectDir, database: Database, http_server: RecordingServer
) -> None:
    http_server.responses = [(404, "{}")]
    checks = [
        {"type": "shell", "name": "breaching", "run": "echo 0.001", "expect": "result | float > 0.02"},
        {"type": "webhook", "name": "dashboard", "url": http_server.url + "/api/dashboards/uid/x"},
    ]
    loaded = build(project, [plan(deterministic_checks=checks)], stage="testing")
    run = await run_it(loaded, database)
    report = run.steps[0].trust_report or {}
    assert [check["passed"] for check in report["deterministic_checks"]] == [False, False]
    assert len(http_server.requests) == 1 and run.status is RunStatus.ESCALATED
