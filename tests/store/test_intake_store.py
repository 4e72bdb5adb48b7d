"""What the service relies on from the store, on SQLite and PostgreSQL: dedup, leases, marks, counts."""

from __future__ import annotations

import asyncio
import dataclasses
from datetime import timedelta

import pytest

from tests.store.test_runs import T0, log, run_record, step_record
from vectorstep.domain.records import DedupRule, RunRecord
from vectorstep.domain.status import RunStatus
from vectorstep.errors import DuplicateRunError, NotFoundError
from vectorstep.store.database import Database
from vectorstep.store.feedback import FeedbackRepository, Mark
from vectorstep.store.runs import RunFilter, RunRepository


def deduped(run_id: str, *, window: int = 300, started: timedelta = timedelta()) -> RunRecord:
    return dataclasses.replace(run_record(run_id, started=T0 + started), dedup=DedupRule("incident:fp1", window))


async def finish(runs: RunRepository, run_id: str, at: timedelta) -> None:
    await runs.finish_run(
        run_id,
        status=RunStatus.COMPLETED,
        finished_at=T0 + at,
        error=None,
        input_tokens=0,
        output_tokens=0,
        cost=None,
        log=log(run_id, "done"),
        release=True,
    )


async def test_an_event_in_flight_or_within_its_window_is_refused_with_the_first_run(runs: RunRepository) -> None:
    await runs.insert_run(deduped("first"), log("first", "started"))
    with pytest.raises(DuplicateRunError) as refused:
        await runs.insert_run(deduped("second", started=timedelta(hours=2)), log("second", "started"))
    assert refused.value.run_id == "first"  # still running: in flight, however old
    await finish(runs, "first", timedelta(seconds=10))
    with pytest.raises(DuplicateRunError):
        await runs.insert_run(deduped("third", started=timedelta(seconds=299)), log("third", "started"))
    await runs.insert_run(deduped("fourth", started=timedelta(seconds=301)), log("fourth", "started"))
    assert (await runs.get_run("fourth")).status is RunStatus.RUNNING
    with pytest.raises(NotFoundError):
        await runs.get_run("second")  # a refused event leaves no row behind


@pytest.mark.parametrize(
    ("status", "error", "duplicate"),
    [
        (RunStatus.INTERRUPTED, "the process driving this run stopped before it ended", False),
        (RunStatus.FAILED, "internal error: OperationalError: database is locked", False),
        (RunStatus.FAILED, "step investigate failed: the agent's JSON is not a valid step answer", True),
        (RunStatus.COMPLETED, None, True),
    ],
    ids=["interrupted", "failed-by-us", "failed-by-the-work", "completed"],
)
async def test_a_retry_of_an_event_whose_run_was_lost_starts_new_work(
    runs: RunRepository, status: RunStatus, error: str | None, duplicate: bool
) -> None:
    await runs.insert_run(deduped("lost"), log("lost", "started"))
    await runs.finish_run(
        "lost",
        status=status,
        finished_at=T0 + timedelta(seconds=5),
        error=error,
        input_tokens=0,
        output_tokens=0,
        cost=None,
        log=log("lost", "ended"),
        release=True,
    )
    retry = deduped("retry", started=timedelta(seconds=20))  # the sender retried within the window
    if duplicate:
        with pytest.raises(DuplicateRunError):
            await runs.insert_run(retry, log("retry", "started"))
        return
    await runs.insert_run(retry, log("retry", "started"))
    assert (await runs.get_run("retry")).status is RunStatus.RUNNING
    with pytest.raises(DuplicateRunError) as again:  # and the new run now holds the event
        await runs.insert_run(deduped("again", started=timedelta(seconds=30)), log("again", "started"))
    assert again.value.run_id == "retry"


async def test_concurrent_twins_make_exactly_one_run(runs: RunRepository) -> None:
    async def attempt(number: int) -> str:
        try:
            await runs.insert_run(deduped(f"twin{number}"), log(f"twin{number}", "started"))
        except DuplicateRunError as duplicate:
            return duplicate.run_id
        return f"twin{number}"

    winners = set(await asyncio.gather(*(attempt(number) for number in range(12))))
    assert len(winners) == 1
    assert len(await runs.list_runs(RunFilter())) == 1


async def test_a_run_is_unattended_when_nobody_holds_a_live_lease(runs: RunRepository) -> None:
    for run_id in ("leased", "expired", "free"):
        await runs.insert_run(run_record(run_id), log(run_id, "started"))
    assert await runs.claim("leased", "me", T0 + timedelta(seconds=30), T0)
    assert await runs.claim("expired", "gone", T0 - timedelta(seconds=1), T0 - timedelta(seconds=31))
    assert not await runs.claim("leased", "someone-else", T0 + timedelta(seconds=30), T0)
    assert sorted(await runs.unattended(RunStatus.RUNNING, T0)) == ["expired", "free"]
    await finish(runs, "leased", timedelta(seconds=5))
    assert await runs.lease("leased") == (None, None)  # the last write gives the lease up


async def test_marks_are_kept_per_run_and_step(database: Database, runs: RunRepository) -> None:
    await runs.insert_run(run_record("r1", stage="production"), log("r1", "started"))
    await runs.insert_step(step_record("r1"), log("r1", "step done", "investigate"))
    feedback = FeedbackRepository(database)
    where = await feedback.mark(Mark("r1", None, "correct", None, "alice", T0))
    assert where == ("checkout-5xx", "production")
    await feedback.mark(Mark("r1", "investigate", "incorrect", "made up", "bob", T0 + timedelta(seconds=1)))
    with pytest.raises(NotFoundError, match="has no step 'nope'"):
        await feedback.mark(Mark("r1", "nope", "correct", None, "bob", T0))
    with pytest.raises(NotFoundError, match="no run 'r9'"):
        await feedback.mark(Mark("r9", None, "correct", None, "bob", T0))
    marks = await feedback.marks("r1")
    assert [(mark.step, mark.label, mark.marked_by, mark.comment) for mark in marks] == [
        (None, "correct", "alice", None),
        ("investigate", "incorrect", "bob", "made up"),
    ]


async def test_status_counts_cover_the_window_asked(runs: RunRepository) -> None:
    await runs.insert_run(run_record("old", started=T0 - timedelta(days=2)), log("old", "started"))
    await runs.insert_run(run_record("new1"), log("new1", "started"))
    await runs.insert_run(run_record("new2"), log("new2", "started"))
    await finish(runs, "new2", timedelta(seconds=3))
    assert await runs.status_counts(T0 - timedelta(hours=24)) == {"running": 1, "completed": 1}
