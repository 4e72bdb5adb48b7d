"""The one trust decision: table tests of §7 and properties that must always hold."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vectorstep.trust.decide import (
    CalibrationSignal,
    GateOutcome,
    GroundingSignal,
    Operation,
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


S = Operation("self_report", 0.9, 0.9)


@pytest.mark.parametrize(
    ("inputs", "expected", "enforced"),
    [
        (
            TrustInputs(0.6, 0.75, "escalate", calibration=CalibrationSignal(True, 0.85, "proceed")),
            [
                Operation("self_report", 0.6, 0.6),
                Operation("calibration", 0.6, 0.85, "replaced by the bin's measured accuracy"),
                Operation("gate", 0.85, 0.85, "passed (threshold 0.75)"),
            ],
            True,
        ),
        (
            # A bin with a figure but too few marks is not trusted for it.
            TrustInputs(0.9, 0.75, "escalate", calibration=CalibrationSignal(False, 0.95, "escalate")),
            [
                S,
                Operation("calibration", 0.9, 0.0, "bin not validated; on_uncalibrated: escalate"),
                Operation("gate", 0.0, 0.0, "escalated (threshold 0.75)"),
            ],
            True,
        ),
        (
            TrustInputs(0.9, 0.75, "abort", calibration=CalibrationSignal(False, 0.95, "proceed")),
            [
                S,
                Operation("calibration", 0.9, 0.9, "bin not validated; on_uncalibrated: proceed"),
                Operation("gate", 0.9, 0.9, "passed (threshold 0.75)"),
            ],
            True,
        ),
        (
            TrustInputs(0.9, 0.75, "abort", calibration=CalibrationSignal(True, float("nan"), "proceed")),
            [
                S,
                Operation("calibration", 0.9, 0.0, "replaced by the bin's measured accuracy"),
                Operation("gate", 0.0, 0.0, "aborted (threshold 0.75)"),
            ],
            True,
        ),
        (
            TrustInputs(1.4, 0.75, "escalate", verifier=VerifierSignal(0.6, "minimum")),
            [
                Operation("self_report", 1.4, 1.0),
                Operation("verifier_minimum", 1.0, 0.6, "min(S, V=0.6)"),
                Operation("gate", 0.6, 0.6, "escalated (threshold 0.75)"),
            ],
            False,
        ),
        (
            TrustInputs(0.9, 0.75, "escalate", verifier=VerifierSignal(0.5, "veto", 0.6)),
            [
                S,
                Operation("verifier_veto", 0.9, 0.5, "V=0.5 is below the veto floor 0.6: min(S, V)"),
                Operation("gate", 0.5, 0.5, "escalated (threshold 0.75)"),
            ],
            False,
        ),
        (
            TrustInputs(0.9, 0.75, "proceed", verifier=VerifierSignal(0.6, "veto", 0.6)),
            [
                S,
                Operation("verifier_veto", 0.9, 0.9, "V=0.6 is not below the veto floor 0.6: S kept"),
                Operation("gate", 0.9, 0.9, "passed (threshold 0.75)"),
            ],
            False,
        ),
        (
            TrustInputs(0.9, 0.75, "escalate", verifier=VerifierSignal(None, "veto")),
            [
                S,
                Operation("verifier_failed", 0.9, 0.9, "the verifier gave no score; S kept"),
                Operation("gate", 0.9, 0.9, "passed (threshold 0.75)"),
            ],
            False,
        ),
        (
            TrustInputs(0.9, 0.75, "proceed", grounding=GroundingSignal(-0.5, enforce=True)),
            [
                S,
                Operation("grounding_cap", 0.9, 0.0, "min(trust, G)"),
                Operation("gate", 0.0, 0.0, "proceeded (threshold 0.75)"),
            ],
            True,
        ),
        (
            TrustInputs(0.9, 0.75, "escalate", grounding=GroundingSignal(None, enforce=True)),
            [S, Operation("gate", 0.9, 0.9, "passed (threshold 0.75)")],
            False,
        ),
        (
            TrustInputs(0.9, 0.75, "escalate", grounding=GroundingSignal(0.2, enforce=False)),
            [S, Operation("gate", 0.9, 0.9, "passed (threshold 0.75)")],
            False,
        ),
        (
            TrustInputs(0.9, 0.75, "escalate", checks_passed=True),
            [
                S,
                Operation("deterministic_checks", 0.9, 0.9, "all checks passed"),
                Operation("gate", 0.9, 0.9, "passed (threshold 0.75)"),
            ],
            True,
        ),
        (
            TrustInputs(0.9, 0.5, "abort", checks_passed=False),
            [
                S,
                Operation("deterministic_checks", 0.9, 0.0, "a deterministic check failed"),
                Operation("gate", 0.0, 0.0, "aborted (threshold 0.5)"),
            ],
            True,
        ),
    ],
    ids=[
        "calibrated",
        "unvalidated-bin-escalates",
        "unvalidated-bin-proceeds",
        "nan-accuracy",
        "verifier-minimum",
        "veto-below-floor",
        "veto-at-floor",
        "verifier-failed",
        "grounding-cap",
        "grounding-null",
        "grounding-shadow",
        "checks-passed",
        "check-failed",
    ],
)
def test_the_derivation_says_what_each_operation_did(
    inputs: TrustInputs, expected: list[Operation], enforced: bool
) -> None:
    """The trust report and the UI show these operations as they are: each input, output and why."""
    decision = decide(inputs)
    assert list(decision.operations) == expected
    assert decision.self_report == expected[0].output
    by_verifier = [op.output for op in expected if op.name.startswith("verifier")]
    assert decision.after_verifier == (by_verifier or [expected[0].output])[0]  # before calibration
    assert decision.combined_trust == expected[-1].output
    assert decision.enforced is enforced
    assert decision.policy == "trust_vector"
