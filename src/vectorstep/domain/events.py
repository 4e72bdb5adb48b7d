"""What the runner tells its observers (the store writer, the terminal, later the web's live view).

Trace events are not run events: they go to an optional synchronous listener as the agent works,
and the step's row holds the whole trace when it finishes.

Every event carries the log line it adds to the run log, so the log is written as things happen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from vectorstep.domain.approvals import Approval
from vectorstep.domain.records import LogEntry, RunRecord, StepRecord
from vectorstep.domain.status import RunStatus


@dataclass(frozen=True)
class RunStarted:
    run: RunRecord
    log: LogEntry


@dataclass(frozen=True)
class StepStarted:
    run_id: str
    step: str
    index: int
    executor: str
    log: LogEntry


@dataclass(frozen=True)
class StepFinished:
    record: StepRecord
    log: LogEntry
    pipeline: str  # of the run, so an observer needs no memory of runs to place the step
    stage: str


RUN_LOGGER = "vectorstep.runs"  # the process log's name for run warnings (on stderr under `serve`)


@dataclass(frozen=True)
class RunLogged:
    log: LogEntry


@dataclass(frozen=True)
class RunWaiting:
    """The run now waits on a person: `waiting` until the approval is decided."""

    run_id: str
    approval: Approval
    log: LogEntry


@dataclass(frozen=True)
class RunWaitingOnChild:
    """The run now waits for its sub-pipeline run, which waits itself: `waiting` until the child ends."""

    run_id: str
    child_run_id: str
    log: LogEntry
    input_tokens: int = 0  # what its finished steps spent so far
    output_tokens: int = 0
    cost: float | None = None


@dataclass(frozen=True)
class RunResumed:
    """A process takes the run up: after a decision, after its previous driver stopped, or (a queued
    run) for the first time. `pipeline` and `stage` are empty when it only goes on in the same process."""

    run_id: str
    log: LogEntry
    pipeline: str = ""
    stage: str = ""


@dataclass(frozen=True)
class RunDetached:
    """The process stopped driving the run while it waited on a person: the run stays `waiting`, free
    to resume, with what its finished steps spent so far."""

    run_id: str
    log: LogEntry
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None


@dataclass(frozen=True)
class RunFinished:
    run_id: str
    status: RunStatus
    finished_at: datetime
    error: str | None
    input_tokens: int
    output_tokens: int
    cost: float | None
    log: LogEntry
    pipeline: str
    stage: str


RunEvent = (
    RunStarted
    | StepStarted
    | StepFinished
    | RunLogged
    | RunWaiting
    | RunWaitingOnChild
    | RunResumed
    | RunDetached
    | RunFinished
)


class RunObserver(Protocol):
    async def notify(self, event: RunEvent) -> None: ...


class Observers:
    """Calls every observer in order; the store writer comes first so rows exist before anyone looks."""

    def __init__(self, observers: Sequence[RunObserver]) -> None:
        self._observers = list(observers)

    async def notify(self, event: RunEvent) -> None:
        for observer in self._observers:
            await observer.notify(event)
