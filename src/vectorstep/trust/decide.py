"""The one trust decision (SYSTEM.md §7, steps 3–9). Pure: numbers and settings in, a Decision out.

    S ─► verifier combine ─► calibration (enforced) ─► grounding cap (enforced) ─► checks ─► gate

Every operation applied is listed, with its input and output, so the runner, the trust report,
the narrative and the UI all read the same result and nothing re-derives the math.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal

OnLowConfidence = Literal["escalate", "abort", "proceed"]


class GateOutcome(StrEnum):
    PASSED = "passed"  # combined_trust ≥ threshold
    PROCEEDED = "proceeded"  # below threshold, but on_low_confidence: proceed
    ESCALATED = "escalated"
    ABORTED = "aborted"


@dataclass(frozen=True)
class VerifierSignal:
    """A verifier that ran (V may be None when it failed softly)."""

    score: float | None
    strategy: Literal["minimum", "veto"]
    veto_floor: float = 0.60


@dataclass(frozen=True)
class CalibrationSignal:
    """The lookup for this step's bin; only consulted when calibration is enforced."""

    validated: bool
    accuracy: float | None
    on_uncalibrated: Literal["proceed", "escalate"]


@dataclass(frozen=True)
class GroundingSignal:
    score: float | None
    enforce: bool


@dataclass(frozen=True)
class TrustInputs:
    self_report: float
    confidence_threshold: float
    on_low_confidence: OnLowConfidence
    verifier: VerifierSignal | None = None
    calibration: CalibrationSignal | None = None
    grounding: GroundingSignal | None = None
    checks_passed: bool | None = None  # None: no checks declared


@dataclass(frozen=True)
class Operation:
    name: str
    input: float
    output: float
    note: str = ""


@dataclass(frozen=True)
class Decision:
    self_report: float
    after_verifier: float
    combined_trust: float
    outcome: GateOutcome
    operations: tuple[Operation, ...] = field(default_factory=tuple)
    enforced: bool = False  # grounding, a check or calibration took part in the gate
    policy: Literal["legacy_confidence", "trust_vector"] = "legacy_confidence"

    @property
    def proceeds(self) -> bool:
        return self.outcome in (GateOutcome.PASSED, GateOutcome.PROCEEDED)


def decide(inputs: TrustInputs) -> Decision:
    operations = [Operation("self_report", inputs.self_report, _clamp(inputs.self_report))]
    trust = operations[0].output
    trust = _combine_verifier(trust, inputs.verifier, operations)
    after_verifier = trust
    enforced = False
    if inputs.calibration is not None:
        trust = _calibrate(trust, inputs.calibration, operations)
        enforced = True
    if inputs.grounding is not None and inputs.grounding.enforce and inputs.grounding.score is not None:
        capped = min(trust, _clamp(inputs.grounding.score))
        operations.append(Operation("grounding_cap", trust, capped, "min(trust, G)"))
        trust = capped
        enforced = True
    if inputs.checks_passed is not None:
        after = trust if inputs.checks_passed else 0.0
        note = "all checks passed" if inputs.checks_passed else "a deterministic check failed"
        operations.append(Operation("deterministic_checks", trust, after, note))
        trust = after
        enforced = True
    outcome = _gate(trust, inputs.confidence_threshold, inputs.on_low_confidence)
    operations.append(Operation("gate", trust, trust, f"{outcome.value} (threshold {inputs.confidence_threshold:g})"))
    uses_trust_vector = any(
        block is not None for block in (inputs.verifier, inputs.calibration, inputs.grounding, inputs.checks_passed)
    )
    return Decision(
        self_report=operations[0].output,
        after_verifier=after_verifier,
        combined_trust=trust,
        outcome=outcome,
        operations=tuple(operations),
        enforced=enforced,
        policy="trust_vector" if uses_trust_vector else "legacy_confidence",
    )


def _combine_verifier(trust: float, verifier: VerifierSignal | None, operations: list[Operation]) -> float:
    if verifier is None:
        return trust
    if verifier.score is None:
        operations.append(Operation("verifier_failed", trust, trust, "the verifier gave no score; S kept"))
        return trust
    score = _clamp(verifier.score)
    if verifier.strategy == "minimum":
        combined = min(trust, score)
        operations.append(Operation("verifier_minimum", trust, combined, f"min(S, V={score:g})"))
        return combined
    if score < verifier.veto_floor:
        combined = min(trust, score)
        note = f"V={score:g} is below the veto floor {verifier.veto_floor:g}: min(S, V)"
    else:
        combined = trust
        note = f"V={score:g} is not below the veto floor {verifier.veto_floor:g}: S kept"
    operations.append(Operation("verifier_veto", trust, combined, note))
    return combined


def _calibrate(trust: float, calibration: CalibrationSignal, operations: list[Operation]) -> float:
    if calibration.validated and calibration.accuracy is not None:
        calibrated = _clamp(calibration.accuracy)
        operations.append(Operation("calibration", trust, calibrated, "replaced by the bin's measured accuracy"))
        return calibrated
    if calibration.on_uncalibrated == "escalate":
        operations.append(Operation("calibration", trust, 0.0, "bin not validated; on_uncalibrated: escalate"))
        return 0.0
    operations.append(Operation("calibration", trust, trust, "bin not validated; on_uncalibrated: proceed"))
    return trust


def _gate(trust: float, threshold: float, on_low_confidence: OnLowConfidence) -> GateOutcome:
    if trust >= threshold:
        return GateOutcome.PASSED
    return {
        "escalate": GateOutcome.ESCALATED,
        "abort": GateOutcome.ABORTED,
        "proceed": GateOutcome.PROCEEDED,
    }[on_low_confidence]


def _clamp(value: float) -> float:
    # Scores are in [0, 1] or None, never NaN: a NaN from anywhere counts as no trust at all.
    if value != value:  # noqa: PLR0124 - NaN check without importing math
        return 0.0
    return min(1.0, max(0.0, value))
