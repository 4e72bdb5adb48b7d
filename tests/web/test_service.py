"""The service around the API: the concurrency cap, parked runs, cron schedules, recovery and `serve`'s guard."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.web.conftest import LiveService, build_project, wait_for
from vectorstep.cli.serve import bind_listener
from vectorstep.dispatch.cron import Scheduler
from vectorstep.dispatch.inline import InlineDispatcher
from vectorstep.domain.approvals import ApprovalRequest, ApprovalStatus
from vectorstep.domain.records import LogEntry, RunRecord
from vectorstep.domain.status import RunStatus
from vectorstep.spec.settings import load_settings
from vectorstep.store.migrate import upgrade
from vectorstep.store.runs import RunFilter
from vectorstep.testing import FakeClock, ProjectDir, answer, generic_payload
from vectorstep.web.service import Service


@pytest.fixture(scope="module")
def capped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveService]:
    root = tmp_path_factory.mktemp("capped")
    project = build_project(root / "project", f"sqlite:///{root / 'vectorstep.db'}", concurrency={"max_runs": 1})
    server = LiveService(project.config)
    yield server
    server.stop()


def test_past_the_concurrency_cap_an_event_is_429_overloaded(capped: LiveService) -> None:
    with capped.client() as client:
        busy = client.post("/api/pipelines/slow/run")
        assert busy.status_code == 202
        refused = client.post("/webhook?source=generic&allow_testing=true", json=generic_payload(pipeline="slow"))
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "5"
        assert refused.json()["status"] == "overloaded"
        assert "1 runs are in flight" in refused.json()["detail"]
        wait_for(client, busy.json()["run_id"], until=("completed",))
        deadline = time.monotonic() + 10
        while capped.service.dispatcher.in_flight and time.monotonic() < deadline:
            time.sleep(0.02)
        again = client.post("/webhook?source=generic&allow_testing=true", json=generic_payload(pipeline="slow"))
        assert again.status_code == 202
        wait_for(client, again.json()["run_id"], until=("completed",))


def test_a_run_waiting_for_a_person_holds_no_slot(capped: LiveService) -> None:
    with capped.client() as client:
        waiting = client.post("/api/pipelines/approve-me/run").json()["run_id"]
        wait_for(client, waiting, until=("waiting",))
        other = client.post("/api/pipelines/sandbox/run")
        assert other.status_code == 202
        wait_for(client, other.json()["run_id"], until=("completed",))
        approval = next(a for a in client.get("/api/approvals").json()["approvals"] if a["run_id"] == waiting)
        client.post(f"/api/approvals/{approval['id']}/reject")
        record = wait_for(client, waiting, until=("escalated", "completed"))
    assert record["status"] == "escalated"
    assert [(step["name"], step["status"]) for step in record["steps"]] == [("ask", "escalated")]  # `after` never ran


def scheduled_project(root: Path) -> ProjectDir:
    project = ProjectDir(root)
    project.scripted_agent("reporter", answer(0.9, "all quiet"))
    step = {"name": "report", "executor": "gateway", "executor_config": {"agent": "reporter"}}
    for name, stage in (("nightly", "production"), ("trial", "testing")):
        project.pipeline(
            name,
            {
                "name": name,
                "stage": stage,
                "schedule": {"cron": "*/5 * * * *", "summary": f"{name} report", "labels": {"kind": "report"}},
                "steps": [step],
            },
        )
    project.settings({"database": {"url": f"sqlite:///{root / 'vectorstep.db'}"}})
    return project


async def test_a_schedule_fires_once_per_time_through_the_stage_gate(tmp_path: Path) -> None:
    settings = load_settings(scheduled_project(tmp_path).config)
    clock = FakeClock()  # 12:00:00
    clock.advance(30)
    service = Service(settings, clock=clock)
    await upgrade(service.database)
    try:
        scheduler = Scheduler(service, clock)
        await scheduler.fire_due()  # nothing is due yet: the next time is 12:05
        assert await service.runs.count_runs() == 0
        clock.advance(5 * 60)
        await scheduler.fire_due()
        await scheduler.fire_due()  # the same fire time again: not a second run
        dispatcher = service.dispatcher
        assert isinstance(dispatcher, InlineDispatcher)
        await dispatcher.runs_in_flight.drain(timeout_seconds=30)
        runs = await service.runs.list_runs(RunFilter())
        assert [(run.pipeline, run.source, run.status) for run in runs] == [("nightly", "cron", RunStatus.COMPLETED)]
        context = runs[0].context
        assert context["summary"] == "nightly report" and context["labels"] == {"kind": "report"}
        assert context["fingerprint"] == "cron:nightly:2026-01-01T12:05:00+00:00"
    finally:
        await service.engine.aclose()
        await service.database.dispose()


async def test_runs_a_dead_process_left_running_are_marked_interrupted_on_start(tmp_path: Path) -> None:
    settings = load_settings(scheduled_project(tmp_path).config)
    service = Service(settings)
    await upgrade(service.database)
    now = service.clock.now()
    stranded = RunRecord("stranded", "nightly", RunStatus.RUNNING, "production", now, "cron")
    await service.runs.insert_run(stranded, LogEntry("stranded", now, "info", "run_started", "started"))
    await service.start()
    try:
        record = await service.runs.get_run("stranded", with_log=True)
    finally:
        await service.stop()
    assert record.status is RunStatus.INTERRUPTED
    assert record.error == "the process driving this run stopped before it ended"
    assert record.log[-1].message.startswith("run interrupted")


async def test_a_run_whose_process_was_killed_is_settled_at_once_not_when_its_lease_runs_out(tmp_path: Path) -> None:
    settings = load_settings(scheduled_project(tmp_path).config)
    service = Service(settings)
    await upgrade(service.database)
    now = service.clock.now()
    dead = subprocess.Popen(["sleep", "0"])
    dead.wait()  # its pid now names no process
    lease_until = now + timedelta(seconds=30)
    for run_id, owner in [
        ("killed", f"serve:{socket.gethostname()}:{dead.pid}:a1b2c3d4"),
        ("elsewhere", f"serve:another-host:{dead.pid}:a1b2c3d4"),  # another host's: only time tells
    ]:
        stranded = RunRecord(run_id, "nightly", RunStatus.RUNNING, "production", now, "cron")
        await service.runs.insert_run(
            stranded, LogEntry(run_id, now, "info", "run_started", "started"), lease=(owner, lease_until)
        )
    await service.start()  # a second after the kill, well within the dead process's 30 s lease
    try:
        killed = await service.runs.get_run("killed")
        elsewhere = await service.runs.get_run("elsewhere")
    finally:
        await service.stop()
    assert killed.status is RunStatus.INTERRUPTED
    assert elsewhere.status is RunStatus.RUNNING


def test_start_up_mistakes_are_one_line_and_exit_2(tmp_path: Path) -> None:
    project = scheduled_project(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        in_use = run_cli("serve", "--config", str(project.config), "--port", port, cwd=tmp_path)
    project.settings({"database": {"url": "postgresql://nobody@127.0.0.1:9/nowhere"}})
    no_database = run_cli("serve", "--config", str(project.config), "--port", port, cwd=tmp_path)
    upgrade = run_cli("db", "upgrade", "--config", str(project.config), cwd=tmp_path)
    assert (
        in_use.returncode == 2
        and in_use.stderr.strip() == f"serve: cannot listen on 127.0.0.1:{port}: Address already in use"
    )
    assert "VectorStep on" not in in_use.stderr  # nothing claims to listen when it does not
    for result in (no_database, upgrade):
        assert result.returncode == 2 and "Traceback" not in result.stderr
        assert result.stderr.strip().startswith(
            "error: cannot reach the database postgresql+asyncpg://nobody@127.0.0.1:9/"
        )


async def test_connections_to_serves_socket_send_small_answers_at_once() -> None:
    # Nagle's algorithm on an accepted connection holds a keep-alive answer's body until the client
    # acknowledges its headers: ~40 ms for every page and API answer under 64 KiB on loopback.
    listener = bind_listener("127.0.0.1", 0)
    found: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Answer(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            connection = transport.get_extra_info("socket")
            found.set_result(connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await asyncio.get_running_loop().create_server(Answer, sock=listener)
    _, writer = await asyncio.open_connection(*listener.getsockname())
    try:
        assert await asyncio.wait_for(found, 5) == 1
    finally:
        writer.close()
        server.close()
        await server.wait_closed()


def test_serve_refuses_to_listen_beyond_localhost_without_tokens(tmp_path: Path) -> None:
    project = scheduled_project(tmp_path)
    result = run_cli("serve", "--config", str(project.config), "--host", "0.0.0.0", cwd=tmp_path)
    assert result.returncode == 2
    assert "refusing to listen on 0.0.0.0 without auth tokens" in result.stderr
    assert "Traceback" not in result.stderr


async def test_a_run_that_had_asked_a_person_waits_for_the_answer_after_a_restart(tmp_path: Path) -> None:
    settings = load_settings(scheduled_project(tmp_path).config)
    service = Service(settings)
    await upgrade(service.database)
    now = service.clock.now()
    asked = RunRecord("asked", "nightly", RunStatus.RUNNING, "production", now, "cron")
    await service.runs.insert_run(asked, LogEntry("asked", now, "info", "run_started", "started"))
    request = ApprovalRequest("asked", "nightly", "report", None, "Ship it?", None, "production", 3600)
    await service.approvals.create_approval(
        request, approval_id="a1", channel="log", created_at=now, expires_at=now + timedelta(hours=1)
    )
    await service.start()  # the process that asked stopped before it recorded `waiting`
    try:
        waiting = await service.runs.get_run("asked", with_log=True)
        still_asked = await service.approvals.get_approval("a1")
        holder, _ = await service.runs.lease("asked")
    finally:
        await service.stop()
    assert waiting.status is RunStatus.WAITING
    assert waiting.log[-1].message == "waiting for a person: approval a1 (recorded after its driver stopped)"
    assert still_asked.status is ApprovalStatus.PENDING  # recovery did not settle the question for the person
    assert holder is None  # parked, held by nobody: whoever sees the decision resumes it


def test_a_run_page_follows_a_run_that_a_terminal_drives_beside_the_service(tmp_path: Path) -> None:
    """SQLite: `vectorstep run` in a terminal writes to the service's database; its run page is live too."""
    project = ProjectDir(tmp_path / "project")
    project.scripted_agent("triage", {**answer(0.9, "triaged"), "delay_seconds": 1.5})
    project.scripted_agent("report", {**answer(0.9, "reported"), "delay_seconds": 1.5})
    steps = [{"name": name, "executor": "gateway", "executor_config": {"agent": name}} for name in ("triage", "report")]
    project.pipeline("by-hand", {"name": "by-hand", "steps": steps})
    project.settings({"database": {"url": f"sqlite:///{tmp_path / 'vectorstep.db'}"}})
    server = LiveService(project.config)
    terminal = subprocess.Popen(
        [sys.executable, "-m", "vectorstep", "run", "by-hand", "--config", str(project.config)],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with server.client(token=None) as client:
            deadline = time.monotonic() + 30
            while not (listed := client.get("/api/runs").json()["runs"]) and time.monotonic() < deadline:
                time.sleep(0.05)
            run_id = listed[0]["run_id"]
            kinds = []
            with client.stream("GET", f"/ui/runs/{run_id}/events", timeout=30) as stream:
                for line in stream.iter_lines():
                    if line.startswith("event: "):
                        kinds.append(line.removeprefix("event: "))
                        if kinds[-1] == "finished":
                            break
            assert client.get(f"/api/runs/{run_id}").json()["status"] == "completed"
    finally:
        terminal.wait(timeout=60)
        server.stop()
    assert kinds[-1] == "finished" and "step" in kinds
