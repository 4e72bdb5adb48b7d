"""Parallel groups and fan-outs: branches run concurrently, are joined, and the group is gated once.

Each branch is evaluated by the same step evaluation as a sequential step (its own verifier,
grounding and checks included); its combined trust enters the join. A failed or timed-out branch
counts as confidence 0; a skipped branch does not count.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vectorstep.clock import Clock
from vectorstep.domain.records import StepRecord
from vectorstep.domain.status import StepStatus
from vectorstep.engine.step import StepEvaluation, StepPlan, status_for
from vectorstep.errors import TemplateError
from vectorstep.spec.steps import FanOutSpec, JoinStrategy, ParallelSpec
from vectorstep.templating import evaluate, evaluate_condition
from vectorstep.trust.decide import TrustInputs, decide

Evaluate = Callable[[StepPlan, Mapping[str, Any]], Coroutine[Any, Any, StepEvaluation]]


@dataclass
class GroupEvaluation:
    record: StepRecord  # the group's own row
    branches: list[StepEvaluation]
    output: Mapping[str, Any] | None


def join(values: Sequence[float], weights: Sequence[float], strategy: JoinStrategy) -> float:
    if not values:
        return 0.0
    if strategy == "all_must_pass":
        return min(values)
    if strategy == "any_must_pass":
        return max(values)
    return sum(value * weight for value, weight in zip(values, weights, strict=True)) / sum(weights)


async def evaluate_parallel(
    group: ParallelSpec,
    index: int,
    *,
    run_id: str,
    context: Mapping[str, Any],
    clock: Clock,
    evaluate_plan: Evaluate,
) -> GroupEvaluation:
    started_at, started = clock.now(), clock.monotonic()
    frame = _Frame(run_id, group.name, index, "parallel", started_at, started, clock)
    if group.when is not None and not _holds(group.when, context, frame):
        return frame.skipped()
    gate = (group.confidence_threshold, group.on_low_confidence)
    plans = [
        StepPlan.of_branch(f"{group.name}/{branch.name}", index, branch, gate, branch.when) for branch in group.steps
    ]
    weights = {plan.name: branch.weight for plan, branch in zip(plans, group.steps, strict=True)}
    branches = await _run_branches(plans, [context] * len(plans), group.timeout_seconds, evaluate_plan)
    return frame.joined(branches, weights, group.join, group.confidence_threshold, group.on_low_confidence)


async def evaluate_fan_out(
    fan_out: FanOutSpec,
    index: int,
    *,
    run_id: str,
    context: Mapping[str, Any],
    clock: Clock,
    evaluate_plan: Evaluate,
) -> GroupEvaluation:
    started_at, started = clock.now(), clock.monotonic()
    frame = _Frame(run_id, fan_out.name, index, "fan_out", started_at, started, clock)
    if fan_out.when is not None and not _holds(fan_out.when, context, frame):
        return frame.skipped()
    try:
        items = _items(evaluate(fan_out.over, context))
    except TemplateError as error:
        return frame.failed("template_error", f"over: {error}")
    if len(items) > fan_out.max_items:
        frame.warnings.append(f"over gave {len(items)} items; only the first max_items={fan_out.max_items} ran")
        items = items[: fan_out.max_items]
    if not items:
        return frame.empty(fan_out.on_empty)
    # `timeout_seconds` of a fan-out bounds the whole group, not each branch's attempts.
    work = fan_out.model_copy(update={"timeout_seconds": None})
    gate = (fan_out.confidence_threshold, fan_out.on_low_confidence)
    plans = [StepPlan.of_branch(f"{fan_out.name}/{position}", index, work, gate) for position in range(len(items))]
    contexts = [
        {**context, fan_out.as_: item, "fan_out_index": position, "fan_out_total": len(items)}
        for position, item in enumerate(items)
    ]
    branches = await _run_branches(plans, contexts, fan_out.timeout_seconds, evaluate_plan)
    weights = {plan.name: 1.0 for plan in plans}
    return frame.joined(branches, weights, fan_out.join, fan_out.confidence_threshold, fan_out.on_low_confidence)


def _holds(condition: str, context: Mapping[str, Any], frame: _Frame) -> bool:
    try:
        return evaluate_condition(condition, context)
    except TemplateError as error:
        frame.warnings.append(f"when: {error} — counted as false, group skipped")
        return False


def _items(value: Any) -> list[Any]:
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, dict):
        return [{"key": key, "value": item} for key, item in value.items()]
    raise TemplateError(f"must give a list, got {type(value).__name__}: {str(value)[:200]!r}")


async def _run_branches(
    plans: Sequence[StepPlan],
    contexts: Sequence[Mapping[str, Any]],
    group_timeout: float | None,
    evaluate_plan: Evaluate,
) -> list[StepEvaluation | None]:
    """Every branch concurrently; a branch still running at the group's timeout is None."""
    tasks = [
        asyncio.create_task(evaluate_plan(plan, {**ctx, "current_step": plan.name}))
        for plan, ctx in zip(plans, contexts, strict=True)
    ]
    done, pending = await asyncio.wait(tasks, timeout=group_timeout)
    for task in pending:
        task.cancel()
    if pending:
        await asyncio.gather(*pending, return_exceptions=True)
    return [task.result() if task in done else None for task in tasks]


@dataclass
class _Frame:
    run_id: str
    name: str
    index: int
    kind: str
    started_at: datetime
    started: float
    clock: Clock

    def __post_init__(self) -> None:
        self.warnings: list[str] = []

    def record(self, status: StepStatus, **fields: Any) -> StepRecord:
        return StepRecord(
            run_id=self.run_id,
            name=self.name,
            index=self.index,
            status=status,
            executor=self.kind,
            started_at=self.started_at,
            finished_at=self.clock.now(),
            duration_ms=round((self.clock.monotonic() - self.started) * 1000, 3),
            warnings=tuple(self.warnings),
            **fields,
        )

    def skipped(self) -> GroupEvaluation:
        return GroupEvaluation(self.record(StepStatus.SKIPPED), [], None)

    def failed(self, kind: str, message: str) -> GroupEvaluation:
        return GroupEvaluation(self.record(StepStatus.FAILED, error_kind=kind, error=message), [], None)

    def empty(self, on_empty: str) -> GroupEvaluation:
        if on_empty == "skip":
            return self.skipped()
        if on_empty == "abort":
            return GroupEvaluation(
                self.record(StepStatus.ABORTED, error="over gave no items (on_empty: abort)"), [], None
            )
        output = {"confidence": 1.0, "summary": "no items to fan out over", "next_step_context": "", "branches": {}}
        return GroupEvaluation(self.record(StepStatus.COMPLETED, output=output), [], output)

    def joined(
        self,
        branches: list[StepEvaluation | None],
        weights: Mapping[str, float],
        strategy: JoinStrategy,
        threshold: float,
        on_low_confidence: Any,
    ) -> GroupEvaluation:
        names = list(weights)
        finished = [branch for branch in branches if branch is not None]
        for name, branch in zip(names, branches, strict=True):
            if branch is None:
                self.warnings.append(f"branch {name} did not finish before the group's timeout (counts as 0)")
        counted = [
            (name, _branch_trust(branch))
            for name, branch in zip(names, branches, strict=True)
            if branch is None or branch.record.status is not StepStatus.SKIPPED
        ]
        if not counted:
            return GroupEvaluation(self.skipped().record, finished, None)
        joined = join([value for _, value in counted], [weights[name] for name, _ in counted], strategy)
        decision = decide(TrustInputs(joined, threshold, on_low_confidence))
        proceed = all((branch.output or {}).get("proceed", True) for branch in finished)
        output = {
            "confidence": joined,
            "summary": f"{strategy} of {len(counted)} branches: {joined:.2f}",
            "next_step_context": "",
            "proceed": proceed,
            "branches": {branch.record.name: branch.output for branch in finished if branch.output is not None},
        }
        record = self.record(
            status_for(decision, proceed),
            output=output,
            confidence=joined,
            effective_confidence=joined,
            combined_trust=decision.combined_trust,
            gate_outcome=decision.outcome.value,
        )
        return GroupEvaluation(record, finished, output)


def _branch_trust(branch: StepEvaluation | None) -> float:
    if branch is None or branch.record.status is StepStatus.FAILED or branch.record.combined_trust is None:
        return 0.0
    return branch.record.combined_trust
