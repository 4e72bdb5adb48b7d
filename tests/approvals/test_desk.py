"""The approval desk on a real database: one approval per question, the stage's timeout rule, routing."""

from __future__ import annotations

import asyncio
from datetime import timedelta

import httpx
import pytest

from tests.conftest import RecordingServer
from vectorstep.approvals.desk import ApprovalDesk
from vectorstep.approvals.gate import HumanGate
from vectorstep.checks.human import run_human_check
from vectorstep.clock import Clock, SystemClock
from vectorstep.domain.approvals import TIMEOUT, Approval, ApprovalRequest, ApprovalStatus
from vectorstep.domain.records import LogEntry, RunRecord
from vectorstep.domain.status import RunStatus
from vectorstep.spec.service import HumanApprovalSpec
from vectorstep.spec.trust_blocks import HumanCheckSpec
from vectorstep.store.approvals import ApprovalRepository
from vectorstep.store.database import Database
from vectorstep.store.runs import RunRepository
from vectorstep.testing import FakeClock


async def desk_for(
    database: Database,
    clock: Clock,
    routes: dict[str, object] | None = None,
    http: httpx.AsyncClient | None = None,
    poll_seconds: float = 1,
) -> ApprovalDesk:
    runs = RunRepository(database)
    run = RunRecord("run-1", "p", RunStatus.RUNNING, "production", clock.now(), "manual")
    await runs.insert_run(run, LogEntry("run-1", clock.now(), "info", "x", "x"))
    return ApprovalDesk(
        ApprovalRepository(database),
        HumanApprovalSpec.model_validate(routes or {}),
        http or httpx.AsyncClient(),
        clock,
        public_url="https://vectorstep.example",
        poll_seconds=poll_seconds,
    )


def request(stage: str = "production", check: str | None = "signoff", team: str | None = None) -> ApprovalRequest:
    return ApprovalRequest("run-1", "p", "act", check, "Roll back 8f3a?", team, stage, 60, {"kept": True})


async def test_asking_twice_is_the_same_approval(database: Database) -> None:
    desk = await desk_for(database, FakeClock())
    first = await desk.ask(request())
    second = await desk.ask(request())
    other = await desk.ask(request(check=None))
    assert first.id == second.id != other.id
    assert first.status is ApprovalStatus.PENDING and first.checkpoint == {"kept": True}


async def test_a_decision_from_elsewhere_ends_the_wait(database: Database) -> None:
    desk = await desk_for(database, SystemClock(), poll_seconds=0.02)  # real time: the person answers first
    approval = await desk.ask(request())

    async def person() -> None:
        await asyncio.sleep(0.05)
        decided, changed = await desk.decide(approval.id[:12], True, "alice")
        assert changed and decided.decided_by == "alice"

    waited, _ = await asyncio.gather(desk.wait(approval), person())
    assert waited.status is ApprovalStatus.APPROVED and waited.decided_by == "alice"
    again, changed = await desk.decide(approval.id, False, "bob")
    assert not changed and again.status is ApprovalStatus.APPROVED  # decided once


@pytest.mark.parametrize(
    ("stage", "status"), [("testing", ApprovalStatus.APPROVED), ("production", ApprovalStatus.REJECTED)]
)
async def test_the_clock_decides_by_stage(database: Database, stage: str, status: ApprovalStatus) -> None:
    clock = FakeClock()
    desk = await desk_for(database, clock)
    approval = await desk.ask(request(stage=stage))
    decided = await desk.wait(approval)  # the fake clock runs through the 60 s
    assert decided.status is status and decided.decided_by == TIMEOUT
    assert clock.now() - approval.created_at == timedelta(seconds=60)


async def test_a_late_decision_gets_the_timeout_verdict(database: Database) -> None:
    clock = FakeClock()
    desk = await desk_for(database, clock)
    approval = await desk.ask(request())
    clock.advance(61)
    decided, changed = await desk.decide(approval.id, True, "alice")
    assert changed and decided.status is ApprovalStatus.REJECTED and decided.decided_by == TIMEOUT


async def test_production_uses_the_teams_channel_and_testing_never_leaves_the_process(
    database: Database, http_server: RecordingServer
) -> None:
    routes = {
        "default": {"channel": "log"},
        "teams": {"payments": {"channel": "webhook", "webhook": {"url": http_server.url + "/approvals"}}},
    }
    async with httpx.AsyncClient() as client:
        desk = await desk_for(database, FakeClock(), routes, client)
        tried = await desk.ask(request(stage="testing", team="payments"))
        sent = await desk.ask(request(stage="production", team="payments", check="other"))
    assert tried.channel == "log" and sent.channel == "webhook"
    (posted,) = http_server.requests
    body = posted["body"]
    assert body["approval"]["id"] == sent.id and body["approval"]["message"] == "Roll back 8f3a?"  # type: ignore[index]
    assert body["decide"]["approve (POST)"] == f"https://vectorstep.example/api/approvals/{sent.id}/approve"  # type: ignore[index]


async def test_a_failing_channel_leaves_the_approval_decidable(
    database: Database, caplog: pytest.LogCaptureFixture
) -> None:
    routes = {"default": {"channel": "webhook", "webhook": {"url": "http://127.0.0.1:9/down"}}}
    async with httpx.AsyncClient() as client:
        desk = await desk_for(database, FakeClock(), routes, client)
        approval = await desk.ask(request())
    assert "the webhook channel failed" in caplog.text and "vectorstep approvals approve" in caplog.text
    decided, changed = await desk.decide(approval.id, True, "alice")
    assert changed and decided.approved


async def test_an_approval_that_expired_with_nobody_waiting_is_settled_by_the_stage(database: Database) -> None:
    clock = FakeClock()
    desk = await desk_for(database, clock)
    approval = await desk.ask(request(stage="testing"))
    assert (await desk.settle(approval)).status is ApprovalStatus.PENDING  # not yet due
    clock.advance(61)
    settled = await desk.settle(approval)
    assert settled.status is ApprovalStatus.APPROVED and settled.decided_by == TIMEOUT


async def test_a_human_check_lasts_the_person_s_wait_also_when_a_resumed_run_reads_the_answer(
    database: Database,
) -> None:
    clock = FakeClock()
    desk = await desk_for(database, clock)
    asked = await desk.ask(request(check="signoff"))  # the run asked, then was parked
    clock.advance(45)
    await desk.decide(asked.id, True, "alice")  # 45 s later (within its 60 s), a person answered

    async def nothing(_: Approval) -> None:
        return None

    gate = HumanGate(desk, nothing, nothing, park=True)
    spec = HumanCheckSpec(type="human", name="signoff", message="Roll back 8f3a?")
    found = await run_human_check(spec, {}, gate, request(check=None))  # the resumed run reads it back
    assert found.passed is True and found.detail.startswith("approved by alice")
    assert found.duration_ms == 45_000.0  # the wait, not the instant of reading the answer back
