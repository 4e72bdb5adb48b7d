"""The runner with the store writer: rows exist as things happen, and no run is left `running`."""

from __future__ import annotations

import asyncio
import contextlib

from vectorstep.domain.events import RunEvent, StepStarted
from vectorstep.domain.status import RunStatus, StepStatus
from vectorstep.engine.services import Engine
from vectorstep.intake.generic import manual_context
from vectorstep.spec.project import Project, load_project
from vectorstep.spec.settings import load_settings
from vectorstep.store.runs import RunFilter, RunRepository
from vectorstep.store.writer import StoreWriter
from vectorstep.testing import FakeClock, ProjectDir, answer


def two_step_project(project: ProjectDir, *, delay: float = 0.0) -> Project:
    project.scripted_agent("fast", answer(0.9, "fast done"))
    project.scripted_agent("slow", {**answer(0.9, "slow done"), "delay_seconds": delay})
    project.pipeline(
        "p",
        {
            "name": "p",
            "steps": [
                {"name": "first", "executor": "gateway", "executor_config": {"agent": "fast"}},
                {"name": "second", "executor": "gateway", "executor_config": {"agent": "slow"}},
            ],
        },
    )
    project.settings({})
    loaded = load_project(load_settings(project.config))
    assert loaded.problems == ()
    return loaded


class Snapshots:
    """An observer after the store writer: what a reader of the database sees at each step start."""

    def __init__(self, runs: RunRepository) -> None:
        self.runs = runs
        self.seen: list[tuple[str, RunStatus, list[str], list[str]]] = []

    async def notify(self, event: RunEvent) -> None:
        if isinstance(event, StepStarted):
            run = await self.runs.get_run(event.run_id, with_log=True)
            self.seen.append((event.step, run.status, [s.name for s in run.steps], [e.event for e in run.log]))


async def test_the_run_and_its_log_are_written_as_they_happen(project: ProjectDir, runs: RunRepository) -> None:
    loaded = two_step_project(project)
    snapshots = Snapshots(runs)
    async with Engine(loaded, observers=[StoreWriter(runs), snapshots], clock=FakeClock()) as engine:
        record = await engine.run(loaded.pipelines["p"].spec, manual_context(FakeClock().now()))
    assert snapshots.seen == [
        ("first", RunStatus.RUNNING, [], ["run_started", "step_started"]),
        ("second", RunStatus.RUNNING, ["first"], ["run_started", "step_started", "step_finished", "step_started"]),
    ]
    stored = await runs.get_run(record.run_id, with_log=True)
    assert stored.status is RunStatus.COMPLETED and stored.finished_at is not None
    assert [entry.event for entry in stored.log][-1] == "run_finished"
    assert [step.as_json() for step in stored.steps] == [step.as_json() for step in record.steps]


async def test_an_interrupted_run_is_recorded_as_interrupted_not_left_running(
    project: ProjectDir, runs: RunRepository
) -> None:
    loaded = two_step_project(project, delay=30)
    started = asyncio.Event()

    class Trigger:
        async def notify(self, event: RunEvent) -> None:
            if isinstance(event, StepStarted) and event.step == "second":
                started.set()

    async with Engine(loaded, observers=[StoreWriter(runs), Trigger()]) as engine:
        task = asyncio.create_task(engine.run(loaded.pipelines["p"].spec, manual_context(FakeClock().now())))
        await started.wait()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    (run,) = await runs.list_runs(RunFilter())
    stored = await runs.get_run(run.run_id)
    assert stored.status is RunStatus.INTERRUPTED and stored.error == "the run was interrupted"
    assert [(step.name, step.status) for step in stored.steps] == [("first", StepStatus.COMPLETED)]


async def test_tokens_of_every_attempt_and_iteration_are_counted(project: ProjectDir) -> None:
    project.scripted_agent("drafter", answer(0.5, "never quite sure"))
    project.pipeline(
        "p",
        {
            "name": "p",
            "steps": [
                {
                    "name": "draft",
                    "executor": "gateway",
                    "executor_config": {"agent": "drafter"},
                    "prompt_template": "Draft {{ loop.iteration }}",
                    "on_low_confidence": "proceed",
                    "loop_until": {"confidence": 0.9, "max_iterations": 3},
                }
            ],
        },
    )
    project.settings({})
    loaded = load_project(load_settings(project.config))
    async with Engine(loaded, clock=FakeClock()) as engine:
        run = await engine.run(loaded.pipelines["p"].spec, manual_context(FakeClock().now()))
    (step,) = run.steps
    last_call = next(event for event in step.trace if event.type == "llm_call")
    assert step.iterations == 3
    assert step.input_tokens == 3 * (last_call.input_tokens or 0)  # the same prompt size three times
    assert run.input_tokens == step.input_tokens
