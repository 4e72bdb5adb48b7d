"""Running a step's checks, fail-closed: queries together, then people — only when it can matter.

Shell and webhook checks run concurrently. A person is asked only when their answer can change
the outcome: not after another check failed, and not when trust is already below the threshold.
Such a check is recorded as failed with the reason, never silently left out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx

from vectorstep.approvals.gate import HumanGate
from vectorstep.checks.human import run_human_check
from vectorstep.checks.shell import run_shell_check
from vectorstep.checks.webhook import run_webhook_check
from vectorstep.domain.approvals import ApprovalRequest
from vectorstep.domain.signals import CheckResult
from vectorstep.executors.http import idempotency_key
from vectorstep.spec.trust_blocks import CheckSpec, HumanCheckSpec, ShellCheckSpec, WebhookCheckSpec

log = logging.getLogger(__name__)


async def run_checks(
    checks: Sequence[CheckSpec],
    context: Mapping[str, Any],
    *,
    http: httpx.AsyncClient,
    human: HumanGate | None,
    base: ApprovalRequest,
    done: Sequence[CheckResult] = (),
    below_threshold: str | None = None,
    cwd: Path | None = None,
) -> list[CheckResult]:
    """Every declared check's result, in declared order. `done` are results from before a restart."""
    finished = {result.name: result for result in done}
    queries = [check for check in checks if not isinstance(check, HumanCheckSpec) and check.name not in finished]
    answers = await asyncio.gather(*(_query(check, context, http, cwd, base) for check in queries))
    finished.update({result.name: result for result in answers})
    for check in checks:
        if not isinstance(check, HumanCheckSpec) or check.name in finished:
            continue
        failed = [result.name for result in finished.values() if not result.passed]
        if failed:
            finished[check.name] = CheckResult(check.name, "human", False, f"not asked: {failed[0]} failed", 0.0)
        elif below_threshold:
            finished[check.name] = CheckResult(check.name, "human", False, f"not asked: {below_threshold}", 0.0)
        else:
            base_with_progress = _with_results(base, list(finished.values()))
            finished[check.name] = await run_human_check(check, context, human, base_with_progress)
    return [finished[check.name] for check in checks]


async def _query(
    check: CheckSpec, context: Mapping[str, Any], http: httpx.AsyncClient, cwd: Path | None, base: ApprovalRequest
) -> CheckResult:
    try:
        if isinstance(check, ShellCheckSpec):
            return await run_shell_check(check, context, cwd)
        if isinstance(check, WebhookCheckSpec):
            key = idempotency_key(base.run_id, f"{base.step}/{check.name}", 1)
            return await run_webhook_check(check, context, http, key)
    except Exception as unexpected:  # fail-closed: a check that broke did not pass
        log.error("check %s failed unexpectedly", check.name, exc_info=unexpected)
        detail = f"the check failed unexpectedly: {type(unexpected).__name__}: {str(unexpected)[:300]}"
        return CheckResult(check.name, check.type, False, detail, 0.0)
    raise TypeError(f"not a query check: {check!r}")


def _with_results(base: ApprovalRequest, results: list[CheckResult]) -> ApprovalRequest:
    """The checkpoint a person's wait is resumed from also holds the checks already done."""
    if base.checkpoint is None:
        return base
    checkpoint = {**base.checkpoint, "checks": [result.as_report() for result in results]}
    return ApprovalRequest(**{**base.__dict__, "checkpoint": checkpoint})
