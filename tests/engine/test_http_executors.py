"""The webhook and notify executors against a real HTTP server, through the real runner."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import RecordingServer
from vectorstep.domain.status import RunStatus, StepStatus
from vectorstep.engine.services import Engine
from vectorstep.executors.http import idempotency_key
from vectorstep.intake.generic import manual_context
from vectorstep.spec.project import load_project
from vectorstep.spec.settings import load_settings
from vectorstep.testing import FakeClock, ProjectDir


async def run_pipeline(project: ProjectDir, name: str, clock: FakeClock | None = None):  # type: ignore[no-untyped-def]
    project.settings({"database": {"url": "sqlite:///./unused.db"}})
    loaded_project = load_project(load_settings(project.config))
    assert loaded_project.problems == ()
    clock = clock or FakeClock()
    async with Engine(loaded_project, clock=clock) as engine:
        return await engine.run(loaded_project.pipelines[name].spec, manual_context(clock.now(), summary="disk full"))


async def test_webhook_step_posts_the_rendered_prompt_and_retries_a_5xx(
    project: ProjectDir, http_server: RecordingServer
) -> None:
    http_server.responses = [(503, "busy"), (200, '{"ticket": "OPS-123"}')]
    project.pipeline(
        "p",
        {
            "name": "p",
            "steps": [
                {
                    "name": "open-ticket",
                    "executor": "webhook",
                    "executor_config": {
                        "url": f"{http_server.url}/tickets",
                        "headers": {"X-Run": "{{ pipeline_run_id }}"},
                    },
                    "prompt_template": '{"title": "{{ context.summary }}"}',
                    "retry": {"attempts": 3, "backoff": "exponential", "delay_seconds": 2},
                }
            ],
        },
    )
    clock = FakeClock()
    run = await run_pipeline(project, "p", clock)
    assert run.status is RunStatus.COMPLETED
    (step,) = run.steps
    assert step.attempts == 2 and clock.sleeps == [2.0]
    assert step.output is not None and step.output["response"] == {"ticket": "OPS-123"}
    assert step.output["status_code"] == 200 and step.confidence == 1.0
    assert [request["body"] for request in http_server.requests] == [{"title": "disk full"}] * 2
    assert http_server.requests[0]["headers"]["X-Run"] == run.run_id  # type: ignore[index]
    keys = [request["headers"]["Idempotency-Key"] for request in http_server.requests]  # type: ignore[index]
    # one key per (run, step, attempt): a receiver drops a request sent again after a crash and resume
    assert keys == [idempotency_key(run.run_id, "open-ticket", 1), idempotency_key(run.run_id, "open-ticket", 2)]
    assert len(set(keys)) == 2 and all(len(key) == 32 for key in keys)


async def test_webhook_step_fails_after_its_attempts_with_the_status_in_the_error(
    project: ProjectDir, http_server: RecordingServer
) -> None:
    http_server.responses = [(500, "down")] * 3
    project.pipeline(
        "p",
        {
            "name": "p",
            "steps": [
                {
                    "name": "call",
                    "executor": "webhook",
                    "executor_config": {"url": f"{http_server.url}/x"},
                    "retry": {"attempts": 3, "delay_seconds": 1},
                }
            ],
        },
    )
    clock = FakeClock()
    run = await run_pipeline(project, "p", clock)
    (step,) = run.steps
    assert run.status is RunStatus.FAILED and step.status is StepStatus.FAILED
    assert step.attempts == 3 and clock.sleeps == [1.0, 2.0]  # exponential backoff
    assert step.error is not None and "answered 500" in step.error and "127.0.0.1" in step.error


async def test_notify_sends_its_rendered_payload_in_production_only(
    project: ProjectDir, http_server: RecordingServer
) -> None:
    step = {
        "name": "tell",
        "executor": "notify",
        "executor_config": {
            "url": f"{http_server.url}/hook",
            "payload": {"text": "{{ stage }}: {{ context.summary }}"},
        },
    }
    project.pipeline("prod", {"name": "prod", "stage": "production", "steps": [step]})
    project.pipeline("test", {"name": "test", "stage": "testing", "steps": [step]})
    production = await run_pipeline(project, "prod")
    testing = await run_pipeline(project, "test")
    assert [request["body"] for request in http_server.requests] == [{"text": "production: disk full"}]
    assert production.steps[0].output is not None and production.steps[0].output["sent"] is True
    assert testing.steps[0].output is not None and testing.steps[0].output["sent"] is False
    assert testing.status is RunStatus.COMPLETED


async def test_an_unreachable_url_fails_the_step_cleanly(project: ProjectDir, tmp_path: Path) -> None:
    project.pipeline(
        "p",
        {
            "name": "p",
            "steps": [{"name": "call", "executor": "webhook", "executor_config": {"url": "http://127.0.0.1:9/x"}}],
        },
    )
    run = await run_pipeline(project, "p")
    assert run.status is RunStatus.FAILED
    assert run.steps[0].error_kind == "executor_error" and "ConnectError" in (run.steps[0].error or "")
