"""The calibration gate's arithmetic (SYSTEM.md §10), each figure worked out by hand.

The one-sided 90% Wilson lower bound uses z = 1.28155 (z² = 1.64237): for 18 of 20,
(0.9 + 1.64237/40 − 1.28155·√(0.09/20 + 1.64237/1600)) / (1 + 1.64237/20) = 0.845787 / 1.082118 = 0.78160.
"""

from __future__ import annotations

import pytest

from vectorstep.domain.calibration import (
    Bin,
    Bucket,
    Estimate,
    cell_of,
    cells_of,
    estimate,
    estimate_counts,
    label_of,
    wilson_lower_bound,
)


def test_the_lower_bound_keeps_a_small_bin_from_talking_itself_up() -> None:
    assert wilson_lower_bound(0.9, 20) == pytest.approx(0.78160, abs=1e-5)
    assert wilson_lower_bound(1.0, 20) == pytest.approx(0.924113, abs=1e-6)
    # A stricter confidence asks for more: z = 1.64485 at 95%.
    assert wilson_lower_bound(0.9, 20, confidence=0.95) == pytest.approx(0.738337, abs=1e-6)
    assert wilson_lower_bound(0.5, 4) == pytest.approx(0.230241, abs=1e-6)
    # One right answer: (1 + z²/2 − z²/2) / (1 + z²) = 1 / 2.642374.
    assert wilson_lower_bound(1.0, 1) == pytest.approx(0.378447, abs=1e-6)


def test_a_bin_never_right_estimates_zero_and_an_empty_one_is_not_a_number() -> None:
    # (0 + z²/20 − z·√(z²/400)) is zero up to rounding, which must not come out below zero.
    assert wilson_lower_bound(0.0, 10) == 0.0
    assert wilson_lower_bound(0.9, 0) == 0.0
    assert estimate_counts(0, 0.0, 5, "lower_bound") == Estimate(0, None, None, False)
    assert estimate([], 1, "mean") == Estimate(0, None, None, False)


def test_an_estimate_is_the_gate_s_figure_and_validated_only_with_enough_labels() -> None:
    assert estimate_counts(20, 18.0, 20, "lower_bound") == Estimate(20, 0.9, pytest.approx(0.78160, abs=1e-5), True)
    assert estimate_counts(20, 18.0, 21, "lower_bound").validated is False
    assert estimate_counts(20, 18.0, 20, "mean") == Estimate(20, 0.9, 0.9, True)
    eighteen_of_twenty = [1.0] * 18 + [0.0] * 2
    assert estimate(eighteen_of_twenty, 20, "lower_bound").estimate == pytest.approx(0.78160, abs=1e-5)
    assert estimate(eighteen_of_twenty, 20, "lower_bound", confidence=0.95).estimate == pytest.approx(
        0.738337, abs=1e-6
    )
    assert estimate_counts(20, 18.0, 20, "lower_bound", confidence=0.95).estimate == pytest.approx(0.738337, abs=1e-6)
    # Partial marks count half; figures are kept to six places.
    assert estimate([1.0, 0.5, 0.0], 3, "mean") == Estimate(3, 0.5, 0.5, True)
    assert estimate_counts(3, 1.0, 1, "mean") == Estimate(3, 0.333333, 0.333333, True)


def test_counters_that_drifted_out_of_range_never_claim_more_than_all_or_less_than_none() -> None:
    assert estimate_counts(2, 3.0, 1, "mean").estimate == 1.0
    assert estimate_counts(2, -1.0, 1, "mean").estimate == 0.0


@pytest.mark.parametrize(
    ("predicted", "width", "expected"),
    [
        (0.95, 0.1, Bin(0.9, 1.0)),
        (1.0, 0.1, Bin(0.9, 1.0)),  # 1.0 belongs to the last bin, not a bin of its own
        (0.3, 0.1, Bin(0.3, 0.4)),  # 0.3 / 0.1 is 2.9999999999999996 in floating point
        (0.0, 0.25, Bin(0.0, 0.25)),
        (-0.2, 0.25, Bin(0.0, 0.25)),
        (0.9, 0.3, Bin(0.9, 1.0)),  # a width that does not divide 1: the last bin is narrower
        (0.5, 1.0, Bin(0.0, 1.0)),
        (1.0, 1.0, Bin(0.0, 1.0)),  # one bin holds everything
        (0.5, 2.0, Bin(0.0, 1.0)),
    ],
)
def test_a_prediction_falls_in_its_bin(predicted: float, width: float, expected: Bin) -> None:
    assert Bin.of(predicted, width) == expected


@pytest.mark.parametrize(
    ("predicted", "cell"),
    [(0.0, 0), (0.29, 29), (0.5, 50), (0.999, 99), (1.0, 99), (-0.5, 0), (1.5, 99)],
)
def test_each_prediction_is_counted_in_one_hundredth_cell(predicted: float, cell: int) -> None:
    assert cell_of(predicted) == cell


def test_a_bin_is_the_sum_of_its_cells() -> None:
    assert cells_of(0.9, 1.0) == range(90, 100)
    assert cells_of(0.0, 0.05) == range(0, 5)
    assert cells_of(0.3, 0.35) == range(30, 35)
    assert cells_of(0.9, 1.2) == range(90, 100)
    every_cell = [cell for low in range(10) for cell in cells_of(low / 10, (low + 1) / 10)]
    assert every_cell == list(range(100))


def test_a_step_s_label_is_its_own_mark_then_a_failed_check_then_its_run_s_mark() -> None:
    assert label_of(0.5, checks_failed=True, of_run=1.0) == 0.5
    assert label_of(0.0, checks_failed=False, of_run=1.0) == 0.0  # "incorrect" is a mark, not a missing one
    assert label_of(None, checks_failed=True, of_run=1.0) == 0.0
    assert label_of(None, checks_failed=False, of_run=1.0) == 1.0
    assert label_of(None, checks_failed=False, of_run=None) is None


def _bucket(**changes: str | None) -> Bucket:
    fields: dict[str, str | None] = {
        "executor": "gateway",
        "agent": "triager",
        "model": "gpt-x",
        "provider": "openai",
        "prompt_hash": "abc",
        "agent_version": None,
    }
    fields.update(changes)
    step = fields.pop("step", None) or "triage"
    return Bucket.of(step, **fields)  # type: ignore[arg-type]


def test_a_bucket_key_is_stable_and_changes_with_every_field() -> None:
    bucket = _bucket()
    assert bucket.executor_agent == "gateway:triager" and _bucket(agent=None).executor_agent == "gateway:"
    # Counters are stored under this key: changing how it is made would orphan every bucket's history.
    assert bucket.key == "3f747a5c34923f41333d5a11210ca28778b2bbbc01901891ea5babc9577d7c96"
    variants = [
        _bucket(step="act"),
        _bucket(agent="other"),
        _bucket(model="gpt-y"),
        _bucket(provider="azure"),
        _bucket(prompt_hash="abd"),
        _bucket(agent_version="2"),
        _bucket(model="gpt-xopenai", provider=None),  # fields are separated, not just joined
    ]
    assert len({variant.key for variant in variants} | {bucket.key}) == len(variants) + 1
