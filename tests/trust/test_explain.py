"""The plain-language walkthrough and configuration summary, from stored reports only."""

from __future__ import annotations

from vectorstep.domain.signals import CallAttribution, Claim, GroundingOutcome, VerifierOutcome
from vectorstep.spec.steps import StepSpec
from vectorstep.trust.decide import GroundingSignal, TrustInputs, VerifierSignal, decide
from vectorstep.trust.explain import configuration_summary, narrative
from vectorstep.trust.report import build_report, step_configuration


def report_for(*, veto: bool, enforce: bool, g: float | None = 0.5) -> dict[str, object]:
    step = StepSpec.model_validate(
        {
            "name": "act",
            "executor": "gateway",
            "executor_config": {"agent": "planner"},
            "verifier": {
                "executor_config": {"agent": "critic"},
                "combination_strategy": "veto" if veto else "minimum",
                "veto_floor": 0.6,
                "trigger": {"always": True},
            },
            "grounding": {"agent": "judge", "enforce": enforce},
        }
    )
    verifier = VerifierOutcome(
        mode="critic",
        strategy=step.verifier.combination_strategy,
        veto_floor=0.6,
        triggered=True,  # type: ignore[union-attr]
        trigger_reason="trigger.always",
        score=0.65,
        call=CallAttribution(agent="critic", model="gpt-x"),
    )
    grounding = GroundingOutcome(
        computed=g is not None,
        reason="computed" if g is not None else "error",
        enforce=enforce,
        max_trace_chars=1500,
        evidence_windows=True,
        score=g,
        judge_reported_score=g,
        error=None if g is not None else "grounding call timed out after 120s",
        claims=(Claim("a", True, "x"), Claim("b", False, "missing")) if g is not None else (),
        call=CallAttribution(agent="judge", model="judge-model"),
    )
    decision = decide(
        TrustInputs(
            0.9,
            0.75,
            "escalate",
            verifier=VerifierSignal(0.65, verifier.strategy, 0.6),  # type: ignore[arg-type]
            grounding=GroundingSignal(g, enforce),
        )
    )
    return build_report(decision, step_configuration(step, 0.75, "escalate"), verifier=verifier, grounding=grounding)


def test_the_walkthrough_gives_every_number_in_order() -> None:
    lines = narrative(report_for(veto=False, enforce=True))
    assert lines == [
        "The agent reported a confidence of 0.90 (S).",
        "A critic verifier (critic, gpt-x) gave 0.65 (V). With the minimum strategy, trust became min(0.90, 0.65) = 0.65.",
        "A grounding judge (judge, judge-model) found 1 of 2 load-bearing claims supported: G = 0.50.",
        "The agent's self-report and its evidence diverge: |G − S| = 0.40 (flagged at 0.2 or more).",
        "Grounding is enforced: trust became min(0.65, G) = 0.50.",
        "Combined trust 0.50 is below the threshold 0.75: on_low_confidence is escalate, so the step escalated.",
    ]


def test_a_veto_that_changed_nothing_says_why_with_its_floor() -> None:
    lines = narrative(report_for(veto=True, enforce=False))
    assert lines[1] == (
        "A critic verifier (critic, gpt-x) gave 0.65 (V). That is not below the veto floor of 0.60: this step only "
        "lets a verifier lower trust when it scores below 60%, so S = 0.90 was kept."
    )
    assert "Grounding runs in shadow mode on this step: G was recorded and changed nothing." in lines
    assert lines[-1] == "Combined trust 0.90 is at or above the threshold 0.75: the step proceeded."


def test_an_older_report_is_told_honestly_not_guessed() -> None:
    report = report_for(veto=True, enforce=True)
    del report["signals"]["V_veto_floor"]  # type: ignore[index]
    del report["grounding"]["enforce"]  # type: ignore[index]
    del report["configuration"]
    lines = narrative(report)
    assert "not low enough to veto (the veto floor of this older run isn't recorded)" in lines[1]
    assert "Whether grounding was enforced isn't recorded for this older run." in lines
    assert configuration_summary(report) == ["The step's configuration isn't recorded for this older run."]


def test_a_failed_judge_is_no_cap() -> None:
    lines = narrative(report_for(veto=False, enforce=True, g=None))
    assert "Grounding did not compute (grounding call timed out after 120s), so G is empty and capped nothing." in lines


def test_configuration_summary_names_the_veto_floor() -> None:
    assert configuration_summary(report_for(veto=True, enforce=True)) == [
        "Threshold 0.75; below it: escalate.",
        "Verifier: critic (critic), veto with a veto floor of 0.60, runs always.",
        "Grounding: enforced (G caps trust), judge judge, 1500 characters per transcript entry.",
        "Deterministic checks: none.",
        "Calibration: none.",
    ]


def test_configuration_summary_gives_the_calibration_settings_the_step_ran_with() -> None:
    report = report_for(veto=True, enforce=True)
    report["configuration"]["calibration"] = {  # type: ignore[index]
        "enforce": True,
        "on_uncalibrated": "escalate",
        "n_min": 30,
        "bin_width": 0.2,
        "estimator": "lower_bound",
        "confidence": 0.9,
    }
    assert configuration_summary(report)[-1] == (
        "Calibration: enforced, bins of 0.2, validated at 30 marks, estimated by the Wilson lower bound; "
        "an uncalibrated bin means escalate."
    )
    report["configuration"]["calibration"] = {"enforce": False, "on_uncalibrated": "proceed"}  # type: ignore[index]
    assert configuration_summary(report)[-1] == "Calibration: not enforced; an uncalibrated bin means proceed."
