"""Run and step statuses (SYSTEM.md §6) and what each means for the CLI's exit code."""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    RUNNING = "running"
    COMPLETED = "completed"
    STOPPED = "stopped"
    ESCALATED = "escalated"
    ABORTED = "aborted"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    WAITING = "waiting"

    @property
    def is_terminal(self) -> bool:
        return self not in (RunStatus.RUNNING, RunStatus.WAITING)


RUN_ENDED = tuple(status for status in RunStatus if status.is_terminal)


class StepStatus(StrEnum):
    COMPLETED = "completed"
    STOPPED = "stopped"
    ESCALATED = "escalated"
    ABORTED = "aborted"
    FAILED = "failed"
    SKIPPED = "skipped"
    WAITING = "waiting"


EXIT_INVALID_INPUT = 2
_EXIT_CODES = {RunStatus.COMPLETED: 0, RunStatus.STOPPED: 0, RunStatus.ESCALATED: 3, RunStatus.ABORTED: 4}


def exit_code(status: RunStatus) -> int:
    """0 completed or stopped, 3 escalated, 4 aborted, 1 anything else (failed, interrupted)."""
    return _EXIT_CODES.get(status, 1)
