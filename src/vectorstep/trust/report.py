"""The trust report of a step (SYSTEM.md §7.1): what ran, what it said, and how the decision was made.

It is persisted as `pipeline_steps.trust_report` and is the only source the narrative, the
terminal panel and the UI read — what ran is recorded, never re-read from today's config.
"""

from __future__ import annotations

from typing import Any

from vectorstep.domain.signals import CheckResult, GroundingOutcome, VerifierOutcome
from vectorstep.spec.service import CalibrationSettingsSpec
from vectorstep.spec.steps import TrustedWorkSpec
from vectorstep.trust.decide import Decision

REPORT_VERSION = 1
DIVERGENCE = 0.2  # |G − S| at or above this is flagged: the self-report and the evidence disagree


def needs_report(work: TrustedWorkSpec) -> bool:
    """A report is kept when a verifier, grounding, checks or enforced calibration are configured."""
    enforced_calibration = work.calibration is not None and work.calibration.enforce
    return bool(work.verifier or work.grounding or work.deterministic_checks or enforced_calibration)


def step_configuration(
    work: TrustedWorkSpec,
    threshold: float,
    on_low_confidence: str,
    *,
    gated_by_group: bool = False,
    calibration: CalibrationSettingsSpec | None = None,
) -> dict[str, Any]:
    """What the step was set up to do, as it was when it ran (with the service's calibration settings)."""
    verifier = work.verifier
    grounding = work.grounding
    return {
        "confidence_threshold": threshold,
        "on_low_confidence": on_low_confidence,
        "gated_by_group": gated_by_group,
        "verifier": None
        if verifier is None
        else {
            "mode": verifier.mode,
            "combination_strategy": verifier.combination_strategy,
            "veto_floor": verifier.veto_floor if verifier.combination_strategy == "veto" else None,
            "trigger": verifier.trigger.model_dump(),
            "agent": getattr(verifier.executor_config, "agent", None),
        },
        "grounding": None
        if grounding is None
        else {
            "enforce": grounding.enforce,
            "executor": grounding.executor,
            "agent": None
            if grounding.executor == "local"
            else getattr(grounding.executor_config, "agent", grounding.agent),
            "max_trace_chars": grounding.max_trace_chars,
            "evidence_windows": grounding.evidence_windows,
            "timeout_seconds": grounding.timeout_seconds,
        },
        "deterministic_checks": [check.name for check in work.deterministic_checks],
        "calibration": None
        if work.calibration is None
        else {**work.calibration.model_dump(), **(calibration or CalibrationSettingsSpec()).model_dump()},
    }


def build_report(
    decision: Decision,
    configuration: dict[str, Any],
    *,
    verifier: VerifierOutcome | None,
    grounding: GroundingOutcome | None,
    checks: list[CheckResult] | None = None,
    calibration: dict[str, Any] | None = None,
) -> dict[str, Any]:
    signals: dict[str, Any] = {
        "S": decision.self_report,
        "S_after_V": decision.after_verifier,
        "V": verifier.score if verifier is not None else None,
        "V_mode": verifier.mode if verifier is not None else None,
        "V_combination_strategy": verifier.strategy if verifier is not None else None,
        "G": grounding.score if grounding is not None else None,
        "D": all(check.passed for check in checks) if checks is not None else None,
    }
    if verifier is not None and verifier.strategy == "veto":
        signals["V_veto_floor"] = verifier.veto_floor
    return {
        "version": REPORT_VERSION,
        "mode": "enforced" if decision.enforced else "shadow",
        "signals": signals,
        "combined_trust": decision.combined_trust,
        "divergence": divergence(decision.self_report, grounding.score if grounding else None),
        "derivation": [
            {"operation": op.name, "input": op.input, "output": op.output, "note": op.note}
            for op in decision.operations
        ],
        "verifier": verifier.as_report() if verifier is not None else None,
        "grounding": grounding.as_report() if grounding is not None else None,
        "deterministic_checks": [check.as_report() for check in checks or []],
        "calibration": calibration,
        "gate": {
            "policy": decision.policy,
            "confidence_threshold": configuration["confidence_threshold"],
            "on_low_confidence": configuration["on_low_confidence"],
            "outcome": decision.outcome.value,
        },
        "configuration": configuration,
    }


def divergence(self_report: float | None, grounding: float | None) -> dict[str, Any] | None:
    if self_report is None or grounding is None:
        return None
    gap = abs(grounding - self_report)
    return {"gap": round(gap, 4), "flagged": gap >= DIVERGENCE - 1e-9, "threshold": DIVERGENCE}
