"""`executor: human`: a person approves (confidence 1.0) or rejects (0.0) the step.

In `production` an approval nobody decided in time fails the step; in `testing` it approves.
"""

from __future__ import annotations

import time

from vectorstep.domain.approvals import TIMEOUT, ApprovalRequest
from vectorstep.domain.execution import ExecutionResult, ExecutorCapabilities
from vectorstep.domain.llm_output import LLMOutput
from vectorstep.errors import ExecutorError
from vectorstep.executors.base import StepCall
from vectorstep.spec.executor_config import HumanConfig
from vectorstep.templating import render_strict


class HumanExecutor:
    capabilities = ExecutorCapabilities()

    async def execute(self, call: StepCall) -> ExecutionResult:
        config = call.config
        if not isinstance(config, HumanConfig):
            raise ExecutorError(f"the human executor got a {type(config).__name__}")
        if call.human is None:
            raise ExecutorError("no approval desk is available to ask a person")
        message = render_strict(config.message, call.context) if config.message else call.prompt
        # A step's own timeout bounds the wait too: the stage then decides, rather than the
        # attempt being cut off with the approval left pending.
        timeout = min(config.timeout_seconds, call.timeout_seconds or config.timeout_seconds)
        started = time.monotonic()
        approval = await call.human.decision(
            ApprovalRequest(
                run_id=call.run_id,
                pipeline=call.pipeline,
                step=call.step,
                check=None,
                message=message or f"Approve step {call.step}?",
                team=config.team or call.context.get("team"),
                stage=call.stage,
                timeout_seconds=timeout,
            )
        )
        if approval.decided_by == TIMEOUT and not approval.approved:
            raise ExecutorError(
                f"approval {approval.id[:12]} was not decided within {timeout:g}s: rejected (stage {approval.stage})"
            )
        verdict = "approved" if approval.approved else "rejected"
        output = LLMOutput(
            confidence=1.0 if approval.approved else 0.0,
            summary=f"{verdict} by {approval.decided_by}",
            next_step_context="",
            approved=approval.approved,
            decided_by=approval.decided_by,
            approval_id=approval.id,
        )
        return ExecutionResult(
            output=output,
            prompt=message,
            response_text=verdict,
            duration_ms=round((time.monotonic() - started) * 1000, 3),
        )
