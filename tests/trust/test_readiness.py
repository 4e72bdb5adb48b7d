"""Promotion readiness verdicts per tier, step and pipeline: tables of cases, and the properties that must hold."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vectorstep.domain.readiness import CurrentConfig, Execution, LabelSource
from vectorstep.spec.readiness import AccuracyTierSpec, CalibrationTierSpec, ConfidenceTierSpec, OperationalTierSpec
from vectorstep.spec.readiness_subjects import ReadinessSubject, Tiers
from vectorstep.trust import readiness_tiers as tiers
from vectorstep.trust.readiness import RANK, combined, judge_pipeline, judge_step
from vectorstep.trust.readiness_tiers import Verdict, compared

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
CURRENT = CurrentConfig("p1", "v1")


def execution(
    number: int = 0,
    status: str = "completed",
    *,
    trust: float | None = 0.9,
    label: float | None = None,
    source: LabelSource | None = None,
    days_ago: float = 0.0,
    prompt: str = "p1",
    version: str | None = "v1",
) -> Execution:
    if label is not None and source is None:
        source = "step_mark"
    return Execution(
        run_id=f"r{number}",
        status=status,
        finished_at=NOW - timedelta(days=days_ago, minutes=number),
        trust=trust,
        predicted=trust,
        label=label,
        label_source=source,
        prompt_hash=prompt,
        agent_version=version,
    )


def many(count: int, **fields: Any) -> list[Execution]:
    return [execution(number, **fields) for number in range(count)]


OPERATIONAL = OperationalTierSpec(min_runs=5)


@pytest.mark.parametrize(
    ("tier", "executions", "verdict", "reason"),
    [
        (OPERATIONAL, [], "no_data", "no runs yet"),
        (OPERATIONAL, many(3), "building", "3 of 5 runs, all ended completed or stopped"),
        (OPERATIONAL, many(5), "ready", "the last 5 runs all ended completed or stopped"),
        (OPERATIONAL, [execution(0, "failed"), *many(2)], "not_ready", "1 of the last 3 runs ended other than"),
        # A failure older than the last `min_runs` runs no longer counts.
        (OPERATIONAL, [*many(5), execution(9, "failed")], "ready", "the last 5 runs"),
        (
            OPERATIONAL,
            [execution(0, "escalated"), execution(1, "aborted"), execution(2, "escalated"), *many(2)],
            "not_ready",
            "3 of the last 5 runs ended other than completed or stopped (aborted ×1, escalated ×2)",
        ),
        (
            OperationalTierSpec(min_runs=2, acceptable_statuses=["completed", "escalated"]),
            [execution(0, "escalated"), *many(1)],
            "ready",
            "completed or escalated",
        ),
        (
            OperationalTierSpec(min_runs=2, max_age_days=7),
            many(4, days_ago=8),
            "no_data",
            "no runs of the last 7 days yet (4 runs fall outside that)",
        ),
        (
            OperationalTierSpec(min_runs=2, max_age_days=7),
            [*many(1), execution(5, days_ago=9)],
            "building",
            "1 of 2 runs",
        ),
        (
            OperationalTierSpec(min_runs=2, require_current_config=True),
            many(3, prompt="old"),
            "no_data",
            "no runs with the current prompt and agent version yet",
        ),
        (OperationalTierSpec(min_runs=2), many(3, prompt="old"), "ready", "the last 2 runs"),
    ],
    ids=[
        "nothing",
        "too-few",
        "enough",
        "a-failure",
        "failure-aged-out",
        "lists-what-ended-badly",
        "laxer-statuses",
        "all-too-old",
        "window-by-age",
        "none-current",
        "any-config-by-default",
    ],
)
def test_operational(tier: OperationalTierSpec, executions: list[Execution], verdict: Verdict, reason: str) -> None:
    current = [e for e in executions if CURRENT.matches(e)]
    found = tiers.operational(tier, executions, current, NOW)
    assert (found.verdict, reason in found.reason) == (verdict, True), found.reason


@pytest.mark.parametrize(
    ("executions", "verdict", "reason"),
    [
        ([], "no_data", "no runs with the current prompt and agent version yet"),
        (
            many(2, trust=None),
            "no_data",
            "none of the 2 runs with the current prompt and agent version has a trust figure",
        ),
        (
            [execution(trust=None)],
            "no_data",
            "its one run with the current prompt and agent version has no trust figure",
        ),
        (
            many(3),
            "building",
            "3 of 5 runs with the current prompt and agent version (mean combined trust so far 0.90)",
        ),
        (many(5), "ready", "mean combined trust 0.90 ≥ 0.80 over the last 5 runs"),
        (many(5, trust=0.6), "not_ready", "mean combined trust 0.60 < 0.80 over the last 5 runs"),
        (many(5, trust=0.799), "not_ready", "mean combined trust 0.799 < 0.800"),  # more places, never "0.80 < 0.80"
        (many(5, trust=0.8), "ready", "0.80 ≥ 0.80"),  # exactly the bound meets it
    ],
    ids=["nothing", "no-trust-figures", "one-without-trust", "too-few", "enough", "too-low", "just-below", "exactly"],
)
def test_confidence(executions: list[Execution], verdict: Verdict, reason: str) -> None:
    found = tiers.confidence(ConfidenceTierSpec(min_runs=5), executions, 0.8)
    assert found.verdict == verdict and reason in found.reason, found.reason


ACCURACY = AccuracyTierSpec(min_accuracy=0.8, min_marked=4, min_human_marked=2)


@pytest.mark.parametrize(
    ("executions", "verdict", "reason"),
    [
        (many(3), "no_data", "none of the 3 runs with the current prompt and agent version is marked"),
        (many(3, label=1.0), "building", "3 of 4 marked (accuracy so far 1.00)"),
        (many(4, label=0.0, source="failed_check"), "building", "0 of 2 marked by a person"),
        (many(4, label=1.0, source="run_mark"), "ready", "accuracy 1.00 ≥ 0.80 over 4 marked"),
        ([*many(3, label=1.0), execution(7, label=0.0)], "not_ready", "accuracy 0.75 < 0.80 over 4 marked"),
        ([*many(4, label=1.0), execution(7, label=0.5)], "ready", "accuracy 0.90 ≥ 0.80 over 5 marked"),
    ],
    ids=[
        "none-marked",
        "too-few-marked",
        "only-checks-failed",
        "run-marks-are-people",
        "too-inaccurate",
        "partial-is-half",
    ],
)
def test_accuracy(executions: list[Execution], verdict: Verdict, reason: str) -> None:
    found = tiers.accuracy(ACCURACY, executions)
    assert found.verdict == verdict and reason in found.reason, found.reason


def binned(predicted: float, labels: list[float]) -> list[Execution]:
    return [execution(number, trust=predicted, label=label) for number, label in enumerate(labels)]


CALIBRATION = CalibrationTierSpec(n_min=4, max_divergence=0.15)


@pytest.mark.parametrize(
    ("executions", "verdict", "reason"),
    [
        (many(3), "no_data", "is marked"),
        (
            binned(0.9, [1.0, 1.0]) + binned(0.55, [1.0]),
            "building",
            "the fullest trust bin, 0.90–1.00, holds 2 of 4 marked runs",
        ),
        (
            binned(0.9, [1.0, 1.0, 1.0, 0.5]),
            "ready",
            "1 trust bin with 4+ marks, within 0.15 of the trust predicted (largest gap 0.03",
        ),
        (
            binned(0.9, [1.0, 0.0, 1.0, 0.0]),
            "not_ready",
            "trust bin 0.90–1.00 says 0.90 but scores 0.50 over 4 marked: off by 0.40 > 0.15",
        ),
        # An unvalidated bin, however far off, does not decide.
        (binned(0.9, [1.0] * 4) + binned(0.35, [1.0, 1.0]), "ready", "largest gap 0.10"),
    ],
    ids=["none-marked", "bins-too-small", "calibrated", "over-confident", "small-bins-ignored"],
)
def test_calibration(executions: list[Execution], verdict: Verdict, reason: str) -> None:
    found = tiers.calibration(CALIBRATION, executions)
    assert found.verdict == verdict and reason in found.reason, found.reason


def subject(**written: Any) -> ReadinessSubject:
    origins = dict.fromkeys(written, "pipeline")
    return ReadinessSubject("s", "gateway", "a", "", 0.75, False, Tiers(**written, origins=origins))  # type: ignore[arg-type]


def test_a_step_judges_only_current_executions_for_answer_quality() -> None:
    old = many(5, prompt="old", label=1.0)
    found = judge_step(subject(operational=OPERATIONAL, accuracy=ACCURACY), old, CURRENT, NOW)
    assert [(tier.tier, tier.verdict) for tier in found.tiers] == [("operational", "ready"), ("accuracy", "no_data")]
    assert found.verdict == "no_data" and found.reason == "accuracy no data"
    assert found.tiers[1].origin == "pipeline" and "At least 4 runs" in found.tiers[1].rule


def test_an_agent_version_only_its_gateway_knows_is_taken_from_the_newest_run_with_the_prompt() -> None:
    executions = [execution(0, version="v2", label=1.0), *many(4, version="v1", label=1.0)]
    unknown = CurrentConfig("p1", None, "unknown")
    found = judge_step(subject(accuracy=ACCURACY), executions, unknown, NOW)
    assert found.current == CurrentConfig("p1", "v2", "recorded")
    assert found.tiers[0].reason.startswith("1 of 4 marked")


@pytest.mark.parametrize(
    ("verdicts", "expected"),
    [
        ([], "not_configured"),
        (["not_configured"], "not_configured"),
        (["ready", "not_configured"], "ready"),
        (["ready", "no_data"], "no_data"),
        (["no_data", "building"], "building"),
        (["building", "not_ready", "ready"], "not_ready"),
    ],
    ids=[
        "nothing",
        "only-unconfigured",
        "unconfigured-left-out",
        "no-data-over-ready",
        "building-over-no-data",
        "not-ready-wins",
    ],
)
def test_verdicts_combine_worst_first(verdicts: list[Verdict], expected: Verdict) -> None:
    assert combined(verdicts) == expected


def test_the_pipeline_names_the_steps_holding_it_back() -> None:
    ready = judge_step(subject(operational=OPERATIONAL), many(5), CURRENT, NOW)
    held = judge_step(subject(operational=OPERATIONAL, accuracy=ACCURACY), many(5, label=0.0), CURRENT, NOW)
    held = replace(held, step="triage")
    unconfigured = judge_step(
        ReadinessSubject("tell", "notify", None, "", 0.75, False, Tiers(), "opted out with `readiness: null`"),
        [],
        CurrentConfig("p1", None),
        NOW,
    )
    report = judge_pipeline("p", "testing", [ready, held, unconfigured], NOW)
    assert report.verdict == "not_ready"
    assert report.reason == "not ready: triage (accuracy); 1 of 2 judged steps ready; 1 step without tiers left out"
    body = report.as_json()
    assert body["ready"] is False and body["steps"][2]["verdict"] == "not_configured"
    assert body["evidence"] == {
        "stage": "testing",
        "excluded_sources": ["replay"],
        "teams": None,
        "per_step_limit": 1000,
    }
    assert judge_pipeline("p", "testing", [ready], NOW).reason == "all 1 judged steps are ready"
    assert judge_pipeline("p", "testing", [unconfigured], NOW).verdict == "not_configured"


VERDICTS = st.sampled_from(["ready", "building", "not_ready", "no_data", "not_configured"])


@given(st.lists(VERDICTS, max_size=8), st.randoms())
def test_combining_ignores_order_and_is_ready_only_when_every_judged_verdict_is(
    verdicts: list[Verdict], shuffle: Any
) -> None:
    mixed = list(verdicts)
    shuffle.shuffle(mixed)
    result = combined(verdicts)
    assert combined(mixed) == result
    judged = [verdict for verdict in verdicts if verdict != "not_configured"]
    assert (result == "ready") == (bool(judged) and all(verdict == "ready" for verdict in judged))
    if judged:
        assert all(RANK[result] >= RANK[verdict] for verdict in judged)


LABELLED = st.lists(
    st.tuples(
        st.sampled_from(["completed", "stopped", "escalated", "failed"]),
        st.floats(0, 1),
        st.sampled_from([None, 0.0, 0.5, 1.0]),
    ),
    max_size=40,
)


@given(LABELLED, st.integers(1, 30), st.floats(0, 1))
def test_ready_is_never_claimed_on_too_little_or_too_weak_evidence(
    rows: list[tuple[str, float, float | None]], needed: int, bound: float
) -> None:
    executions = [execution(n, status, trust=trust, label=label) for n, (status, trust, label) in enumerate(rows)]
    operational = tiers.operational(OperationalTierSpec(min_runs=needed), executions, executions, NOW)
    if operational.verdict == "ready":
        assert len(executions) >= needed and all(e.status in ("completed", "stopped") for e in executions[:needed])
    accuracy = tiers.accuracy(AccuracyTierSpec(min_accuracy=bound, min_marked=needed), executions)
    labels = [e.label for e in executions if e.label is not None]
    if accuracy.verdict == "ready":
        assert len(labels) >= needed and sum(labels) / len(labels) >= bound - 1e-9
    if accuracy.verdict == "not_ready":
        assert len(labels) >= needed and sum(labels) / len(labels) < bound
    calibration = tiers.calibration(CalibrationTierSpec(n_min=needed), executions)
    assert calibration.verdict != "ready" or len(labels) >= needed


@given(st.floats(0, 1), st.floats(0, 1))
def test_figures_compared_are_never_shown_equal_when_they_differ(value: float, bound: float) -> None:
    shown, limit = compared(value, bound)
    if abs(value - bound) >= 1.5e-4:
        assert shown != limit
