"""Running a pipeline: walk its steps, act on each step's status, tell the observers as it goes."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from vectorstep.clock import Clock
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.events import Observers, RunFinished, RunLogged, RunStarted, StepFinished, StepStarted
from vectorstep.domain.records import LogEntry, RunRecord, StepRecord
from vectorstep.domain.status import RunStatus, StepStatus
from vectorstep.domain.trace import TraceEvent
from vectorstep.engine.context import RunState
from vectorstep.engine.groups import evaluate_fan_out, evaluate_parallel
from vectorstep.engine.step import StepEnvironment, StepEvaluation, StepPlan, evaluate_step
from vectorstep.executors.registry import ExecutorRegistry
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.service import PricingSpec
from vectorstep.spec.steps import FanOutItem, ParallelItem, PipelineItem, StepSpec

log = logging.getLogger(__name__)

RunTraceListener = Callable[[str, TraceEvent], None]  # (step name, event)

_RUN_STATUS_FOR_STEP = {
    StepStatus.ESCALATED: RunStatus.ESCALATED,
    StepStatus.ABORTED: RunStatus.ABORTED,
    StepStatus.STOPPED: RunStatus.STOPPED,
}


@dataclass
class _Totals:
    input_tokens: int = 0
    output_tokens: int = 0
    priced: float = 0.0
    unpriced: bool = False  # some tokens have no price: the run's cost is unknown
    steps: list[StepRecord] = field(default_factory=list)

    def add(self, record: StepRecord) -> None:
        self.steps.append(record)
        self.input_tokens += record.total_input_tokens
        self.output_tokens += record.total_output_tokens
        if record.cost is not None:
            self.priced += record.cost
        elif record.total_input_tokens or record.total_output_tokens:
            self.unpriced = True

    @property
    def cost(self) -> float | None:
        return None if self.unpriced else round(self.priced, 6)


class Runner:
    def __init__(
        self,
        *,
        executors: ExecutorRegistry,
        clock: Clock,
        pricing: PricingSpec,
        observers: Observers,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
    ) -> None:
        self._executors = executors
        self._clock = clock
        self._pricing = pricing
        self._observers = observers
        self._new_id = new_id

    async def run(
        self,
        pipeline: PipelineSpec,
        context: NormalisedContext,
        *,
        run_id: str | None = None,
        on_trace: RunTraceListener | None = None,
    ) -> RunRecord:
        state = RunState(run_id or self._new_id(), pipeline, pipeline.stage, context)
        run = RunRecord(
            run_id=state.run_id,
            pipeline=pipeline.name,
            status=RunStatus.RUNNING,
            stage=pipeline.stage,
            started_at=self._clock.now(),
            source=context.source,
            team=context.team,
            context=context.as_dict(),
        )
        await self._observers.notify(
            RunStarted(
                run,
                self._log(
                    state.run_id,
                    "run_started",
                    f"run of {pipeline.name} started (stage {pipeline.stage}, source {context.source})",
                ),
            )
        )
        totals = _Totals()
        try:
            status, error = await self._walk(state, totals, on_trace)
        except asyncio.CancelledError:
            await asyncio.shield(self._finish(state.run_id, RunStatus.INTERRUPTED, "the run was interrupted", totals))
            raise
        except Exception as unexpected:  # a bug of ours must not strand the run as `running`
            log.exception("run %s failed unexpectedly", state.run_id)
            status, error = RunStatus.FAILED, f"internal error: {type(unexpected).__name__}: {unexpected}"
        finished = await self._finish(state.run_id, status, error, totals)
        return RunRecord(
            **{
                **run.__dict__,
                "status": status,
                "finished_at": finished,
                "error": error,
                "input_tokens": totals.input_tokens,
                "output_tokens": totals.output_tokens,
                "cost": totals.cost,
                "steps": tuple(totals.steps),
            }
        )

    async def _walk(
        self, state: RunState, totals: _Totals, on_trace: RunTraceListener | None
    ) -> tuple[RunStatus, str | None]:
        for index, item in enumerate(state.pipeline.steps):
            name, kind, threshold = _entry(item)
            await self._observers.notify(
                StepStarted(
                    state.run_id,
                    name,
                    index,
                    kind,
                    self._log(state.run_id, "step_started", f"step {name} started ({kind})", step=name),
                )
            )
            record = await self._item(state, item, index, totals, on_trace)
            continues = isinstance(item, StepSpec) and item.on_failure.policy == "continue"
            if record.status is StepStatus.FAILED and not continues:
                return RunStatus.FAILED, f"step {name} failed ({record.error_kind}): {record.error}"
            if record.status in _RUN_STATUS_FOR_STEP:
                return _RUN_STATUS_FOR_STEP[record.status], _why(record, threshold)
            over_budget = self._over_budget(state.pipeline, totals)
            if over_budget:
                await self._observers.notify(
                    RunLogged(self._log(state.run_id, "budget_exceeded", over_budget, level="warning"))
                )
                return RunStatus.ABORTED, over_budget
        return RunStatus.COMPLETED, None

    async def _item(
        self, state: RunState, item: PipelineItem, index: int, totals: _Totals, on_trace: RunTraceListener | None
    ) -> StepRecord:
        """Evaluate one entry of `steps:`, record it, and return the record the run acts on."""
        context = state.step_context(_entry(item).name)

        async def unit(plan: StepPlan, unit_context: Mapping[str, Any]) -> StepEvaluation:
            evaluation = await evaluate_step(plan, unit_context, self._environment(state, plan.name, on_trace))
            totals.add(evaluation.record)
            await self._observers.notify(StepFinished(evaluation.record, self._step_log(evaluation.record)))
            if evaluation.output is not None:
                state.record_output(plan.name, evaluation.output)
            return evaluation

        if isinstance(item, StepSpec):
            return (await unit(StepPlan.of_step(item, index), context)).record
        if isinstance(item, ParallelItem):
            group = await evaluate_parallel(
                item.parallel, index, run_id=state.run_id, context=context, clock=self._clock, evaluate_plan=unit
            )
        else:
            group = await evaluate_fan_out(
                item.fan_out, index, run_id=state.run_id, context=context, clock=self._clock, evaluate_plan=unit
            )
        totals.add(group.record)
        await self._observers.notify(StepFinished(group.record, self._step_log(group.record)))
        if group.output is not None:
            state.record_output(group.record.name, group.output)
        return group.record

    def _environment(self, state: RunState, step: str, on_trace: RunTraceListener | None) -> StepEnvironment:
        run_id = state.run_id

        async def step_log(level: str, message: str) -> None:
            await self._observers.notify(RunLogged(self._log(run_id, "step_log", message, level=level, step=step)))

        return StepEnvironment(
            run_id=run_id,
            stage=state.stage,
            executors=self._executors,
            clock=self._clock,
            pricing=self._pricing,
            log=step_log,
            on_trace=(lambda event: on_trace(step, event)) if on_trace else None,
        )

    def _over_budget(self, pipeline: PipelineSpec, totals: _Totals) -> str | None:
        budget = pipeline.budget
        if budget is None:
            return None
        tokens = totals.input_tokens + totals.output_tokens
        if budget.max_tokens is not None and tokens > budget.max_tokens:
            return f"budget exceeded: {tokens:,} tokens used, max_tokens is {budget.max_tokens:,}"
        if budget.max_usd is not None and totals.cost is not None and totals.cost > budget.max_usd:
            return f"budget exceeded: {totals.cost:.4f} USD spent, max_usd is {budget.max_usd:g}"
        return None

    async def _finish(self, run_id: str, status: RunStatus, error: str | None, totals: _Totals) -> datetime:
        finished = self._clock.now()
        message = f"run {status.value}" + (f": {error}" if error else "")
        await self._observers.notify(
            RunFinished(
                run_id=run_id,
                status=status,
                finished_at=finished,
                error=error,
                input_tokens=totals.input_tokens,
                output_tokens=totals.output_tokens,
                cost=totals.cost,
                log=self._log(
                    run_id,
                    "run_finished",
                    message,
                    level="info" if status is RunStatus.COMPLETED else "warning",
                ),
            )
        )
        return finished

    def _log(self, run_id: str, event: str, message: str, *, level: str = "info", step: str | None = None) -> LogEntry:
        return LogEntry(run_id=run_id, ts=self._clock.now(), level=level, event=event, message=message, step=step)

    def _step_log(self, record: StepRecord) -> LogEntry:
        parts = [f"step {record.name} {record.status.value}"]
        if record.confidence is not None:
            parts.append(f"S={record.confidence:g} combined_trust={record.combined_trust:g} gate={record.gate_outcome}")
        if record.error:
            parts.append(f"{record.error_kind}: {record.error}")
        level = "info" if record.status in (StepStatus.COMPLETED, StepStatus.SKIPPED) else "warning"
        return self._log(record.run_id, "step_finished", "; ".join(parts), level=level, step=record.name)


class _Entry(NamedTuple):
    """What the runner needs to know of an entry of `steps:`, whatever its kind."""

    name: str
    kind: str  # the executor, or `parallel` / `fan_out`
    confidence_threshold: float


def _entry(item: PipelineItem) -> _Entry:
    if isinstance(item, ParallelItem):
        return _Entry(item.parallel.name, "parallel", item.parallel.confidence_threshold)
    if isinstance(item, FanOutItem):
        return _Entry(item.fan_out.name, "fan_out", item.fan_out.confidence_threshold)
    return _Entry(item.name, item.executor, item.confidence_threshold)


def _why(record: StepRecord, threshold: float) -> str:
    if record.status is StepStatus.STOPPED:
        reason = (record.output or {}).get("proceed_reason")
        return f"step {record.name} said not to proceed" + (f": {reason}" if reason else "")
    if record.combined_trust is None:
        return f"step {record.name} {record.status.value}" + (f": {record.error}" if record.error else "")
    return (
        f"step {record.name} {record.status.value}: combined_trust {record.combined_trust:g} "
        f"is below its confidence_threshold {threshold:g}"
    )
