"""`durable:` acts: a run whose process stopped is resumed, rerun or escalated by the next process."""

from __future__ import annotations

import asyncio
import socket
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.store.test_runs import step_record
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.records import LogEntry, RunRecord
from vectorstep.domain.status import RunStatus
from vectorstep.spec.settings import load_settings
from vectorstep.spec.snapshot import spec_snapshot
from vectorstep.store.migrate import upgrade
from vectorstep.store.runs import RunFilter
from vectorstep.testing import ProjectDir, answer
from vectorstep.web.service import Service


def durable_project(root: Path, durable: dict[str, Any] | None) -> ProjectDir:
    project = ProjectDir(root)
    for name in ("triage", "investigate", "report"):
        project.scripted_agent(name, answer(0.9, f"{name} done"))
    pipeline: dict[str, Any] = {
        "name": "incident",
        "stage": "production",
        "notifications": {"escalate": [{"channel": "log", "template": "handed over: {{ escalation_reason }}"}]},
        "steps": [
            {"name": name, "executor": "gateway", "executor_config": {"agent": name}}
            for name in ("triage", "investigate", "report")
        ],
    }
    if durable is not None:
        pipeline["durable"] = durable
    project.pipeline("incident", pipeline)
    project.settings({"database": {"url": f"sqlite:///{root / 'vectorstep.db'}"}})
    return project


async def stranded_after_triage(
    root: Path, durable: dict[str, Any] | None, age: float = 5, holder: str | None = None
) -> Service:
    """A service over a database where a killed process (`holder`, if its lease is still live) left
    run `left` after its first step."""
    settings = load_settings(durable_project(root, durable).config)
    service = Service(settings)
    await upgrade(service.database)
    now = service.clock.now()
    started = now - timedelta(seconds=age)
    spec = spec_snapshot(service.project.pipelines["incident"].spec)
    context = NormalisedContext("alertmanager", started, summary="checkout 5xx").as_dict()
    run = RunRecord(
        "left", "incident", RunStatus.RUNNING, "production", started, "alertmanager", context=context, spec=spec
    )
    lease = (holder, now + timedelta(seconds=30)) if holder is not None else None
    await service.runs.insert_run(run, LogEntry("left", started, "info", "run_started", "started"), lease=lease)
    triage = step_record(
        "left", "triage", output={"confidence": 0.9, "summary": "triage done", "next_step_context": ""}
    )
    await service.runs.insert_step(triage, LogEntry("left", started, "info", "step_finished", "triage done"))
    return service


async def settled(service: Service, run_id: str) -> RunRecord:
    for _ in range(400):
        run = await service.runs.get_run(run_id, with_log=True)
        if run.status.is_terminal:
            return run
        await asyncio.sleep(0.02)
    raise AssertionError(f"run {run_id} is still {run.status.value}")


async def test_resume_continues_at_the_step_that_was_running_and_never_reruns_a_finished_one(tmp_path: Path) -> None:
    service = await stranded_after_triage(tmp_path, {"on_interrupted": "resume"})
    await service.start()
    try:
        run = await settled(service, "left")
    finally:
        await service.stop()
    assert run.status is RunStatus.COMPLETED
    assert [step.name for step in run.steps] == ["triage", "investigate", "report"]
    assert run.steps[0].prompt == "Investigate checkout"  # the record from before the crash, untouched
    resumed = [entry.message for entry in run.log if entry.event == "run_resumed"]
    assert resumed == [
        f"resumed after the process driving it stopped (durable: resume), taken up by {service.name}; "
        "investigate runs again from its start"
    ]


async def test_rerun_starts_the_run_again_as_a_new_one(tmp_path: Path) -> None:
    service = await stranded_after_triage(tmp_path, {"on_interrupted": "rerun"})
    await service.start()
    try:
        old = await settled(service, "left")
        new_id = (old.error or "").rsplit(" ", 1)[-1]
        new = await settled(service, new_id)
    finally:
        await service.stop()
    assert old.status is RunStatus.INTERRUPTED and "durable.on_interrupted: rerun starts it again as run" in old.error
    assert new.status is RunStatus.COMPLETED and [step.name for step in new.steps] == [
        "triage",
        "investigate",
        "report",
    ]
    assert new.context["summary"] == "checkout 5xx"


async def test_escalate_hands_the_run_to_a_person(tmp_path: Path) -> None:
    service = await stranded_after_triage(tmp_path, {"on_interrupted": "escalate"})
    await service.start()
    try:
        run = await settled(service, "left")
    finally:
        await service.stop()
    assert run.status is RunStatus.ESCALATED
    assert run.error is not None and "durable.on_interrupted: escalate hands it to a person" in run.error
    assert any(entry.message.startswith("notification escalate → log") for entry in run.log)


@pytest.mark.parametrize(
    ("durable", "age", "says"),
    [
        (None, 5, "the process driving this run stopped before it ended"),
        ({"on_interrupted": "resume", "max_resume_age_seconds": 60}, 600, "more than durable.max_resume_age_seconds"),
    ],
    ids=["not-durable", "too-old"],
)
async def test_a_run_that_is_not_to_be_continued_is_marked_interrupted(
    tmp_path: Path, durable: dict[str, Any] | None, age: float, says: str
) -> None:
    service = await stranded_after_triage(tmp_path, durable, age=age)
    await service.start()
    try:
        run = await settled(service, "left")
        runs = await service.runs.list_runs(RunFilter())
    finally:
        await service.stop()
    assert run.status is RunStatus.INTERRUPTED and says in (run.error or "")
    assert [step.name for step in run.steps] == ["triage"] and len(runs) == 1


async def test_a_run_of_a_process_killed_a_moment_ago_is_resumed_at_once(tmp_path: Path) -> None:
    dead = subprocess.Popen(["sleep", "0"])
    dead.wait()  # its pid now names no process; its lease still has 30 s to run
    holder = f"serve:{socket.gethostname()}:{dead.pid}:0badc0de"
    service = await stranded_after_triage(tmp_path, {"on_interrupted": "resume"}, holder=holder)
    await service.start()
    try:
        run = await settled(service, "left")
    finally:
        await service.stop()
    assert run.status is RunStatus.COMPLETED and [step.name for step in run.steps] == [
        "triage",
        "investigate",
        "report",
    ]
