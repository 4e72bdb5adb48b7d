"""What becomes of a run whose process stopped under it: its pipeline's `durable:` decides.

A pipeline without `durable:` takes the database's default: durable (`resume`) on PostgreSQL,
where any worker can take a run up, and not durable on SQLite; `durable: false` is never durable.
A run that is not durable is marked `interrupted`. A durable one: `resume` continues at the last step
boundary (steps that finished are never run again; the step that was running runs again from its
start, and the log says so), `rerun` starts the run again as a new one, `escalate` hands it to a
person through the pipeline's `escalate` notifications. A run older than `max_resume_age_seconds`
is not continued, and neither is one stopped inside a parallel group or fan-out, whose branches
cannot be taken up one by one.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from vectorstep.engine.entries import entry
from vectorstep.spec.pipeline import DurableSpec, PipelineSpec

Action = Literal["interrupt", "resume", "rerun", "escalate"]
STOPPED = "the process driving this run stopped before it ended"


@dataclass(frozen=True)
class Recovery:
    action: Action
    reason: str
    start: int = 0  # for `resume`: the first item to run


def durability(pipeline: PipelineSpec, *, durable_by_default: bool) -> DurableSpec | None:
    """What `durable:` means for this pipeline here (None: not durable)."""
    if pipeline.durable is None:
        return DurableSpec() if durable_by_default else None
    return pipeline.durable or None


def recovery(
    pipeline: PipelineSpec,
    recorded: Collection[str],
    started_at: datetime,
    now: datetime,
    *,
    durable_by_default: bool = False,
) -> Recovery:
    durable = durability(pipeline, durable_by_default=durable_by_default)
    if durable is None:
        return Recovery("interrupt", STOPPED)
    age = (now - started_at).total_seconds()
    if age > durable.max_resume_age_seconds:
        return Recovery(
            "interrupt",
            f"{STOPPED}; it started {age:.0f}s ago, more than durable.max_resume_age_seconds "
            f"({durable.max_resume_age_seconds})",
        )
    if durable.on_interrupted == "escalate":
        return Recovery("escalate", f"{STOPPED}; durable.on_interrupted: escalate hands it to a person")
    if durable.on_interrupted == "rerun":
        return Recovery("rerun", f"{STOPPED}; durable.on_interrupted: rerun starts it again")
    start = _boundary(pipeline, recorded)
    if start is None:
        return Recovery("interrupt", f"{STOPPED} inside a parallel group or fan-out, which cannot be resumed")
    return Recovery("resume", f"{STOPPED}; durable.on_interrupted: resume", start)


def _boundary(pipeline: PipelineSpec, recorded: Collection[str]) -> int | None:
    """The first item that did not finish; None when one stopped halfway through its branches."""
    for index, item in enumerate(pipeline.steps):
        name = entry(item).name
        if name in recorded:
            continue
        if any(done.startswith(f"{name}/") for done in recorded):
            return None
        return index
    return len(pipeline.steps)
