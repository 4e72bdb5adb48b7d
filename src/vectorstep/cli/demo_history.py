"""Marked history for the demo's calibration scenarios: production runs of a pipeline, each marked as a
person would, right a given share of the time (an even, repeatable pattern, not a random draw).

The runs are real: the same engine, agents and store as any run, so they land in exactly the
calibration bucket (step, agent, model, prompt, agent version) that the scenario's run then reads.
"""

from __future__ import annotations

import math

from vectorstep.clock import SystemClock
from vectorstep.domain.context import NormalisedContext
from vectorstep.engine.entries import entry
from vectorstep.engine.services import Engine
from vectorstep.spec.pipelines import LoadedPipeline
from vectorstep.spec.project import Project
from vectorstep.store.calibration import CalibrationRepository
from vectorstep.store.feedback import FeedbackRepository, Mark
from vectorstep.store.runs import RunRepository
from vectorstep.store.writer import StoreWriter

MARKED_BY = "vectorstep demo (generated history)"


def labels(accuracy: float, count: int) -> list[str]:
    """`count` labels, `correct` for round(accuracy × count) of them, spread evenly."""
    return [
        "correct" if math.floor((number + 1) * accuracy + 1e-9) > math.floor(number * accuracy + 1e-9) else "incorrect"
        for number in range(count)
    ]


async def generate_history(
    project: Project,
    runs: RunRepository,
    loaded: LoadedPipeline,
    context: NormalisedContext,
    *,
    accuracy: float,
    count: int = 20,
) -> int:
    """Run `loaded` `count` times and mark its first step; returns how many were marked correct."""
    feedback = FeedbackRepository(runs.database)
    clock = SystemClock()
    step = entry(loaded.spec.steps[0]).name
    marks = labels(accuracy, count)
    async with Engine(
        project, observers=[StoreWriter(runs)], calibration=CalibrationRepository(runs.database), runs=runs
    ) as engine:
        for label in marks:
            record = await engine.run(loaded.spec, context)
            await feedback.mark(Mark(record.run_id, step, label, "generated for the demo", MARKED_BY, clock.now()))
    return marks.count("correct")
