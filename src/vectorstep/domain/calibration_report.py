"""A bucket's calibration, measured (SYSTEM.md §10): reliability per bin, ECE and Brier with bootstrap
intervals, and which signal (S, V, G or combined trust) actually tells good work from bad.

Pure: it reads a bucket's labelled steps and computes. Labels are 1 (correct), 0.5 (partial) and 0
(incorrect). AUROC asks how often a correct step scored above an incorrect one, so it reads the
correct and incorrect steps only; the Brier score reads every label. The bootstrap is seeded, so the
same history always gives the same intervals.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

from vectorstep.domain.calibration import Bin, Estimator, estimate

BOOTSTRAP_SAMPLES = 200
FAR_OFF = 0.15  # a validated bin whose accuracy is this far from what it predicts earns a recommendation
SIGNALS = ("self_reported", "verifier", "grounding", "combined_trust")


@dataclass(frozen=True)
class LabelledStep:
    predicted: float  # the trust after the verifier, the figure calibration bins by
    label: float
    self_reported: float | None = None  # S
    verifier: float | None = None  # V
    grounding: float | None = None  # G
    combined_trust: float | None = None


@dataclass(frozen=True)
class Interval:
    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class BinReport:
    low: float
    high: float
    n: int
    predicted: float  # the mean prediction of the steps in it
    accuracy: float
    accuracy_low: float  # the Wilson interval of the accuracy, two-sided at the configured confidence
    accuracy_high: float
    estimate: float | None
    validated: bool


@dataclass(frozen=True)
class SignalReport:
    signal: str
    n: int  # steps that carry the signal and a label
    auroc: float | None  # None when there is no correct or no incorrect step among them
    brier: float | None


@dataclass(frozen=True)
class BucketReport:
    n: int
    bins: tuple[BinReport, ...]
    ece: Interval
    brier: Interval
    signals: tuple[SignalReport, ...]
    recommendations: tuple[str, ...] = field(default=())


def bucket_report(
    steps: Sequence[LabelledStep],
    *,
    bin_width: float,
    n_min: int,
    estimator: Estimator,
    confidence: float = 0.9,
) -> BucketReport:
    bins = _bins(steps, bin_width, n_min, estimator, confidence)
    indexes = [Bin.of(step.predicted, bin_width).low for step in steps]
    predicted = [step.predicted for step in steps]
    labels = [step.label for step in steps]
    return BucketReport(
        n=len(steps),
        bins=bins,
        ece=_bootstrapped(len(steps), lambda chosen: _ece(chosen, indexes, predicted, labels)),
        brier=_bootstrapped(len(steps), lambda chosen: _brier(chosen, predicted, labels)),
        signals=tuple(_signal(steps, name) for name in SIGNALS),
        recommendations=tuple(advice for row in bins if (advice := _advice(row)) is not None),
    )


def _ece(chosen: Sequence[int], bins: Sequence[float], predicted: Sequence[float], labels: Sequence[float]) -> float:
    totals: dict[float, list[float]] = {}  # bin → [count, sum of predictions, sum of labels]
    for index in chosen:
        total = totals.setdefault(bins[index], [0.0, 0.0, 0.0])
        total[0] += 1
        total[1] += predicted[index]
        total[2] += labels[index]
    return sum(abs(total[1] - total[2]) for total in totals.values()) / len(chosen)


def _brier(chosen: Sequence[int], predicted: Sequence[float], labels: Sequence[float]) -> float:
    return sum((predicted[index] - labels[index]) ** 2 for index in chosen) / len(chosen)


def _bins(
    steps: Sequence[LabelledStep], width: float, n_min: int, estimator: Estimator, confidence: float
) -> tuple[BinReport, ...]:
    grouped: dict[Bin, list[LabelledStep]] = {}
    for step in steps:
        grouped.setdefault(Bin.of(step.predicted, width), []).append(step)
    rows = []
    for within in sorted(grouped, key=lambda found: found.low):
        members = grouped[within]
        labels = [step.label for step in members]
        found = estimate(labels, n_min, estimator, confidence)
        accuracy = sum(labels) / len(labels)
        low, high = wilson_interval(accuracy, len(labels), confidence)
        rows.append(
            BinReport(
                low=within.low,
                high=within.high,
                n=len(members),
                predicted=round(sum(step.predicted for step in members) / len(members), 6),
                accuracy=round(accuracy, 6),
                accuracy_low=round(low, 6),
                accuracy_high=round(high, 6),
                estimate=found.estimate,
                validated=found.validated,
            )
        )
    return tuple(rows)


def _advice(row: BinReport) -> str | None:
    if not row.validated or abs(row.accuracy - row.predicted) < FAR_OFF:
        return None
    said = f"says {row.predicted:.2g}, right {row.accuracy:.0%} of {row.n} times"
    if row.accuracy < row.predicted:
        return f"{said}: trust it less (enforce calibration or raise the threshold) or fix the prompt"
    return f"{said}: it undersells itself; its confidence could be trusted more"


def wilson_interval(proportion: float, n: int, confidence: float = 0.9) -> tuple[float, float]:
    """The two-sided Wilson score interval at `confidence`."""
    if n <= 0:
        return 0.0, 1.0
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    centre = proportion + z * z / (2 * n)
    spread = z * math.sqrt(proportion * (1 - proportion) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return max(0.0, (centre - spread) / scale), min(1.0, (centre + spread) / scale)


def brier_score(pairs: Sequence[tuple[float, float]]) -> float | None:
    """The mean squared distance between a prediction and its label (0 is perfect)."""
    if not pairs:
        return None
    return sum((predicted - label) ** 2 for predicted, label in pairs) / len(pairs)


def auroc(pairs: Sequence[tuple[float, float]]) -> float | None:
    """How often a correct step scored above an incorrect one (ties count half); partial ones are left out."""
    correct = [score for score, label in pairs if label == 1.0]
    incorrect = [score for score, label in pairs if label == 0.0]
    if not correct or not incorrect:
        return None
    ordered = sorted(incorrect)
    wins = 0.0
    for score in correct:
        below = _count_below(ordered, score)
        ties = _count_below(ordered, math.nextafter(score, math.inf)) - below
        wins += below + ties / 2
    return wins / (len(correct) * len(incorrect))


def _count_below(ordered: Sequence[float], value: float) -> int:
    low, high = 0, len(ordered)
    while low < high:
        middle = (low + high) // 2
        if ordered[middle] < value:
            low = middle + 1
        else:
            high = middle
    return low


def _signal(steps: Sequence[LabelledStep], name: str) -> SignalReport:
    pairs = [(score, step.label) for step in steps if (score := getattr(step, name)) is not None]
    found_auroc, found_brier = auroc(pairs), brier_score(pairs)
    return SignalReport(
        signal=name,
        n=len(pairs),
        auroc=None if found_auroc is None else round(found_auroc, 4),
        brier=None if found_brier is None else round(found_brier, 4),
    )


def _bootstrapped(n: int, measure: Callable[[Sequence[int]], float]) -> Interval:
    """The measure on the history, and the 5th and 95th percentiles of it over resamples of the history."""
    if n == 0:
        return Interval(None, None, None)
    value = measure(range(n))
    draw = random.Random(n)  # noqa: S311 - resampling, not secrecy: seeded so that reports repeat
    values = sorted(measure([draw.randrange(n) for _ in range(n)]) for _ in range(BOOTSTRAP_SAMPLES))
    low = values[int(0.05 * (len(values) - 1))]
    high = values[math.ceil(0.95 * (len(values) - 1))]
    return Interval(round(value, 4), round(low, 4), round(high, 4))
