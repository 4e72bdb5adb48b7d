"""PostgreSQL: runs as jobs on the queue, driven by `vectorstep worker` processes beside `serve`.

Real processes, real signals: a worker killed with SIGKILL halfway through a step, a worker
stopped with SIGTERM, decisions taken from the CLI, writes whose job never got deferred.
"""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import run_cli
from tests.fixtures.fleet import Fleet
from vectorstep.domain.approvals import ApprovalStatus
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.records import LogEntry, RunRecord
from vectorstep.domain.status import RunStatus
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.snapshot import spec_snapshot
from vectorstep.store.approvals import ApprovalRepository
from vectorstep.store.database import connect
from vectorstep.store.migrate import HEAD_REVISION, current_revision
from vectorstep.store.runs import RunRepository
from vectorstep.testing import ProjectDir, answer, generic_payload

pytestmark = pytest.mark.postgres


def queue_project(root: Path, database_url: str, **settings: Any) -> ProjectDir:
    """`incident`: triage, a 3-second investigation, report. `approve-me`: triage, a person, report."""
    project = ProjectDir(root)
    project.scripted_agent("triage", answer(0.9, "checkout is failing"))
    project.scripted_agent("investigate", {**answer(0.9, "deploy 8f3a91c raised 5xx"), "delay_seconds": 3})
    project.scripted_agent("report", answer(0.9, "rolled back"))
    gateway = [
        {"name": name, "executor": "gateway", "executor_config": {"agent": name}}
        for name in ("triage", "investigate", "report")
    ]
    project.pipeline(
        "incident",
        {
            "name": "incident",
            "stage": "production",
            "trigger": {"match": {"labels.kind": "incident"}},
            "steps": gateway,
        },
    )
    ask = {"name": "ask", "executor": "human", "executor_config": {"message": "Roll back?", "timeout_seconds": 600}}
    project.pipeline(
        "approve-me",
        {
            "name": "approve-me",
            "stage": "production",
            "trigger": {"match": {"labels.kind": "approval"}},
            "steps": [gateway[0], ask, gateway[2]],
        },
    )
    project.settings({"database": {"url": database_url}, **settings})
    return project


@pytest.fixture
def fleet(tmp_path: Path, postgres_url: str) -> Iterator[Fleet]:
    project = queue_project(tmp_path / "project", postgres_url, concurrency={"shutdown_grace_seconds": 1})
    running = Fleet(project.config, tmp_path / "logs")
    yield running
    running.stop()


def post(client: httpx.Client, kind: str, event: str = "e") -> str:
    response = client.post(
        "/webhook?source=generic", json=generic_payload(event=event, data={"labels": {"kind": kind}})
    )
    assert response.status_code == 202, response.text
    return str(response.json()["run_id"])


def wait_until(client: httpx.Client, run_id: str, check: Any, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        record: dict[str, Any] = client.get(f"/api/runs/{run_id}").json()
        if check(record):
            return record
        if time.monotonic() > deadline:
            raise AssertionError(f"run {run_id}: {json.dumps(record['log'][-5:], indent=1)}")
        time.sleep(0.05)


def logged(record: dict[str, Any], text: str) -> list[dict[str, Any]]:
    return [entry for entry in record["log"] if text in entry["message"]]


def driver_pid(record: dict[str, Any]) -> int:
    """The pid of the worker whose pick-up line is the last one in the run's log."""
    lines = logged(record, "picked up by worker:") + logged(record, "taken up by worker:")
    lines.sort(key=lambda entry: str(entry["ts"]))
    found = re.search(r"worker:\d+:[^:]+:(\d+)", lines[-1]["message"])
    assert found is not None
    return int(found.group(1))


def test_a_worker_killed_in_the_middle_of_a_step_is_replaced_and_no_finished_step_runs_again(fleet: Fleet) -> None:
    first, second = fleet.start_worker(), fleet.start_worker()
    with fleet.client() as client:
        run_id = post(client, "incident")
        record = wait_until(client, run_id, lambda run: logged(run, "step investigate started"))
        victim = next(worker for worker in (first, second) if worker.pid == driver_pid(record))
        fleet.kill(victim)  # SIGKILL: no goodbye, its heartbeat just stops
        killed_at = time.monotonic()
        record = wait_until(client, run_id, lambda run: run["status"] == "completed", timeout=40)
        resumed_after = time.monotonic() - killed_at
    assert [step["name"] for step in record["steps"]] == ["triage", "investigate", "report"]
    assert logged(record, "investigate runs again from its start")
    assert logged(record, "the process driving it stopped")
    assert resumed_after < 15 + 3  # noticed and taken up within 15 s, then the 3 s step runs again
    survivor = next(worker for worker in (first, second) if worker is not victim)
    assert driver_pid(record) == survivor.pid


def test_a_worker_stopped_with_sigterm_hands_its_run_on_after_the_grace_period(fleet: Fleet) -> None:
    first = fleet.start_worker()
    with fleet.client() as client:
        run_id = post(client, "incident")
        wait_until(client, run_id, lambda run: logged(run, "step investigate started"))
        second = fleet.start_worker()
        fleet.kill(first, signal.SIGTERM)  # 1 s of grace, then the 3 s step is left to the other worker
        assert first.returncode == 0
        record = wait_until(client, run_id, lambda run: run["status"] == "completed", timeout=40)
    assert [step["name"] for step in record["steps"]] == ["triage", "investigate", "report"]
    assert logged(record, "the worker driving this run stopped; another worker takes it up")
    assert driver_pid(record) == second.pid and logged(record, "investigate runs again from its start")
    assert "stopping: runs in flight get 1 s to finish" in fleet.log("worker-1")


def test_an_approval_decided_from_the_cli_is_resumed_by_a_worker(fleet: Fleet) -> None:
    fleet.start_worker()
    with fleet.client() as client:
        run_id = post(client, "approval")
        wait_until(client, run_id, lambda run: run["status"] == "waiting")
        approval = client.get("/api/approvals").json()["approvals"][0]
        decided = run_cli(
            "approvals", "approve", approval["id"], "--config", str(fleet.config), cwd=fleet.config.parent
        )
        assert decided.returncode == 0, decided.stderr
        assert f"run {run_id[:12]} continues on a worker" in decided.stdout
        record = wait_until(client, run_id, lambda run: run["status"] == "completed")
    assert [step["name"] for step in record["steps"]] == ["triage", "ask", "report"]
    assert logged(record, f"approval {approval['id'][:12]} approved by")


def test_runs_whose_job_never_reached_the_queue_are_driven_all_the_same(fleet: Fleet, postgres_url: str) -> None:
    """A process killed between writing a run (or a decision) and deferring its job leaves nothing
    in the queue; the workers' maintenance finds such runs and gives them their job."""
    with fleet.client() as client:
        waiting = post(client, "approval")
        fleet.start_worker()
        wait_until(client, waiting, lambda run: run["status"] == "waiting")
    lost = asyncio.run(_lose_jobs(postgres_url, fleet.config.parent, waiting))
    with fleet.client() as client:
        new = wait_until(client, lost, lambda run: run["status"] == "completed")
        decided = wait_until(client, waiting, lambda run: run["status"] == "completed")
    assert [step["name"] for step in new["steps"]] == ["triage", "investigate", "report"]
    assert logged(new, "picked up by worker:")
    assert [step["name"] for step in decided["steps"]] == ["triage", "ask", "report"]


async def _lose_jobs(url: str, root: Path, waiting: str) -> str:
    """A run written as intake writes it, 20 s ago, with no job; and `waiting`'s approval decided with no job."""
    from vectorstep.spec.project import load_project
    from vectorstep.spec.settings import load_settings

    database = connect(url)
    try:
        runs = RunRepository(database)
        spec: PipelineSpec = load_project(load_settings(root / "vectorstep.yaml")).pipelines["incident"].spec
        started = (await runs.get_run(waiting)).started_at - timedelta(seconds=20)
        context = NormalisedContext("generic", started, summary="lost").as_dict()
        run = RunRecord("lost", "incident", RunStatus.RUNNING, "production", started, "generic", context=context)
        await runs.insert_run(
            RunRecord(**{**run.__dict__, "spec": spec_snapshot(spec)}),
            LogEntry("lost", started, "info", "run_started", "run of incident started"),
        )
        approvals = ApprovalRepository(database)
        asked = (await approvals.for_run(waiting))[-1]
        await approvals.decide_approval(asked.id, ApprovalStatus.APPROVED, "someone", started)
    finally:
        await database.dispose()
    return "lost"


def test_run_pages_follow_a_run_that_another_process_drives(fleet: Fleet) -> None:
    fleet.start_worker()
    with fleet.client() as client:
        run_id = post(client, "incident")
        wait_until(client, run_id, lambda run: logged(run, "picked up by"))
        kinds: list[str] = []
        with client.stream("GET", f"/ui/runs/{run_id}/events", timeout=30) as stream:
            for line in stream.iter_lines():
                if line.startswith("event: "):
                    kinds.append(line.removeprefix("event: "))
                    if kinds[-1] == "finished":
                        break
    assert "step" in kinds and kinds[-1] == "finished"


def test_a_workers_metrics_count_the_runs_it_drove(fleet: Fleet) -> None:
    with httpx.Client() as probe:
        port = int(fleet.url.rsplit(":", 1)[1]) + 1
        fleet.start_worker("--metrics-port", str(port))
        with fleet.client() as client:
            run_id = post(client, "incident")
            wait_until(client, run_id, lambda run: run["status"] == "completed")
            served = client.get("/metrics").text
        worker = probe.get(f"http://127.0.0.1:{port}/metrics").text
    counted = 'vectorstep_pipeline_runs_total{pipeline="incident",status="completed"} 1.0'
    assert counted in worker
    assert counted not in served  # the intake process drove nothing: summing the two counts the run once
    assert "vectorstep_human_approvals_pending" in served and "vectorstep_human_approvals_pending" not in worker


def test_a_schedule_fires_once_however_many_workers_start(tmp_path: Path, postgres_url: str) -> None:
    project = queue_project(tmp_path / "project", postgres_url)
    project.pipeline(
        "nightly",
        {
            "name": "nightly",
            "stage": "production",
            "schedule": {"cron": "* * * * *", "summary": "every minute"},
            "steps": [{"name": "triage", "executor": "gateway", "executor_config": {"agent": "triage"}}],
        },
    )
    fleet = Fleet(project.config, tmp_path / "logs")
    try:
        for _ in range(3):  # each catches up the fire time of the minute that began before it started
            fleet.start_worker(wait=False)
        time.sleep(6)
        with fleet.client() as client:
            listed = client.get("/api/runs", params={"pipeline": "nightly"}).json()["runs"]
            runs = [client.get(f"/api/runs/{run['run_id']}").json() for run in listed]
    finally:
        fleet.stop()
    assert runs and {run["source"] for run in runs} == {"cron"}
    fingerprints = [run["context"]["fingerprint"] for run in runs]
    assert len(fingerprints) == len(set(fingerprints)), fingerprints  # one run per fire time


def test_a_worker_needs_postgresql(tmp_path: Path) -> None:
    project = queue_project(tmp_path / "project", f"sqlite:///{tmp_path / 'vectorstep.db'}")
    worker = run_cli("worker", "--config", str(project.config), cwd=tmp_path)
    serve = run_cli("serve", "--no-workers-inline", "--config", str(project.config), cwd=tmp_path)
    assert worker.returncode == 2 and "Traceback" not in worker.stderr
    assert "a worker needs PostgreSQL" in worker.stderr and "SQLite is single-process" in worker.stderr
    assert serve.returncode == 2 and "--no-workers-inline needs PostgreSQL" in serve.stderr


def test_a_run_whose_terminal_was_killed_is_taken_up_by_a_worker(fleet: Fleet) -> None:
    """`vectorstep run` drives its run itself, under a lease; killed, its run goes to the workers."""
    fleet.start_worker()
    terminal = subprocess.Popen(
        [sys.executable, "-m", "vectorstep", "run", "incident", "--config", str(fleet.config)],
        cwd=fleet.config.parent,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with fleet.client() as client:
        deadline = time.monotonic() + 30
        while not (listed := client.get("/api/runs").json()["runs"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        run_id = listed[0]["run_id"]
        wait_until(client, run_id, lambda run: logged(run, "step investigate started"))
        terminal.kill()
        terminal.wait(timeout=30)
        record = wait_until(client, run_id, lambda run: run["status"] == "completed", timeout=30)
    assert [step["name"] for step in record["steps"]] == ["triage", "investigate", "report"]
    assert logged(record, "taken up by worker:") and logged(record, "investigate runs again from its start")


def test_a_worker_on_an_empty_database_brings_the_schema_up_to_date_and_starts(
    tmp_path: Path, postgres_url: str
) -> None:
    project = queue_project(tmp_path / "project", postgres_url)
    worker = subprocess.Popen(
        [sys.executable, "-m", "vectorstep", "worker", "--config", str(project.config)],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stderr is not None
        banner = worker.stderr.readline()
    finally:
        worker.send_signal(signal.SIGTERM)
        _, rest = worker.communicate(timeout=30)
    assert banner.startswith("VectorStep worker worker:"), banner + rest
    assert worker.returncode == 0 and "Traceback" not in rest
    revision = asyncio.run(_revision(postgres_url))
    assert revision == HEAD_REVISION


async def _revision(url: str) -> str | None:
    database = connect(url)
    try:
        return await current_revision(database)
    finally:
        await database.dispose()


@pytest.mark.parametrize("retried", ["vectorstep.drive", "vectorstep.resume"])
def test_a_job_retried_after_its_worker_died_takes_its_run_up_whatever_waits_beside_it(
    fleet: Fleet, postgres_url: str, retried: str
) -> None:
    """The worker driving the run (first picked up, or resumed after the decision) died; its job runs
    again, and the approval's timeout job, ten minutes away, waits in the queue beside it — and must
    not hold it back."""
    fleet.start_worker()
    with fleet.client() as client:
        run_id = post(client, "approval")
        wait_until(client, run_id, lambda run: run["status"] == "waiting")
    asyncio.run(_left_running_by_a_dead_worker(postgres_url, run_id, retried))
    with fleet.client() as client:
        record = wait_until(client, run_id, lambda run: run["status"] == "completed", timeout=40)
    assert [step["name"] for step in record["steps"]] == ["triage", "ask", "report"]
    assert logged(record, "approved by someone")
    assert not logged(record, "recorded after its driver stopped")  # answered already: not parked again


async def _left_running_by_a_dead_worker(url: str, run_id: str, retried: str) -> None:
    from procrastinate import App, PsycopgConnector
    from sqlalchemy import Connection, text

    from vectorstep.dispatch.queue import NEW_RUN, QUEUE, UNDER_WAY, libpq_url

    database = connect(url)
    try:
        approvals = ApprovalRepository(database)
        asked = (await approvals.for_run(run_id))[-1]
        await approvals.decide_approval(asked.id, ApprovalStatus.APPROVED, "someone", asked.created_at)

        def resumed_then_dead(connection: Connection) -> None:
            connection.execute(
                text("UPDATE pipeline_runs SET status = 'running', lease_owner = :dead WHERE id = :run"),
                {"dead": "worker:999999:gone-host:1", "run": run_id},
            )

        await database.write(resumed_then_dead)
    finally:
        await database.dispose()
    # The approval's own timeout job (scheduled when the run parked) waits in the queue already.
    app = App(connector=PsycopgConnector(conninfo=libpq_url(url), min_size=1, max_size=1))
    async with app.open_async():
        if retried == "vectorstep.drive":
            again = app.configure_task(name=retried, lock=run_id, queue=QUEUE, priority=NEW_RUN)
            await again.defer_async(run_id=run_id)
        else:
            again = app.configure_task(name=retried, lock=run_id, queue=QUEUE, priority=UNDER_WAY)
            await again.defer_async(run_id=run_id, approval_id=asked.id)
