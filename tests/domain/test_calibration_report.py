"""A bucket's calibration measured: every figure below was worked out by hand, not by the code under test."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from vectorstep.domain.calibration_report import LabelledStep, auroc, brier_score, bucket_report, wilson_interval

# An agent that says 0.9 and is right 12 times in 20; its grounding score (G) was 1.0 on the right
# answers and 0.25 on the wrong ones, so G tells them apart and its self-report (S) does not.
OVERSOLD = [LabelledStep(0.9, 1.0, self_reported=0.9, grounding=1.0, combined_trust=0.9)] * 12 + [
    LabelledStep(0.9, 0.0, self_reported=0.9, grounding=0.25, combined_trust=0.25)
] * 8


def test_a_bucket_that_oversells_itself() -> None:
    report = bucket_report(OVERSOLD, bin_width=0.1, n_min=20, estimator="lower_bound")
    (row,) = report.bins
    assert (row.low, row.high, row.n, row.predicted, row.accuracy, row.validated) == (0.9, 1.0, 20, 0.9, 0.6, True)
    # Two-sided 90% Wilson interval of 12/20, z = 1.6449: (0.6676 ∓ 0.1925) / 1.1353.
    assert (row.accuracy_low, row.accuracy_high) == pytest.approx((0.418556, 0.757613), abs=1e-6)
    assert row.estimate == pytest.approx(0.457243, abs=1e-6)  # the one-sided lower bound the gate uses
    assert report.ece.value == pytest.approx(0.3)  # |0.9 − 0.6|, one bin holding everything
    assert report.brier.value == pytest.approx(0.33)  # (12 × 0.1² + 8 × 0.9²) / 20
    assert report.ece.low is not None and report.ece.low <= 0.3 <= report.ece.high  # type: ignore[operator]
    signals = {signal.signal: signal for signal in report.signals}
    assert (signals["self_reported"].auroc, signals["self_reported"].brier) == (
        0.5,
        0.33,
    )  # all ties: no better than chance
    assert (signals["grounding"].auroc, signals["grounding"].brier) == (1.0, 0.025)  # 8 × 0.25² / 20
    assert (signals["combined_trust"].auroc, signals["combined_trust"].brier) == (1.0, 0.031)  # (12×0.01 + 8×0.0625)/20
    assert signals["verifier"].n == 0 and signals["verifier"].auroc is None  # no verifier ran
    assert report.recommendations == (
        "says 0.9, right 60% of 20 times: trust it less (enforce calibration or raise the threshold) or fix the prompt",
    )


def test_small_or_honest_bins_earn_no_recommendation_and_intervals_repeat() -> None:
    honest = [LabelledStep(0.75, 1.0)] * 3 + [LabelledStep(0.75, 0.0)]
    report = bucket_report(honest, bin_width=0.1, n_min=20, estimator="mean")
    assert report.bins[0].validated is False and report.recommendations == ()
    assert report.ece == bucket_report(honest, bin_width=0.1, n_min=20, estimator="mean").ece  # seeded
    empty = bucket_report([], bin_width=0.1, n_min=20, estimator="mean")
    assert empty.bins == () and empty.ece.value is None and empty.brier.value is None


def test_auroc_counts_ties_as_half_and_leaves_partial_marks_out() -> None:
    assert auroc([(0.9, 1.0), (0.8, 1.0), (0.7, 0.0), (0.9, 0.0), (0.5, 0.5)]) == pytest.approx(0.625)
    assert auroc([(0.9, 1.0), (0.8, 1.0)]) is None  # no incorrect step: nothing to separate
    assert brier_score([(1.0, 1.0), (0.5, 0.0)]) == pytest.approx(0.125)


@given(
    correct=st.integers(0, 60),
    wrong=st.integers(0, 60),
    confidence=st.sampled_from([0.8, 0.9, 0.95]),
)
def test_the_wilson_interval_holds_the_observed_accuracy(correct: int, wrong: int, confidence: float) -> None:
    n = correct + wrong
    if n == 0:
        assert wilson_interval(0.0, 0, confidence) == (0.0, 1.0)
        return
    low, high = wilson_interval(correct / n, n, confidence)
    assert 0.0 <= low <= correct / n + 1e-9 and correct / n - 1e-9 <= high <= 1.0
