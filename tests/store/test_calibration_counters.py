"""The counters the gate reads always say what the marked history says, on SQLite and PostgreSQL."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from tests.store.test_runs import T0, log, run_record, step_record
from vectorstep.domain.calibration import Bin, Bucket
from vectorstep.store.calibration import CalibrationRepository
from vectorstep.store.calibration_cells import rebuild
from vectorstep.store.database import Database
from vectorstep.store.feedback import FeedbackRepository, Mark
from vectorstep.store.runs import RunRepository

BUCKET = Bucket.of(
    "investigate",
    executor="gateway",
    agent="investigator",
    model="scripted",
    provider="scripted",
    prompt_hash="p1",
    agent_version="v1",
)
STEP = {
    "agent": "investigator",
    "model": "scripted",
    "provider": "scripted",
    "prompt_hash": "p1",
    "agent_version": "v1",
}


async def _recount(history: CalibrationRepository, width: float, low: float) -> tuple[int, float]:
    """What a scan of the whole history says the bin of `width` starting at `low` holds."""
    labelled = [step for step in await history.history(BUCKET) if Bin.of(step.predicted, width).low == low]
    return len(labelled), sum(step.label for step in labelled)


async def test_counters_follow_every_step_and_mark_as_history_does(database: Database) -> None:
    runs, feedback, history = RunRepository(database), FeedbackRepository(database), CalibrationRepository(database)
    draw = random.Random(7)
    run_ids = []
    for number in range(40):
        run_id = f"r{number}"
        stage = "production" if number % 8 else "testing"  # testing runs never count
        await runs.insert_run(replace(run_record(run_id), stage=stage), log(run_id, "started"))
        predicted = draw.choice([0.05, 0.42, 0.5, 0.87, 0.9, 0.95, 1.0])
        failed = draw.random() < 0.2
        await runs.insert_step(
            step_record(run_id, effective_confidence=predicted, deterministic_passed=not failed, **STEP),
            log(run_id, "step"),
        )
        run_ids.append(run_id)
    for _ in range(120):  # people mark, and mark again: runs and steps, in any order
        run_id = draw.choice(run_ids)
        step = draw.choice([None, "investigate"])
        label = draw.choice(["correct", "partial", "incorrect"])
        await feedback.mark(Mark(run_id, step, label, None, "alice", T0))
    for width in (0.1, 0.05, 0.25):
        low = 0.0
        while low < 1.0 - 1e-9:
            within = Bin.of(low, width)
            n, total = await history.counts(BUCKET, within.low, within.high)
            expected_n, expected_total = await _recount(history, width, within.low)
            assert (n, total) == (expected_n, pytest.approx(expected_total)), (within, width)
            low = within.high
    assert (await history.counts(BUCKET, 0.0, 1.0))[0] > 10  # the test counted something real


async def test_rebuilding_gives_the_counters_that_were_kept(database: Database) -> None:
    runs, feedback, history = RunRepository(database), FeedbackRepository(database), CalibrationRepository(database)
    for number, (predicted, label) in enumerate([(0.9, "correct"), (0.9, "incorrect"), (0.55, "partial")]):
        run_id = f"k{number}"
        await runs.insert_run(replace(run_record(run_id), stage="production"), log(run_id, "started"))
        await runs.insert_step(step_record(run_id, effective_confidence=predicted, **STEP), log(run_id, "step"))
        await feedback.mark(Mark(run_id, None, label, None, "alice", T0))
    kept = [await history.counts(BUCKET, low / 10, (low + 1) / 10) for low in range(10)]
    assert await database.write(rebuild) == 3
    assert [await history.counts(BUCKET, low / 10, (low + 1) / 10) for low in range(10)] == kept
    assert kept[9] == (2, 1.0) and kept[5] == (1, 0.5)
