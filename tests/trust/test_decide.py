"""The one trust decision: table tests of §7 and properties that must always hold."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vectorstep.trust.decide import (
    CalibrationSignal,
    GateOutcome,
    GroundingSignal,
    TrustInputs,
    VerifierSignal,
    decide,
)

scores = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)
maybe_scores = st.none() | scores
actions = st.sampled_from(["escalate", "abort", "proceed"])


@pytest.mark.parametrize(
    ("inputs", "combined", "outcome"),
    [
        (TrustInputs(0.8, 0.75, "escalate"), 0.8, GateOutcome.PASSED),
        (TrustInputs(0.75, 0.75, "escalate"), 0.75, GateOutcome.PASSED),
        (TrustInputs(0.7, 0.75, "escalate"), 0.7, GateOutcome.ESCALATED),
        (TrustInputs(0.7, 0.75, "abort"), 0.7, GateOutcome.ABORTED),
        (TrustInputs(0.7, 0.75, "proceed"), 0.7, GateOutcome.PROCEEDED),
        (TrustInputs(0.9, 0.75, "escalate", verifier=VerifierSignal(0.6, "minimum")), 0.6, GateOutcome.ESCALATED),
        (TrustInputs(0.9, 0.75, "escalate", verifier=VerifierSignal(0.65, "veto", 0.6)), 0.9, GateOutcome.PASSED),
        (TrustInputs(0.9, 0.75, "escalate", verifier=VerifierSignal(0.5, "veto", 0.6)), 0.5, GateOutcome.ESCALATED),
        (TrustInputs(0.9, 0.75, "escalate", verifier=VerifierSignal(0.6, "veto", 0.6)), 0.9, GateOutcome.PASSED),
        (
            TrustInputs(0.9, 0.75, "escalate", verifier=VerifierSignal(0.5999, "veto", 0.6)),
            0.5999,
            GateOutcome.ESCALATED,
        ),
        (TrustInputs(0.9, 0.75, "escalate", verifier=VerifierSignal(None, "minimum")), 0.9, GateOutcome.PASSED),
        (
            TrustInputs(0.6, 0.75, "escalate", calibration=CalibrationSignal(True, 0.85, "proceed")),
            0.85,
            GateOutcome.PASSED,
        ),
        (
            TrustInputs(0.9, 0.75, "escalate", calibration=CalibrationSignal(False, None, "escalate")),
            0.0,
            GateOutcome.ESCALATED,
        ),
        (
            TrustInputs(0.9, 0.75, "escalate", calibration=CalibrationSignal(False, None, "proceed")),
            0.9,
            GateOutcome.PASSED,
        ),
        (TrustInputs(0.9, 0.75, "escalate", grounding=GroundingSignal(0.5, enforce=False)), 0.9, GateOutcome.PASSED),
        (TrustInputs(0.9, 0.75, "escalate", grounding=GroundingSignal(0.5, enforce=True)), 0.5, GateOutcome.ESCALATED),
        (TrustInputs(0.9, 0.75, "escalate", grounding=GroundingSignal(None, enforce=True)), 0.9, GateOutcome.PASSED),
        (TrustInputs(0.6, 0.5, "escalate", grounding=GroundingSignal(0.95, enforce=True)), 0.6, GateOutcome.PASSED),
        (TrustInputs(0.9, 0.75, "abort", checks_passed=False), 0.0, GateOutcome.ABORTED),
        (TrustInputs(0.9, 0.75, "abort", checks_passed=True), 0.9, GateOutcome.PASSED),
    ],
    ids=[
        "S-above",
        "S-equal-passes",
        "S-below-escalate",
        "S-below-abort",
        "S-below-proceed",
        "V-minimum",
        "V-veto-above-floor-keeps-S",
        "V-veto-below-floor",
        "V-veto-at-the-floor-keeps-S",
        "V-veto-just-below-the-floor",
        "V-failed-keeps-S",
        "calibrated-raises",
        "uncalibrated-escalate",
        "uncalibrated-proceed",
        "G-shadow-no-cap",
        "G-enforced-caps",
        "G-null-never-caps",
        "G-never-raises",
        "check-failed-zero",
        "checks-passed",
    ],
)
def test_the_formula(inputs: TrustInputs, combined: float, outcome: GateOutcome) -> None:
    decision = decide(inputs)
    assert decision.combined_trust == pytest.approx(combined)
    assert decision.outcome is outcome
    assert decision.operations[-1].name == "gate"


def test_operations_are_listed_in_the_order_of_the_specification() -> None:
    decision = decide(
        TrustInputs(
            0.9,
            0.75,
            "escalate",
            verifier=VerifierSignal(0.8, "minimum"),
            calibration=CalibrationSignal(True, 0.7, "proceed"),
            grounding=GroundingSignal(0.6, enforce=True),
            checks_passed=True,
        )
    )
    assert [op.name for op in decision.operations] == [
        "self_report",
        "verifier_minimum",
        "calibration",
        "grounding_cap",
        "deterministic_checks",
        "gate",
    ]
    assert [(op.input, op.output) for op in decision.operations[1:4]] == [(0.9, 0.8), (0.8, 0.7), (0.7, 0.6)]
    assert decision.enforced and decision.policy == "trust_vector"


@given(s=scores, threshold=scores, action=actions)
def test_no_trust_blocks_is_exactly_s_versus_threshold(s: float, threshold: float, action: str) -> None:
    decision = decide(TrustInputs(s, threshold, action))  # type: ignore[arg-type]
    assert decision.combined_trust == s
    assert decision.proceeds == (s >= threshold or action == "proceed")
    assert decision.policy == "legacy_confidence" and not decision.enforced


@given(
    s=scores,
    v=maybe_scores,
    strategy=st.sampled_from(["minimum", "veto"]),
    floor=scores,
    g=maybe_scores,
    enforce=st.booleans(),
    checks=st.none() | st.booleans(),
    threshold=scores,
    action=actions,
)
def test_properties_of_every_decision(
    s: float,
    v: float | None,
    strategy: str,
    floor: float,
    g: float | None,
    enforce: bool,
    checks: bool | None,
    threshold: float,
    action: str,
) -> None:
    decision = decide(
        TrustInputs(
            s,
            threshold,
            action,  # type: ignore[arg-type]
            verifier=VerifierSignal(v, strategy, floor),  # type: ignore[arg-type]
            grounding=GroundingSignal(g, enforce),
            checks_passed=checks,
        )
    )
    values = [value for op in decision.operations for value in (op.input, op.output)]
    assert all(0.0 <= value <= 1.0 for value in values)
    assert decision.after_verifier <= s  # a verifier never raises trust
    assert decision.combined_trust <= decision.after_verifier  # without calibration nothing raises it
    if enforce and g is not None:
        assert decision.combined_trust <= g
    if g is None or not enforce:
        assert "grounding_cap" not in [op.name for op in decision.operations]  # a null or shadow G never caps
    if checks is False:
        assert decision.combined_trust == 0.0
    assert decision.proceeds == (decision.combined_trust >= threshold or action == "proceed")


def test_nan_counts_as_no_trust() -> None:
    assert decide(TrustInputs(float("nan"), 0.5, "escalate")).combined_trust == 0.0
