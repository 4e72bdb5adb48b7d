"""Evaluating one step, in the order of SYSTEM.md §7: when → primary → trust decision → status."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from vectorstep.approvals.gate import HumanGate
from vectorstep.clock import Clock
from vectorstep.domain.artifacts import ArtifactLimits, take_artifacts
from vectorstep.domain.calibration import Bucket, CalibrationHistory
from vectorstep.domain.execution import ExecutionResult
from vectorstep.domain.records import StepRecord, VersionTexts
from vectorstep.domain.status import StepStatus
from vectorstep.engine.checkpoint import restore, save_primary
from vectorstep.engine.cost import cost_of
from vectorstep.engine.primary import LogFn, PrimaryCall, PrimaryOutcome, prompt_hash, run_primary
from vectorstep.engine.signals import Assessment, Progress, SideCallContext, assess, total_cost
from vectorstep.errors import ExecutorError, LLMParseError, LLMSchemaError, TemplateError
from vectorstep.executors.registry import ExecutorRegistry
from vectorstep.runtime.protocol import TraceListener
from vectorstep.spec.agent_files import AgentDefinition
from vectorstep.spec.executor_config import GatewayConfig
from vectorstep.spec.service import CalibrationSettingsSpec, PricingSpec
from vectorstep.spec.steps import LoopUntilSpec, OnLowConfidence, StepSpec, TrustedWorkSpec
from vectorstep.templating import evaluate_condition
from vectorstep.trust.decide import Decision, GateOutcome


@dataclass(frozen=True)
class StepEnvironment:
    """What evaluating a step needs from the running engine."""

    run_id: str
    pipeline: str
    stage: str
    executors: ExecutorRegistry
    clock: Clock
    pricing: PricingSpec
    log: LogFn
    http: httpx.AsyncClient
    human: HumanGate | None = None
    on_trace: TraceListener | None = None
    workdir: Path | None = None
    calibration: CalibrationHistory | None = None  # the marked history, where a store is at hand
    calibration_settings: CalibrationSettingsSpec = field(default_factory=CalibrationSettingsSpec)
    artifact_limits: ArtifactLimits = field(default_factory=ArtifactLimits)
    # The loaded agents: the text of the version a step ran with, for version history.
    agents: Mapping[str, AgentDefinition] = field(default_factory=dict)


@dataclass(frozen=True)
class StepPlan:
    """One unit of work to evaluate: a sequential step, or a branch of a parallel group or fan-out."""

    name: str  # as recorded and addressed: `investigate`, `checks/db`, `per-pod/0`
    index: int
    work: TrustedWorkSpec
    when: str | None = None
    loop_until: LoopUntilSpec | None = None
    confidence_threshold: float = 0.0
    on_low_confidence: OnLowConfidence = "proceed"
    gated: bool = True  # False for a branch: its group is gated once, on the joined value

    @classmethod
    def of_step(cls, step: StepSpec, index: int) -> StepPlan:
        return cls(
            name=step.name,
            index=index,
            work=step,
            when=step.when,
            loop_until=step.loop_until,
            confidence_threshold=step.confidence_threshold,
            on_low_confidence=step.on_low_confidence,
        )

    @classmethod
    def of_branch(
        cls,
        name: str,
        index: int,
        work: TrustedWorkSpec,
        group: tuple[float, OnLowConfidence],
        when: str | None = None,
    ) -> StepPlan:
        """A branch is not gated on its own: its combined trust enters the group's join."""
        threshold, on_low_confidence = group
        return cls(name, index, work, when, None, threshold, on_low_confidence, gated=False)


@dataclass
class StepEvaluation:
    record: StepRecord
    output: Mapping[str, Any] | None = None
    decision: Decision | None = None
    warnings: list[str] = field(default_factory=list)


async def evaluate_step(
    plan: StepPlan, context: Mapping[str, Any], env: StepEnvironment, checkpoint: Mapping[str, Any] | None = None
) -> StepEvaluation:
    """Evaluate a step, or finish one that stopped to wait for a person (`checkpoint`, after a restart)."""
    started_at, started = env.clock.now(), env.clock.monotonic()
    builder = _RecordBuilder(plan, env, started_at, started)
    if checkpoint is not None:
        return await _resume(plan, context, env, builder, checkpoint)
    step = plan.work
    if plan.when is not None:
        try:
            run_it = evaluate_condition(plan.when, context)
        except TemplateError as error:
            builder.warnings.append(f"when: {error} — counted as false, step skipped")
            run_it = False
        if not run_it:
            return builder.finish(StepStatus.SKIPPED)
    executor = env.executors.get(step.executor)
    if executor is None:
        return builder.failed(
            "unavailable_executor",
            f"executor {step.executor!r} is not available in this version "
            f"(available: {', '.join(env.executors.names)})",
        )
    call = PrimaryCall(
        run_id=env.run_id,
        step=plan.name,
        stage=env.stage,
        work=step,
        executor=executor,
        context=context,
        clock=env.clock,
        log=env.log,
        on_trace=env.on_trace,
        pipeline=env.pipeline,
        human=env.human,
    )
    loop = plan.loop_until
    try:
        primary = await run_primary(call, loop.confidence if loop else None, loop.max_iterations if loop else 1)
    except TemplateError as error:
        return builder.failed("template_error", str(error))
    builder.primary = primary
    if primary.result is None:
        failure = primary.error or ExecutorError("the executor returned nothing")
        return builder.failed(failure.kind, failure.message, executor_error=failure)
    result = primary.result
    if result.truncated:
        builder.warnings.append("the agent's answer was cut off by max_tokens (stop reason: length)")
    saved = save_primary(
        result,
        spent=primary.spent,
        attempts=primary.attempts,
        iterations=primary.iterations,
        warnings=[*primary.warnings, *builder.warnings],
        prompt_hash=primary.prompt_hash,
        started_at=started_at,
    )
    return await _assessed(plan, context, env, builder, result, Progress(checkpoint=saved))


async def _resume(
    plan: StepPlan,
    context: Mapping[str, Any],
    env: StepEnvironment,
    builder: _RecordBuilder,
    checkpoint: Mapping[str, Any],
) -> StepEvaluation:
    restored = restore(checkpoint)
    builder.started_at = restored.started_at
    builder.started -= (env.clock.now() - restored.started_at).total_seconds()
    builder.primary = PrimaryOutcome(
        result=restored.result,
        error=None,
        prompt=restored.result.prompt,
        prompt_hash=restored.prompt_hash,
        attempts=restored.attempts,
        iterations=restored.iterations,
        warnings=restored.warnings,
        spent=restored.spent,
    )
    progress = Progress(
        checkpoint=dict(checkpoint),
        verifier=restored.verifier,
        grounding=restored.grounding,
        checks=restored.checks,
        resumed=True,
    )
    return await _assessed(plan, context, env, builder, restored.result, progress)


async def _assessed(  # noqa: PLR0917
    plan: StepPlan,
    context: Mapping[str, Any],
    env: StepEnvironment,
    builder: _RecordBuilder,
    result: ExecutionResult,
    progress: Progress,
) -> StepEvaluation:
    side = SideCallContext(
        run_id=env.run_id,
        pipeline=env.pipeline,
        step=plan.name,
        stage=env.stage,
        executors=env.executors,
        pricing=env.pricing,
        context=context,
        http=env.http,
        human=env.human,
        workdir=env.workdir,
        log=env.log,
        calibration=env.calibration,
        calibration_settings=env.calibration_settings,
        bucket=Bucket.of(
            plan.name,
            executor=plan.work.executor,
            agent=result.agent,
            model=result.model,
            provider=result.provider,
            prompt_hash=prompt_hash(plan.work.prompt_template),
            agent_version=result.agent_version,
        ),
    )
    assessment = await assess(
        plan.work, result, plan.confidence_threshold, plan.on_low_confidence, side, progress, plan.gated
    )
    return builder.decided(result, assessment)


def status_for(decision: Decision, proceed: bool) -> StepStatus:
    if decision.outcome is GateOutcome.ESCALATED:
        return StepStatus.ESCALATED
    if decision.outcome is GateOutcome.ABORTED:
        return StepStatus.ABORTED
    return StepStatus.COMPLETED if proceed else StepStatus.STOPPED


class _RecordBuilder:
    def __init__(self, plan: StepPlan, env: StepEnvironment, started_at: datetime, started: float):
        self.plan = plan
        self.env = env
        self.started_at = started_at
        self.started = started
        self.primary: PrimaryOutcome | None = None
        self.warnings: list[str] = []

    def _base(self, status: StepStatus) -> dict[str, Any]:
        config = self.plan.work.executor_config
        primary = self.primary
        return {
            "run_id": self.env.run_id,
            "name": self.plan.name,
            "index": self.plan.index,
            "status": status,
            "executor": self.plan.work.executor,
            "started_at": self.started_at,
            "finished_at": self.env.clock.now(),
            "duration_ms": round((self.env.clock.monotonic() - self.started) * 1000, 3),
            "agent": config.agent if isinstance(config, GatewayConfig) else None,
            "prompt": primary.prompt if primary else None,
            "prompt_hash": primary.prompt_hash if primary else prompt_hash(self.plan.work.prompt_template),
            "attempts": primary.attempts if primary else 0,
            "input_tokens": primary.spent.input_tokens if primary else 0,
            "output_tokens": primary.spent.output_tokens if primary else 0,
            "iterations": primary.iterations if primary else 0,
            "warnings": [*(primary.warnings if primary else []), *self.warnings],
        }

    def finish(self, status: StepStatus) -> StepEvaluation:
        return StepEvaluation(StepRecord(**self._base(status)), warnings=self.warnings)

    def failed(self, kind: str, message: str, executor_error: ExecutorError | None = None) -> StepEvaluation:
        fields = self._base(StepStatus.FAILED)
        fields.update(error_kind=kind, error=message)
        details = executor_error.details if executor_error else None
        if details is not None:
            fields.update(
                trace=tuple(details.trace),
                model=details.model,
                provider=details.provider,
                agent_version=details.agent_version,
                raw_output=details.response_text,
            )
        if self.primary is not None:
            fields["cost"] = cost_of(self.env.pricing, fields.get("provider"), self.primary.spent)
        if isinstance(executor_error, LLMParseError | LLMSchemaError):
            fields["raw_output"] = executor_error.raw_text  # the whole text, not the snippet in the message
        if self.primary is not None:  # the prompt went out: its version (and the agent's) was used
            fields["version_texts"] = self._version_texts(fields.get("agent"), fields.get("agent_version"))
        return StepEvaluation(StepRecord(**fields), warnings=self.warnings)

    def _version_texts(self, agent: str | None, version: str | None) -> VersionTexts:
        loaded = self.env.agents.get(agent) if agent else None
        # The loaded agent is the one that ran only when its version says so (a remote gateway may differ).
        definition = loaded.definition if loaded is not None and loaded.version == version else None
        return VersionTexts(prompt_template=self.plan.work.prompt_template, agent_definition=definition)

    def decided(self, result: ExecutionResult, assessment: Assessment) -> StepEvaluation:
        decision = assessment.decision
        spent = self.primary.spent if self.primary is not None else result.usage
        if self.plan.gated:
            status = status_for(decision, result.output.proceed)
        else:
            status = StepStatus.COMPLETED if result.output.proceed else StepStatus.STOPPED
        taken = take_artifacts(result.output.as_context(), self.env.artifact_limits)
        self.warnings.extend(taken.warnings)
        fields = self._base(status)
        output = taken.output  # later steps, the record and the UI carry references, not the texts
        fields.update(_attribution(assessment))
        fields.update(
            model=result.model,
            provider=result.provider,
            agent_version=result.agent_version,
            raw_output=result.response_text,
            output=output,
            artifacts=taken.artifacts,
            version_texts=self._version_texts(fields["agent"], result.agent_version),
            confidence=decision.self_report,
            effective_confidence=decision.after_verifier,
            combined_trust=decision.combined_trust,
            gate_outcome=decision.outcome.value,
            trace=result.trace,
            trust_report=assessment.report,
            deterministic_passed=all(c.passed for c in assessment.checks) if assessment.checks is not None else None,
            grounding_score=assessment.grounding.score if assessment.grounding else None,
            cost=total_cost(
                cost_of(self.env.pricing, result.provider, spent),
                spent,
                assessment.verifier.call if assessment.verifier else None,
                assessment.grounding.call if assessment.grounding else None,
            ),
        )
        return StepEvaluation(StepRecord(**fields), output=output, decision=decision, warnings=self.warnings)


def _attribution(assessment: Assessment) -> dict[str, Any]:
    """Who ran the verifier and the judge, for the step's columns."""
    fields: dict[str, Any] = {}
    verifier = assessment.verifier
    if verifier is not None:
        fields.update(verifier_mode=verifier.mode, verifier_confidence=verifier.score)
        if verifier.triggered:
            call = verifier.call
            fields.update(
                verifier_agent=call.agent,
                verifier_model=call.model,
                verifier_provider=call.provider,
                verifier_prompt=call.prompt,
                verifier_input_tokens=call.input_tokens,
                verifier_output_tokens=call.output_tokens,
            )
    grounding = assessment.grounding
    if grounding is not None and grounding.reason != "no_trace":
        call = grounding.call
        fields.update(
            grounding_model=call.model,
            grounding_provider=call.provider,
            grounding_input_tokens=call.input_tokens,
            grounding_output_tokens=call.output_tokens,
        )
    return fields
