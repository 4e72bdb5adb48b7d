"""One run, ready for its page: steps with their Trust panel and paired trace, the log, marks and approvals."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from vectorstep.domain.approvals import Approval, ApprovalStatus
from vectorstep.domain.artifacts import references_of
from vectorstep.domain.records import LogEntry, RunRecord, StepRecord
from vectorstep.store.feedback import Mark
from vectorstep.web.ui.evidence_view import evidence_links
from vectorstep.web.ui.trace_view import TraceItem, trace_items
from vectorstep.web.ui.trust_view import TrustView, trust_view


@dataclass(frozen=True)
class StepView:
    record: StepRecord
    trust: TrustView | None
    trace: list[TraceItem]
    tool_calls: int
    artifacts: list[dict[str, Any]]  # the references its output holds: name, size, truncated


@dataclass(frozen=True)
class RunView:
    run: RunRecord
    steps: list[StepView]
    log: list[LogEntry]
    approvals: list[Approval]
    pending: list[Approval]
    run_marks: list[Mark]
    step_marks: dict[str | None, list[Mark]]
    running_step: str | None  # the step in progress (it is recorded when it ends)
    context: dict[str, Any]

    @property
    def live(self) -> bool:
        return not self.run.status.is_terminal


def run_view(run: RunRecord, approvals: list[Approval], marks: list[Mark]) -> RunView:
    step_marks: dict[str | None, list[Mark]] = defaultdict(list)
    for mark in marks:
        step_marks[mark.step].append(mark)
    steps = [_step_view(step) for step in run.steps]
    return RunView(
        run=run,
        steps=steps,
        log=list(run.log),
        approvals=approvals,
        pending=[approval for approval in approvals if approval.status is ApprovalStatus.PENDING],
        run_marks=step_marks.pop(None, []),
        step_marks=dict(step_marks),
        running_step=_running_step(run),
        context=dict(run.context),
    )


def _step_view(step: StepRecord) -> StepView:
    grounding = (step.trust_report or {}).get("grounding") or {}
    links, highlights = evidence_links(step.index, step.trace, grounding.get("claims") or [])
    tool_calls = sum(1 for event in step.trace if event.type == "tool_call")
    trace = trace_items(step.trace, step.index, highlights)
    return StepView(step, trust_view(step, links), trace, tool_calls, references_of(step.output))


def _running_step(run: RunRecord) -> str | None:
    if run.status.is_terminal:
        return None
    finished = {step.name for step in run.steps}
    started = [entry.step for entry in run.log if entry.event == "step_started" and entry.step]
    return next((name for name in reversed(started) if name not in finished), None)
