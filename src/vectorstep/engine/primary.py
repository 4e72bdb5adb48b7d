"""The primary executor call of a step: prompt, `timeout_seconds`, `retry` and `loop_until` (§7 step 2)."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from vectorstep.approvals.gate import HumanGate, RunParked
from vectorstep.clock import Clock
from vectorstep.domain.execution import ExecutionResult, ModelUsage, Usage
from vectorstep.errors import ExecutorError, ExecutorTimeout
from vectorstep.executors.base import Executor, StepCall
from vectorstep.runtime.protocol import TraceListener
from vectorstep.spec.steps import TrustedWorkSpec
from vectorstep.templating import render_prompt

log = logging.getLogger(__name__)

# An executor that ignores its own timeout is still stopped, a little after it should have stopped itself.
TIMEOUT_GRACE_SECONDS = 2.0

LogFn = Callable[[str, str], Awaitable[None]]  # (level, message)


@dataclass
class PrimaryOutcome:
    result: ExecutionResult | None
    error: ExecutorError | None
    prompt: str
    prompt_hash: str
    attempts: int = 0
    iterations: int = 0
    warnings: list[str] = field(default_factory=list)
    spent: Usage = field(default_factory=Usage)  # every attempt and iteration, not only the last


@dataclass(frozen=True)
class PrimaryCall:
    run_id: str
    step: str
    stage: str
    work: TrustedWorkSpec
    executor: Executor
    context: Mapping[str, Any]
    clock: Clock
    log: LogFn
    on_trace: TraceListener | None = None
    pipeline: str = ""
    human: HumanGate | None = None


def prompt_hash(template: str) -> str:
    """Identifies the prompt template (not its rendering): editing it starts a new calibration bucket."""
    return hashlib.sha256(template.encode("utf-8")).hexdigest()[:16]


async def run_primary(call: PrimaryCall, loop_target: float | None, max_iterations: int) -> PrimaryOutcome:
    """Run the executor, again while `loop_until` says the confidence is below its target."""
    outcome = PrimaryOutcome(result=None, error=None, prompt="", prompt_hash=prompt_hash(call.work.prompt_template))
    previous: ExecutionResult | None = None
    iterations = max_iterations if loop_target is not None else 1
    for iteration in range(1, iterations + 1):
        context = dict(call.context)
        if loop_target is not None:
            context["loop"] = {
                "iteration": iteration,
                "max_iterations": max_iterations,
                "target_confidence": loop_target,
                "previous_output": previous.output.as_context() if previous else None,
                "previous_confidence": previous.output.confidence if previous else None,
            }
        prompt, warnings = render_prompt(call.work.prompt_template, context)
        outcome.warnings.extend(warning for warning in warnings if warning not in outcome.warnings)
        outcome.prompt = prompt
        outcome.iterations = iteration
        result, error, attempts, spent = await _with_retry(call, prompt, context)
        outcome.attempts += attempts
        outcome.spent = _combined(outcome.spent, spent)
        outcome.result, outcome.error = result, error
        if result is None or loop_target is None or result.output.confidence >= loop_target:
            break
        if iteration < iterations:
            await call.log(
                "info",
                f"loop_until: confidence {result.output.confidence:g} is below {loop_target:g}; "
                f"iteration {iteration + 1} of {iterations}",
            )
        previous = result
    return outcome


async def _with_retry(
    call: PrimaryCall, prompt: str, context: Mapping[str, Any]
) -> tuple[ExecutionResult | None, ExecutorError | None, int, Usage]:
    retry = call.work.retry
    attempts = retry.attempts if retry is not None else 1
    error: ExecutorError | None = None
    spent = Usage()
    for attempt in range(1, attempts + 1):
        try:
            result = await _attempt(call, prompt, context, attempt)
        except ExecutorError as failure:
            error = failure
            details = failure.details
            if details is not None and (details.input_tokens or details.output_tokens):
                usage = ModelUsage(details.input_tokens, details.output_tokens, requests=1)
                spent = spent.add(details.model or "unknown", usage)
        else:
            return result, None, attempt, _combined(spent, result.usage)
        if attempt < attempts and retry is not None:
            delay = retry.delay_seconds * (2 ** (attempt - 1) if retry.backoff == "exponential" else 1)
            await call.log(
                "warning",
                f"attempt {attempt} of {attempts} failed ({error.kind}: {error.message[:200]}); retrying in {delay:g}s",
            )
            await call.clock.sleep(delay)
    return None, error, attempts, spent


def _combined(first: Usage, second: Usage) -> Usage:
    for model, usage in second.by_model.items():
        first = first.add(model, usage)
    return first


async def _attempt(call: PrimaryCall, prompt: str, context: Mapping[str, Any], attempt: int) -> ExecutionResult:
    timeout = call.work.timeout_seconds
    step_call = StepCall(
        run_id=call.run_id,
        step=call.step,
        stage=call.stage,
        prompt=prompt,
        config=call.work.executor_config,
        context=context,
        timeout_seconds=timeout,
        on_trace=call.on_trace,
        pipeline=call.pipeline,
        human=call.human,
        attempt=attempt,
    )
    try:
        if timeout is None:
            return await call.executor.execute(step_call)
        async with asyncio.timeout(timeout + TIMEOUT_GRACE_SECONDS):
            return await call.executor.execute(step_call)
    except TimeoutError:
        if timeout is None:
            raise _unexpected(call, TimeoutError("a timeout inside the executor")) from None
        raise ExecutorTimeout(f"the attempt did not finish within timeout_seconds={timeout:g}") from None
    except (ExecutorError, RunParked):
        raise
    except Exception as unexpected:  # a value the executor could not handle fails the step, never the run
        raise _unexpected(call, unexpected) from unexpected


def _unexpected(call: PrimaryCall, error: BaseException) -> ExecutorError:
    log.error("step %s: executor failed unexpectedly", call.step, exc_info=error)
    return ExecutorError(f"the executor failed unexpectedly: {type(error).__name__}: {str(error)[:300]}")
