"""The `human` check: a person confirms; a rejection, or silence in `production`, fails the check."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from vectorstep.approvals.gate import HumanGate
from vectorstep.domain.approvals import TIMEOUT, ApprovalRequest
from vectorstep.domain.signals import CheckResult
from vectorstep.errors import TemplateError
from vectorstep.spec.trust_blocks import HumanCheckSpec
from vectorstep.templating import render_strict


async def run_human_check(
    spec: HumanCheckSpec,
    context: Mapping[str, Any],
    gate: HumanGate | None,
    base: ApprovalRequest,
) -> CheckResult:
    started = time.monotonic()

    def result(passed: bool, detail: str) -> CheckResult:
        return CheckResult(spec.name, "human", passed, detail, round((time.monotonic() - started) * 1000, 3))

    if gate is None:
        return result(False, "no approval desk is available to ask a person")
    try:
        message = render_strict(spec.message, context)
    except TemplateError as error:
        return result(False, f"message cannot be rendered: {error}")
    approval = await gate.decision(
        ApprovalRequest(
            run_id=base.run_id,
            pipeline=base.pipeline,
            step=base.step,
            check=spec.name,
            message=message,
            team=spec.team or base.team,
            stage=base.stage,
            timeout_seconds=spec.timeout_seconds,
            checkpoint=base.checkpoint,
        )
    )
    verdict = "approved" if approval.approved else "rejected"
    if approval.decided_by == TIMEOUT:
        detail = f"no decision within {spec.timeout_seconds:g}s: {verdict} (stage {approval.stage})"
    else:
        detail = f"{verdict} by {approval.decided_by} (approval {approval.id[:12]})"
    if approval.decided_at is None:
        return result(approval.approved, detail)
    # The person's real wait, from the question to the answer: also when the run was parked meanwhile
    # and this is the resumed run reading the decision back.
    waited = (approval.decided_at - approval.created_at).total_seconds() * 1000
    return CheckResult(spec.name, "human", approval.approved, detail, round(max(waited, 0.0), 3))
