"""Showing a run as it happens: a line per step, and on a terminal the tools each agent calls."""

from __future__ import annotations

from vectorstep.cli.output import STATUS_STYLES, Output, clipped, duration
from vectorstep.domain.events import RunEvent, RunLogged, RunResumed, RunWaiting, StepFinished, StepStarted
from vectorstep.domain.trace import TraceEvent
from vectorstep.trust.explain import score_text as score


class Progress:
    """A run observer that prints to stderr, so stdout stays clean for --json and pipes."""

    def __init__(self, output: Output, *, show_tools: bool) -> None:
        self._out = output
        self._show_tools = show_tools

    async def notify(self, event: RunEvent) -> None:
        if isinstance(event, StepStarted):
            self._out.line(f"▸ {event.step} ({event.executor})", style="bold")
        elif isinstance(event, StepFinished):
            record = event.record
            detail = f"S={score(record.confidence)}" if record.confidence is not None else ""
            if record.error:
                detail = f"{record.error_kind}: {clipped(record.error, 160)}"
            self._out.line(
                f"  {record.status.value} {detail} ({duration(record.duration_ms)})",
                style=STATUS_STYLES.get(record.status.value),
            )
            for warning in record.warnings:
                self._out.line(f"  warning: {warning}", style="yellow")
        elif isinstance(event, RunWaiting):
            approval = event.approval
            self._out.line(f"  waiting for a person — approval {approval.id[:12]}:", style="bold magenta")
            for line in approval.message.splitlines() or [""]:
                self._out.line(f"    {line}")
            self._out.line(
                f"    decide with `vectorstep approvals approve {approval.id[:12]}` (or `reject`); "
                f"until {approval.expires_at:%H:%M:%S} UTC, then the stage decides "
                f"({'approve' if approval.stage == 'testing' else 'reject'})",
                style="magenta",
            )
        elif isinstance(event, RunResumed):
            self._out.line(f"  {event.log.message}", style="magenta")
        elif isinstance(event, RunLogged) and event.log.level == "warning":
            self._out.line(f"  {event.log.message}", style="yellow")

    def trace(self, step: str, event: TraceEvent) -> None:
        if not self._show_tools:
            return
        if event.type == "tool_call":
            self._out.line(f"    → {event.name}", style="dim")
        elif event.type == "tool_denied":
            self._out.line(f"    ✗ {event.name} refused: {event.reason}", style="yellow")
