"""Gathering a step's trust signals after its primary call (§7 steps 4–8) and deciding once.

verifier (V) → calibration (later) → grounding (G) → checks (later) → trust.decide
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx

from vectorstep.approvals.gate import HumanGate
from vectorstep.checks.run import run_checks
from vectorstep.domain.approvals import ApprovalRequest
from vectorstep.domain.calibration import Bin, Bucket, CalibrationHistory, estimate_counts
from vectorstep.domain.execution import ExecutionResult, ExecutorCapabilities, Usage
from vectorstep.domain.signals import CallAttribution, CheckResult, GroundingOutcome, VerifierOutcome
from vectorstep.engine.checkpoint import with_signals
from vectorstep.engine.context import template_name
from vectorstep.engine.cost import cost_of
from vectorstep.engine.primary import LogFn
from vectorstep.engine.verifier import verify
from vectorstep.errors import ExecutorError
from vectorstep.executors.base import StepCall
from vectorstep.executors.registry import ExecutorRegistry
from vectorstep.grounding.judge import judge_grounding
from vectorstep.grounding.second_opinion import Ask
from vectorstep.spec.executor_config import ExecutorConfig
from vectorstep.spec.service import CalibrationSettingsSpec, PricingSpec
from vectorstep.spec.steps import OnLowConfidence, TrustedWorkSpec
from vectorstep.spec.trust_blocks import CalibrationSpec
from vectorstep.templating import NamedMapping
from vectorstep.trust.decide import (
    CalibrationSignal,
    Decision,
    GroundingSignal,
    TrustInputs,
    VerifierSignal,
    decide,
)
from vectorstep.trust.report import build_report, needs_report, step_configuration


@dataclass(frozen=True)
class SideCallContext:
    run_id: str
    pipeline: str
    step: str
    stage: str
    executors: ExecutorRegistry
    pricing: PricingSpec
    context: Mapping[str, Any]
    http: httpx.AsyncClient
    human: HumanGate | None = None
    workdir: Path | None = None  # where shell checks run: the folder of vectorstep.yaml
    log: LogFn | None = None  # the run log of this step
    calibration: CalibrationHistory | None = None
    calibration_settings: CalibrationSettingsSpec = dataclasses.field(default_factory=CalibrationSettingsSpec)
    bucket: Bucket | None = None


@dataclass(frozen=True)
class Assessment:
    decision: Decision
    verifier: VerifierOutcome | None
    grounding: GroundingOutcome | None
    checks: list[CheckResult] | None
    report: dict[str, Any] | None


@dataclass(frozen=True)
class Progress:
    """What a step did before its trust blocks: to resume from after a restart, and where it stopped."""

    checkpoint: dict[str, Any]
    verifier: VerifierOutcome | None = None
    grounding: GroundingOutcome | None = None
    checks: list[CheckResult] = dataclasses.field(default_factory=list)
    resumed: bool = False


async def assess(  # noqa: PLR0917 - the step's work, its answer, its gate and where to call from
    work: TrustedWorkSpec,
    primary: ExecutionResult,
    threshold: float,
    on_low_confidence: OnLowConfidence,
    side: SideCallContext,
    progress: Progress,
    gated: bool = True,
) -> Assessment:
    if progress.resumed:
        verifier, grounding = progress.verifier, progress.grounding
    else:
        verifier = await _verifier(work, primary, side)
        grounding = await _grounding(work, primary, side)

    verifier_signal = (
        VerifierSignal(verifier.score, verifier.strategy, verifier.veto_floor)  # type: ignore[arg-type]
        if verifier is not None and verifier.triggered
        else None
    )
    calibration, in_bin = None, None
    if work.calibration is not None:  # the bin is read at the trust the verifier left, as the decision reads it
        after_verifier = decide(
            TrustInputs(primary.output.confidence, threshold, on_low_confidence, verifier=verifier_signal)
        ).after_verifier
        calibration, in_bin = await _calibration(work.calibration, after_verifier, side)

    def decision_with(checks_passed: bool | None) -> Decision:
        return decide(
            TrustInputs(
                self_report=primary.output.confidence,
                confidence_threshold=threshold,
                on_low_confidence=on_low_confidence,
                verifier=verifier_signal,
                calibration=calibration,
                grounding=GroundingSignal(grounding.score, grounding.enforce) if grounding is not None else None,
                checks_passed=checks_passed,
            )
        )

    checks = None
    if work.deterministic_checks:
        before = decision_with(None)
        below = (
            f"trust {before.combined_trust:g} is already below the threshold {threshold:g}"
            if before.combined_trust < threshold
            else None
        )
        checkpoint = with_signals(progress.checkpoint, verifier, grounding)
        checks = await _checks(work, primary, side, checkpoint, progress.checks, below)
    decision = decision_with(all(check.passed for check in checks) if checks is not None else None)
    report = None
    if needs_report(work):
        configuration = step_configuration(
            work, threshold, on_low_confidence, gated_by_group=not gated, calibration=side.calibration_settings
        )
        report = build_report(
            decision,
            configuration,
            verifier=verifier,
            grounding=grounding,
            checks=checks,
            calibration=in_bin,
        )
    return Assessment(decision, verifier, grounding, checks, report)


async def _calibration(
    spec: CalibrationSpec, predicted: float, side: SideCallContext
) -> tuple[CalibrationSignal | None, dict[str, Any] | None]:
    """The bin of this step's bucket that `predicted` falls in, estimated from its marked history."""
    if side.calibration is None or side.bucket is None or side.stage != "production":
        return None, None
    settings = side.calibration_settings
    within = Bin.of(predicted, settings.bin_width)
    n, total = await side.calibration.counts(side.bucket, within.low, within.high)
    found = estimate_counts(n, total, settings.n_min, settings.estimator, settings.confidence)
    report = {
        "enforce": spec.enforce,
        "bucket": dataclasses.asdict(side.bucket),
        "bin": [within.low, within.high],
        "raw": predicted,
        "n": found.n,
        "n_min": settings.n_min,
        "mean": found.mean,
        "estimator": settings.estimator,
        "estimate": found.estimate,
        "validated": found.validated,
        "calibrated": found.estimate if found.validated else None,
        "on_uncalibrated": spec.on_uncalibrated,
        "bucket_reset": found.n == 0,
    }
    if not spec.enforce:  # shadow: reported, never used by the gate
        return None, report
    return CalibrationSignal(found.validated, found.estimate, spec.on_uncalibrated), report


async def _checks(  # noqa: PLR0917
    work: TrustedWorkSpec,
    primary: ExecutionResult,
    side: SideCallContext,
    checkpoint: dict[str, Any],
    done: list[CheckResult],
    below_threshold: str | None,
) -> list[CheckResult]:
    """The checks see the step context with this step's own answer in it, as `steps.<this step>`."""
    steps = dict(side.context.get("steps") or {})
    own = primary.output.as_context()
    steps[template_name(side.step)] = steps[side.step] = NamedMapping(f"steps.{template_name(side.step)}", own)
    context = {**side.context, "steps": NamedMapping("steps", steps)}
    base = ApprovalRequest(
        run_id=side.run_id,
        pipeline=side.pipeline,
        step=side.step,
        check=None,
        message="",
        team=side.context.get("team"),
        stage=side.stage,
        timeout_seconds=0,
        checkpoint=checkpoint,
    )
    return await run_checks(
        work.deterministic_checks,
        context,
        http=side.http,
        human=side.human,
        base=base,
        done=done,
        below_threshold=below_threshold,
        cwd=side.workdir,
    )


async def _verifier(work: TrustedWorkSpec, primary: ExecutionResult, side: SideCallContext) -> VerifierOutcome | None:
    if work.verifier is None:
        return None
    outcome = await verify(work.verifier, primary, _asker(side, work.verifier.executor, work.verifier.executor_config))
    if outcome.error is not None:
        await _say_soft_failure(side, f"verifier failed softly ({outcome.error}); V is empty and S stands")
    return _priced(outcome, side.pricing)


async def _grounding(work: TrustedWorkSpec, primary: ExecutionResult, side: SideCallContext) -> GroundingOutcome | None:
    spec = work.grounding
    if spec is None:
        return None
    capabilities = side.executors.capabilities(work.executor) or ExecutorCapabilities()
    if not capabilities.trace:  # nothing to check against: "no evidence trail", never "unsupported"
        return GroundingOutcome(
            computed=False,
            reason="no_trace",
            enforce=spec.enforce,
            max_trace_chars=spec.max_trace_chars,
            evidence_windows=spec.evidence_windows,
            executor=spec.executor,
        )
    if spec.executor == "local" or spec.executor_config is None:
        return await judge_grounding(spec, primary, None)  # the anchor check: no model, nothing to price
    outcome = await judge_grounding(spec, primary, _asker(side, spec.executor, spec.executor_config))
    if outcome.error is not None:
        await _say_soft_failure(side, f"grounding judge failed softly ({outcome.error}); G is empty and caps nothing")
    return _priced(outcome, side.pricing)


async def _say_soft_failure(side: SideCallContext, message: str) -> None:
    """A second opinion that failed changes nothing, but nobody should have to dig to find out that it did."""
    if side.log is not None:
        await side.log("warning", f"step {side.step}: {message}")


def _asker(side: SideCallContext, executor_name: str, config: ExecutorConfig) -> Ask:
    async def ask(prompt: str, timeout_seconds: float) -> ExecutionResult:
        executor = side.executors.get(executor_name)
        if executor is None:
            raise ExecutorError(f"executor {executor_name!r} is not available")
        call = StepCall(
            run_id=side.run_id,
            step=side.step,
            stage=side.stage,
            prompt=prompt,
            config=config,
            context=side.context,
            timeout_seconds=timeout_seconds,
        )
        return await executor.execute(call)

    return ask


Outcome = TypeVar("Outcome", VerifierOutcome, GroundingOutcome)


def _priced(outcome: Outcome, pricing: PricingSpec) -> Outcome:
    cost = cost_of(pricing, outcome.call.provider, outcome.call.usage)
    return dataclasses.replace(outcome, call=dataclasses.replace(outcome.call, cost=cost))


def total_cost(primary: float | None, primary_usage: Usage, *others: CallAttribution | None) -> float | None:
    """Everything that ran for the step; unknown when any part that used tokens has no price."""
    parts = [(primary, primary_usage)] + [(other.cost, other.usage) for other in others if other is not None]
    if any(cost is None and usage.by_model for cost, usage in parts):
        return None
    costs = [cost for cost, _ in parts if cost is not None]
    return round(sum(costs), 6) if costs else None
