"""`executor: pipeline`: another pipeline runs as a child run, and its outcome is the step's.

The child is a run of its own (`parent_run_id`), with its own steps, trust reports and log. Its
last output becomes the step's answer, with the child's final combined trust as the confidence the
parent's gate reads; a child that ends escalated, aborted, stopped, failed or interrupted fails the
step with the child's reason. A child that waits for a person parks its parent as `waiting` too.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from vectorstep.approvals.gate import RunParked
from vectorstep.domain.execution import ExecutionResult, ExecutorCapabilities
from vectorstep.domain.llm_output import LLMOutput
from vectorstep.domain.records import RunRecord
from vectorstep.domain.status import RunStatus, StepStatus
from vectorstep.errors import ExecutorError
from vectorstep.executors.base import StepCall
from vectorstep.spec.executor_config import PipelineConfig


class ChildRuns(Protocol):
    async def run_child(self, call: StepCall, config: PipelineConfig) -> RunRecord:
        """The child run of this attempt, driven to where it stops (ended, or waiting)."""
        ...


class WaitingOnChild(RunParked):
    """The child run waits (for a person, or for another process driving it): so does the parent."""

    def __init__(self, child_run_id: str) -> None:
        super().__init__(f"waiting for its sub-pipeline run {child_run_id}")
        self.child_run_id = child_run_id


class PipelineExecutor:
    capabilities = ExecutorCapabilities()  # the child's traces stay with the child's steps

    def __init__(self, children: ChildRuns) -> None:
        self._children = children

    async def execute(self, call: StepCall) -> ExecutionResult:
        config = call.config
        if not isinstance(config, PipelineConfig):
            raise ExecutorError(f"the pipeline executor got a {type(config).__name__}")
        started = time.monotonic()
        child = await self._children.run_child(call, config)
        if child.status in (RunStatus.WAITING, RunStatus.RUNNING):
            raise WaitingOnChild(child.run_id)
        if child.status is not RunStatus.COMPLETED:
            reason = child.error or "no reason was recorded"
            ended = f"sub-pipeline {child.pipeline} (run {child.run_id}) ended {child.status.value}"
            raise ExecutorError(f"{ended}: {reason}")
        output = child_output(child)
        return ExecutionResult(
            output=output,
            prompt=call.prompt,
            response_text=f"sub-pipeline {child.pipeline} (run {child.run_id}) completed",
            duration_ms=round((time.monotonic() - started) * 1000, 3),
        )


def child_output(child: RunRecord) -> LLMOutput:
    """The child's last output, with its final combined trust as the confidence and a link to it."""
    last = next(
        (step for step in reversed(child.steps) if step.status is StepStatus.COMPLETED and step.output is not None),
        None,
    )
    fields: dict[str, Any] = dict(last.output or {}) if last is not None else {}
    fields.pop("raw_response", None)
    trust = last.combined_trust if last is not None and last.combined_trust is not None else None
    confidence = trust if trust is not None else fields.get("confidence", 1.0)
    fields.update(
        confidence=confidence,
        summary=str(fields.get("summary") or f"sub-pipeline {child.pipeline} completed"),
        next_step_context=str(fields.get("next_step_context") or ""),
        child_run_id=child.run_id,
        child_pipeline=child.pipeline,
        child_status=child.status.value,
        child_combined_trust=trust,
    )
    return LLMOutput.model_validate(fields)
