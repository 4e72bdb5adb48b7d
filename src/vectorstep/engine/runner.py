"""Running a pipeline: walk its steps, act on each step's status, tell the observers as it goes.

A run that waits on a person is `waiting`: the approval is a database row holding what the step
had done, so the run can be resumed (`Runner.resume`) by whichever process sees the decision —
also after the process that started it is gone.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from vectorstep.approvals.desk import ApprovalDesk, Interaction
from vectorstep.approvals.gate import HumanGate, RunParked
from vectorstep.clock import Clock
from vectorstep.domain.approvals import Approval
from vectorstep.domain.artifacts import ArtifactLimits
from vectorstep.domain.calibration import CalibrationHistory
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.events import (
    RUN_LOGGER,
    Observers,
    RunDetached,
    RunFinished,
    RunLogged,
    RunResumed,
    RunStarted,
    RunWaiting,
    RunWaitingOnChild,
    StepFinished,
    StepStarted,
)
from vectorstep.domain.records import DedupRule, LogEntry, ResumePoint, RunRecord, StepRecord
from vectorstep.domain.status import RunStatus, StepStatus
from vectorstep.domain.trace import TraceEvent
from vectorstep.engine.context import RunState
from vectorstep.engine.entries import entry, step_summary, why
from vectorstep.engine.groups import evaluate_fan_out, evaluate_parallel
from vectorstep.engine.outbound import Outbound, escalation_context
from vectorstep.engine.spent import Spent, over_budget
from vectorstep.engine.step import StepEnvironment, StepEvaluation, StepPlan, evaluate_step
from vectorstep.executors.pipeline import WaitingOnChild
from vectorstep.executors.registry import ExecutorRegistry
from vectorstep.spec.agent_files import AgentDefinition
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.service import CalibrationSettingsSpec, PricingSpec
from vectorstep.spec.snapshot import spec_from_snapshot, spec_snapshot
from vectorstep.spec.steps import ParallelItem, PipelineItem, StepSpec

log = logging.getLogger(__name__)
# Warnings of runs (a failed notification, a judge that failed softly). The CLI shows them in its
# own progress lines and quiets this logger; `serve` leaves it on stderr.
run_log = logging.getLogger(RUN_LOGGER)

RunTraceListener = Callable[[str, TraceEvent], None]  # (step name, event)

_RUN_STATUS_FOR_STEP = {
    StepStatus.ESCALATED: RunStatus.ESCALATED,
    StepStatus.ABORTED: RunStatus.ABORTED,
    StepStatus.STOPPED: RunStatus.STOPPED,
}


@dataclass
class _Drive:
    """One pass of a run through its steps (a new run, or a resumed one)."""

    state: RunState
    totals: Spent
    on_trace: RunTraceListener | None
    checkpoint: Mapping[str, Any] | None = None  # for the first step, when resuming a human check


class Runner:
    def __init__(
        self,
        *,
        executors: ExecutorRegistry,
        clock: Clock,
        pricing: PricingSpec,
        observers: Observers,
        http: httpx.AsyncClient,
        outbound: Outbound,
        desk: ApprovalDesk | None = None,
        interaction: Interaction | None = None,
        park: bool = False,
        workdir: Path | None = None,
        new_id: Callable[[], str] = lambda: uuid.uuid4().hex,
        calibration: CalibrationHistory | None = None,
        calibration_settings: CalibrationSettingsSpec | None = None,
        cancelled_runs_stay_running: bool = False,
        artifact_limits: ArtifactLimits | None = None,
        agents: Mapping[str, AgentDefinition] | None = None,
    ) -> None:
        """`cancelled_runs_stay_running`: a run this process stops driving (it shuts down) is left
        `running` for another worker to take up, instead of being marked `interrupted`."""
        self._hand_on = cancelled_runs_stay_running
        self._calibration = calibration
        self._calibration_settings = calibration_settings or CalibrationSettingsSpec()
        self._artifact_limits = artifact_limits or ArtifactLimits()
        self._agents = agents or {}
        self._executors = executors
        self._clock = clock
        self._pricing = pricing
        self._observers = observers
        self._http = http
        self._outbound = outbound
        self._desk = desk
        self._interaction = interaction
        self._workdir = workdir
        self._park = park
        self._new_id = new_id
        self._waiting: set[str] = set()  # runs that wait on a person right now

    async def run(
        self,
        pipeline: PipelineSpec,
        context: NormalisedContext,
        *,
        run_id: str | None = None,
        on_trace: RunTraceListener | None = None,
        parent: tuple[str, str] | None = None,
    ) -> RunRecord:
        return await (await self.begin(pipeline, context, run_id=run_id, on_trace=on_trace, parent=parent))()

    def started(
        self,
        pipeline: PipelineSpec,
        context: NormalisedContext,
        *,
        run_id: str | None = None,
        dedup: DedupRule | None = None,
        parent: tuple[str, str] | None = None,
    ) -> RunStarted:
        """The event that records a new run: its row (with the pipeline's snapshot) and first log line."""
        run_id = run_id or self._new_id()
        run = RunRecord(
            run_id=run_id,
            pipeline=pipeline.name,
            status=RunStatus.RUNNING,
            stage=pipeline.stage,
            started_at=self._clock.now(),
            source=context.source,
            team=context.team,
            context=context.as_dict(),
            spec=spec_snapshot(pipeline),
            dedup=dedup,
            parent_run_id=parent[0] if parent else None,
            parent_step=parent[1] if parent else None,
        )
        message = f"run of {pipeline.name} started (stage {pipeline.stage}, source {context.source})"
        if parent:
            message += f" as the sub-pipeline of run {parent[0]} (step {parent[1]})"
        return RunStarted(run, self._log(run_id, "run_started", message))

    async def begin(
        self,
        pipeline: PipelineSpec,
        context: NormalisedContext,
        *,
        run_id: str | None = None,
        dedup: DedupRule | None = None,
        on_trace: RunTraceListener | None = None,
        parent: tuple[str, str] | None = None,
    ) -> Callable[[], Awaitable[RunRecord]]:
        """Record the run (it exists once this returns) and give back what drives it to its end.

        Raises DuplicateRunError when `dedup` finds the event already has a run. `parent` (run id,
        step): the run is that step's sub-pipeline run.
        """
        event = self.started(pipeline, context, run_id=run_id, dedup=dedup, parent=parent)
        await self._observers.notify(event)
        state = RunState(event.run.run_id, pipeline, pipeline.stage, context)
        return lambda: self._drive(event.run, _Drive(state, Spent(), on_trace), start=0)

    async def drive_recorded(self, run: RunRecord, *, note: str) -> RunRecord:
        """Drive, from its first step, a run that was recorded elsewhere (a worker takes up a queued run)."""
        state, totals = _restored(run)
        picked_up = RunResumed(run.run_id, self._log(run.run_id, "run_picked_up", note), run.pipeline, run.stage)
        await self._observers.notify(picked_up)
        return await self._drive(run, _Drive(state, totals, None), start=0)

    async def resume(self, point: ResumePoint, *, on_trace: RunTraceListener | None = None) -> RunRecord:
        """Continue a run that waited on `point.approval`, from the step that asked."""
        run, approval = point.run, point.approval
        state, totals = _restored(run)
        start = next(index for index, item in enumerate(state.pipeline.steps) if entry(item).name == approval.step)
        decided = f"approval {approval.id[:12]} {approval.status.value} by {approval.decided_by}"
        await self._observers.notify(
            RunResumed(run.run_id, self._log(run.run_id, "run_resumed", f"resumed: {decided}"), run.pipeline, run.stage)
        )
        checkpoint = approval.checkpoint if approval.check else None
        return await self._drive(run, _Drive(state, totals, on_trace, checkpoint), start=start)

    async def resume_interrupted(
        self,
        run: RunRecord,
        start: int,
        *,
        on_trace: RunTraceListener | None = None,
        reason: str = "resumed after the process driving it stopped (durable: resume)",
    ) -> RunRecord:
        """Continue a run whose process stopped (or that waited on its sub-pipeline run), at item
        `start` (which runs again from its start)."""
        state, totals = _restored(run)
        message = reason
        if start < len(state.pipeline.steps):
            message += f"; {entry(state.pipeline.steps[start]).name} runs again from its start"
        await self._observers.notify(
            RunResumed(run.run_id, self._log(run.run_id, "run_resumed", message), run.pipeline, run.stage)
        )
        return await self._drive(run, _Drive(state, totals, on_trace), start=start)

    async def escalate_interrupted(self, run: RunRecord, reason: str) -> None:
        """Hand a run whose process stopped to a person: the pipeline's `escalate` notifications, then `escalated`."""
        state, totals = _restored(run)
        say = self._say(run.run_id, None)
        await say("warning", reason)
        steps = state.pipeline.steps
        name = next(
            (entry(item).name for item in steps if entry(item).name not in state.outputs), entry(steps[-1]).name
        )
        context = {**state.step_context(name), "step_name": name, "status": "interrupted", "escalation_reason": reason}
        await self._outbound.notify(state, "escalate", context, say)
        await self._finish(run, RunStatus.ESCALATED, reason, totals)

    async def _drive(self, run: RunRecord, drive: _Drive, *, start: int) -> RunRecord:
        try:
            status, error = await self._walk(drive, start)
        except asyncio.CancelledError:
            await asyncio.shield(self._stopped(run, drive.totals))
            raise
        except WaitingOnChild as parked:  # its child waits: the parent continues once the child has ended
            message = f"waiting for its sub-pipeline run {parked.child_run_id}; it holds no worker meanwhile"
            log_entry = self._log(run.run_id, "run_waiting", message)
            totals = drive.totals
            waiting = RunWaitingOnChild(
                run.run_id, parked.child_run_id, log_entry, totals.input_tokens, totals.output_tokens, totals.cost
            )
            await self._observers.notify(waiting)
            return RunRecord(**{**run.__dict__, "status": RunStatus.WAITING, "steps": tuple(drive.totals.steps)})
        except RunParked:  # it waits for a person without holding anything; a resumer continues it
            await self._stopped(run, drive.totals, parked=True)
            return RunRecord(**{**run.__dict__, "status": RunStatus.WAITING, "steps": tuple(drive.totals.steps)})
        except Exception as unexpected:  # a bug of ours must not strand the run as `running`
            log.exception("run %s failed unexpectedly", run.run_id)
            status, error = RunStatus.FAILED, f"internal error: {type(unexpected).__name__}: {unexpected}"
        finished = await self._finish(run, status, error, drive.totals)
        totals = drive.totals
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

    async def _walk(self, drive: _Drive, start: int) -> tuple[RunStatus, str | None]:
        state = drive.state
        for index, item in enumerate(state.pipeline.steps):
            if index < start:
                continue
            name, kind, threshold = entry(item)
            started = self._log(state.run_id, "step_started", f"step {name} started ({kind})", step=name)
            await self._observers.notify(StepStarted(state.run_id, name, index, kind, started))
            checkpoint, drive.checkpoint = drive.checkpoint, None
            record = await self._item(drive, item, index, checkpoint)
            continues = isinstance(item, StepSpec) and item.on_failure.policy == "continue"
            say = self._say(state.run_id, name)
            await self._outbound.after_step(state, item, record, threshold=threshold, say=say)
            if record.status is StepStatus.FAILED and not continues:
                return RunStatus.FAILED, f"step {name} failed ({record.error_kind}): {record.error}"
            if record.status in _RUN_STATUS_FOR_STEP:
                return _RUN_STATUS_FOR_STEP[record.status], why(record, threshold)
            overspent = over_budget(state.pipeline.budget, drive.totals)
            if overspent:
                say = self._say(state.run_id, None)
                await say("warning", overspent)
                context = {**escalation_context(state, record, threshold), "escalation_reason": overspent}
                await self._outbound.notify(state, "notify", context, say)
                return RunStatus.ABORTED, overspent
        return RunStatus.COMPLETED, None

    async def _item(
        self, drive: _Drive, item: PipelineItem, index: int, checkpoint: Mapping[str, Any] | None
    ) -> StepRecord:
        """Evaluate one entry of `steps:`, record it, and return the record the run acts on."""
        state = drive.state
        context = state.step_context(entry(item).name)

        async def unit(plan: StepPlan, unit_context: Mapping[str, Any]) -> StepEvaluation:
            environment = self._environment(state, plan.name, drive.on_trace)
            evaluation = await evaluate_step(plan, unit_context, environment, checkpoint)
            drive.totals.add(evaluation.record)
            finished = self._log(
                state.run_id,
                "step_finished",
                step_summary(evaluation.record),
                level="info" if evaluation.record.status in (StepStatus.COMPLETED, StepStatus.SKIPPED) else "warning",
                step=plan.name,
            )
            await self._observers.notify(StepFinished(evaluation.record, finished, state.pipeline.name, state.stage))
            if evaluation.output is not None:
                state.record_output(plan.name, evaluation.output)
            return evaluation

        if isinstance(item, StepSpec):
            return (await unit(StepPlan.of_step(item, index), context)).record
        kwargs = {"run_id": state.run_id, "context": context, "clock": self._clock, "evaluate_plan": unit}
        if isinstance(item, ParallelItem):
            group = await evaluate_parallel(item.parallel, index, **kwargs)  # type: ignore[arg-type]
        else:
            group = await evaluate_fan_out(item.fan_out, index, **kwargs)  # type: ignore[arg-type]
        drive.totals.add(group.record)
        message = step_summary(group.record)
        finished = self._log(state.run_id, "step_finished", message)
        await self._observers.notify(StepFinished(group.record, finished, state.pipeline.name, state.stage))
        if group.output is not None:
            state.record_output(group.record.name, group.output)
        return group.record

    def _environment(self, state: RunState, step: str, on_trace: RunTraceListener | None) -> StepEnvironment:
        return StepEnvironment(
            run_id=state.run_id,
            pipeline=state.pipeline.name,
            stage=state.stage,
            executors=self._executors,
            clock=self._clock,
            pricing=self._pricing,
            log=self._say(state.run_id, step),
            http=self._http,
            human=self._gate(state.run_id) if self._desk is not None else None,
            on_trace=(lambda event: on_trace(step, event)) if on_trace else None,
            workdir=self._workdir,
            calibration=self._calibration,
            calibration_settings=self._calibration_settings,
            artifact_limits=self._artifact_limits,
            agents=self._agents,
        )

    def _gate(self, run_id: str) -> HumanGate:
        assert self._desk is not None

        async def waiting(approval: Approval) -> None:
            message = f"waiting for a person: approval {approval.id[:12]} (decide with `vectorstep approvals`)"
            log_entry = self._log(run_id, "run_waiting", message, step=approval.step)
            self._waiting.add(run_id)
            await self._observers.notify(RunWaiting(run_id, approval, log_entry))

        async def resumed(approval: Approval) -> None:
            decided = f"approval {approval.id[:12]} {approval.status.value} by {approval.decided_by}"
            self._waiting.discard(run_id)
            await self._observers.notify(RunResumed(run_id, self._log(run_id, "run_resumed", decided)))

        return HumanGate(self._desk, waiting, resumed, self._interaction, park=self._park)

    def _say(self, run_id: str, step: str | None) -> Callable[[str, str], Any]:
        async def say(level: str, message: str) -> None:
            if level == "warning":  # also on the process's stderr, with the run it belongs to
                run_log.warning("run %s: %s", run_id, message)
            await self._observers.notify(RunLogged(self._log(run_id, "step_log", message, level=level, step=step)))

        return say

    async def _stopped(self, run: RunRecord, totals: Spent, *, parked: bool = False) -> None:
        """This process stops driving the run (it stops, or it parks the run): a run waiting on a person
        stays waiting, and anyone may resume it once the decision is in."""
        run_id = run.run_id
        if run_id in self._waiting:
            message = (
                "parked while it waits for a person: no worker is held; it continues once the approval is decided"
                if parked
                else "this process stopped while the run waited for a person; it stays waiting and can be resumed"
            )
            detached = RunDetached(
                run_id,
                self._log(run_id, "run_detached", message),
                input_tokens=totals.input_tokens,
                output_tokens=totals.output_tokens,
                cost=totals.cost,
            )
            await self._observers.notify(detached)
            return
        if self._hand_on and not parked:
            message = "the worker driving this run stopped; another worker takes it up after its last finished step"
            await self._observers.notify(RunLogged(self._log(run_id, "run_handed_on", message, level="warning")))
            return
        await self._finish(run, RunStatus.INTERRUPTED, "the run was interrupted", totals)

    async def _finish(self, run: RunRecord, status: RunStatus, error: str | None, totals: Spent) -> datetime:
        finished = self._clock.now()
        message = f"run {status.value}" + (f": {error}" if error else "")
        level = "info" if status is RunStatus.COMPLETED else "warning"
        await self._observers.notify(
            RunFinished(
                run_id=run.run_id,
                status=status,
                finished_at=finished,
                error=error,
                input_tokens=totals.input_tokens,
                output_tokens=totals.output_tokens,
                cost=totals.cost,
                log=self._log(run.run_id, "run_finished", message, level=level),
                pipeline=run.pipeline,
                stage=run.stage,
            )
        )
        return finished

    def _log(self, run_id: str, event: str, message: str, *, level: str = "info", step: str | None = None) -> LogEntry:
        return LogEntry(run_id=run_id, ts=self._clock.now(), level=level, event=event, message=message, step=step)


def _restored(run: RunRecord) -> tuple[RunState, Spent]:
    """A stored run's state as it was: the pipeline it started with, and what its steps recorded."""
    pipeline = spec_from_snapshot(run.spec or {})
    state = RunState(run.run_id, pipeline, run.stage, NormalisedContext.from_dict(run.context))
    totals = Spent()
    for step in run.steps:
        totals.add(step)
        if step.output is not None:
            state.record_output(step.name, step.output)
    return state, totals
