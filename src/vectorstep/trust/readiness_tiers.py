"""The four readiness tiers, each judged from a step's executions (newest first), and each rule in words.

A tier is `not_ready` when the evidence it has already says no, `building` when nothing says no yet but
there is not enough of it (the reason says what is missing), `no_data` when there is nothing to judge,
and `ready` otherwise. Confidence, accuracy and calibration judge executions with the step's current
prompt template and agent version only: an edited prompt is a different step, whose record starts
afresh. Operational does too when `require_current_config` says so.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from vectorstep.domain.calibration import Bin
from vectorstep.domain.readiness import Execution
from vectorstep.spec.readiness import AccuracyTierSpec, CalibrationTierSpec, ConfidenceTierSpec, OperationalTierSpec

Verdict = Literal["ready", "building", "not_ready", "no_data", "not_configured"]
EPSILON = 1e-9  # a mean of exactly the bound meets it, whatever the float sum's last digit says
CURRENT = "with the current prompt and agent version"


@dataclass(frozen=True)
class Finding:
    verdict: Verdict
    reason: str
    figures: Mapping[str, Any] = field(default_factory=dict)


def operational(
    tier: OperationalTierSpec, executions: Sequence[Execution], current: Sequence[Execution], now: datetime
) -> Finding:
    pool = list(current if tier.require_current_config else executions)
    if tier.max_age_days is not None:
        since = now - timedelta(days=tier.max_age_days)
        pool = [execution for execution in pool if execution.finished_at >= since]
    if not pool:
        others = f" ({len(executions)} runs fall outside that)" if executions else ""
        return Finding(
            "no_data", f"no runs{_operational_scope(tier)} yet{others}", {"runs": 0, "needed": tier.min_runs}
        )
    window = pool[: tier.min_runs]
    ended = Counter(execution.status for execution in window)
    bad = {status: count for status, count in ended.items() if status not in tier.acceptable_statuses}
    figures = {"runs": len(window), "needed": tier.min_runs, "statuses": dict(ended)}
    accepted = _either(tier.acceptable_statuses)
    if bad:
        listed = ", ".join(f"{status} ×{count}" for status, count in sorted(bad.items()))
        reason = f"{sum(bad.values())} of the last {len(window)} runs ended other than {accepted} ({listed})"
        return Finding("not_ready", reason, figures)
    if len(window) < tier.min_runs:
        return Finding("building", f"{len(window)} of {tier.min_runs} runs, all ended {accepted}", figures)
    return Finding("ready", f"the last {tier.min_runs} runs all ended {accepted}", figures)


def confidence(tier: ConfidenceTierSpec, current: Sequence[Execution], bound: float) -> Finding:
    trusts = [execution.trust for execution in current if execution.trust is not None]
    if not trusts:
        return Finding(
            "no_data",
            _nothing(current, "has a trust figure", "has no trust figure"),
            {"runs": 0, "needed": tier.min_runs},
        )
    window = trusts[: tier.min_runs]
    mean = math.fsum(window) / len(window)
    figures = {"runs": len(window), "needed": tier.min_runs, "mean_trust": round(mean, 4), "min_confidence": bound}
    if len(window) < tier.min_runs:
        reason = f"{len(window)} of {tier.min_runs} runs {CURRENT} (mean combined trust so far {mean:.2f})"
        return Finding("building", reason, figures)
    shown, limit = compared(mean, bound)
    if mean + EPSILON < bound:
        return Finding("not_ready", f"mean combined trust {shown} < {limit} over the last {len(window)} runs", figures)
    return Finding("ready", f"mean combined trust {shown} ≥ {limit} over the last {len(window)} runs", figures)


def accuracy(tier: AccuracyTierSpec, current: Sequence[Execution]) -> Finding:
    labelled = [execution for execution in current if execution.label is not None]
    if not labelled:
        return Finding(
            "no_data", _nothing(current, "is marked", "is not marked"), {"marked": 0, "needed": tier.min_marked}
        )
    score = math.fsum(execution.label or 0.0 for execution in labelled) / len(labelled)
    by_people = sum(execution.marked_by_a_person for execution in labelled)
    sources = Counter(execution.label_source for execution in labelled)
    figures = {
        "marked": len(labelled),
        "needed": tier.min_marked,
        "marked_by_people": by_people,
        "needed_by_people": tier.min_human_marked,
        "accuracy": round(score, 4),
        "label_sources": {str(source): count for source, count in sorted(sources.items(), key=str)},
    }
    missing = []
    if len(labelled) < tier.min_marked:
        missing.append(f"{len(labelled)} of {tier.min_marked} marked")
    if by_people < tier.min_human_marked:
        missing.append(f"{by_people} of {tier.min_human_marked} marked by a person")
    if missing:
        return Finding("building", f"{'; '.join(missing)} (accuracy so far {score:.2f})", figures)
    shown, limit = compared(score, tier.min_accuracy)
    if score + EPSILON < tier.min_accuracy:
        return Finding("not_ready", f"accuracy {shown} < {limit} over {len(labelled)} marked", figures)
    return Finding("ready", f"accuracy {shown} ≥ {limit} over {len(labelled)} marked", figures)


@dataclass(frozen=True)
class _BinFigures:
    bin: Bin
    n: int
    predicted: float
    score: float

    @property
    def gap(self) -> float:
        return abs(self.score - self.predicted)

    @property
    def span(self) -> str:
        return f"{self.bin.low:.2f}–{self.bin.high:.2f}"


def calibration(tier: CalibrationTierSpec, current: Sequence[Execution]) -> Finding:
    rows = _bins(current, tier.bin_width)
    if not rows:
        return Finding("no_data", _nothing(current, "is marked", "is not marked"), {"bins": []})
    figures = {"bins": [_bin_json(row, tier.n_min) for row in rows]}
    validated = [row for row in rows if row.n >= tier.n_min]
    if not validated:
        fullest = max(rows, key=lambda row: row.n)
        reason = f"the fullest trust bin, {fullest.span}, holds {fullest.n} of {tier.n_min} marked runs"
        return Finding("building", reason, figures)
    worst = max(validated, key=lambda row: row.gap)
    if worst.gap > tier.max_divergence + EPSILON:
        reason = (
            f"trust bin {worst.span} says {worst.predicted:.2f} but scores {worst.score:.2f} over {worst.n} marked: "
            f"off by {worst.gap:.2f} > {tier.max_divergence:.2f}"
        )
        return Finding("not_ready", reason, figures)
    count = f"{len(validated)} trust bin{'s' if len(validated) > 1 else ''}"
    reason = (
        f"{count} with {tier.n_min}+ marks, within {tier.max_divergence:.2f} of the trust predicted "
        f"(largest gap {worst.gap:.2f}, in {worst.span})"
    )
    return Finding("ready", reason, figures)


def _bins(current: Sequence[Execution], width: float) -> list[_BinFigures]:
    grouped: dict[Bin, list[tuple[float, float]]] = {}
    for execution in current:
        if execution.label is not None and execution.predicted is not None:
            key = Bin.of(execution.predicted, width)
            grouped.setdefault(key, []).append((execution.predicted, execution.label))
    return [
        _BinFigures(
            key,
            len(pairs),
            math.fsum(predicted for predicted, _ in pairs) / len(pairs),
            math.fsum(label for _, label in pairs) / len(pairs),
        )
        for key, pairs in sorted(grouped.items(), key=lambda item: item[0].low)
    ]


def _bin_json(row: _BinFigures, n_min: int) -> dict[str, Any]:
    return {
        "low": row.bin.low,
        "high": row.bin.high,
        "n": row.n,
        "predicted": round(row.predicted, 4),
        "accuracy": round(row.score, 4),
        "validated": row.n >= n_min,
    }


def rule(tier: object, bound: float | None = None) -> str:
    """The tier's rule in plain words, with its configured numbers."""
    if isinstance(tier, OperationalTierSpec):
        return (
            f"The last {tier.min_runs} runs{_operational_scope(tier)} must all end {_either(tier.acceptable_statuses)}."
        )
    if isinstance(tier, ConfidenceTierSpec):
        return (
            f"Over the last {tier.min_runs} runs {CURRENT}, the mean combined trust must be at least "
            f"{bound if bound is not None else tier.min_confidence or 0.0:.2f}."
        )
    if isinstance(tier, AccuracyTierSpec):
        people = f", {tier.min_human_marked} of them by a person" if tier.min_human_marked else ""
        return (
            f"At least {tier.min_marked} runs {CURRENT} must be marked{people}, and their marks must average at "
            f"least {tier.min_accuracy:.2f} (correct 1, partial 0.5, incorrect 0; an unmarked step whose "
            "deterministic check failed counts as incorrect)."
        )
    if isinstance(tier, CalibrationTierSpec):
        return (
            f"Marked runs {CURRENT} are grouped by trust into bins {tier.bin_width:g} wide: some bin must hold "
            f"{tier.n_min} marks, and in every bin that does the marks must average within "
            f"{tier.max_divergence:.2f} of the trust the bin predicts."
        )
    raise TypeError(f"not a readiness tier: {tier!r}")


def _operational_scope(tier: OperationalTierSpec) -> str:
    age = f" of the last {tier.max_age_days} days" if tier.max_age_days is not None else ""
    config = f" {CURRENT}" if tier.require_current_config else ""
    return age + config


def _nothing(current: Sequence[Execution], none: str, one: str) -> str:
    """Why a tier has nothing to read: `none` and `one` finish "none of the N runs ..." and "its one run ..."."""
    if not current:
        return f"no runs {CURRENT} yet"
    if len(current) == 1:
        return f"its one run {CURRENT} {one}"
    return f"none of the {len(current)} runs {CURRENT} {none}"


def _either(statuses: Sequence[str]) -> str:
    names = list(dict.fromkeys(statuses))
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def compared(value: float, bound: float) -> tuple[str, str]:
    """Both figures to two places, or up to four when two would show different figures as equal."""
    places = 2
    while places < 4 and abs(value - bound) > EPSILON and f"{value:.{places}f}" == f"{bound:.{places}f}":
        places += 1
    return f"{value:.{places}f}", f"{bound:.{places}f}"
