"""Replay (shadow evaluation): a candidate model, agent or prompt measured on a step's marked history.

Each sample is a recorded production execution that a person (or automation) marked. The candidate
answers it again; its S, V, G and D come from the step's own trust blocks. Whether the candidate
was right is *inferred*: nobody marked its answer, so an answer that agrees with a recorded one on
its categorical fields inherits that answer's label, and one that departs from an answer marked
correct counts as incorrect. Anything else has no label and is left out of the accuracy (the
report says how many samples had one). Differences come with a paired bootstrap interval, from a
fixed seed so a report is reproducible.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

CandidateKind = Literal["model", "agent", "prompt"]
ReplayMode = Literal["rendered", "rerender"]

# Answer fields that are never compared: free text, the confidence itself, and what is not the answer.
_NOT_COMPARED = frozenset({"confidence", "reasoning", "summary", "raw_response", "artifacts", "evidence", "claims"})
# A string of this many words or fewer is taken as categorical (`rollback`, `sev2`, `checkout-api`).
_CATEGORICAL_WORDS = 3
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 20261203


@dataclass(frozen=True)
class Candidate:
    kind: CandidateKind
    value: str  # a model name, an agent name, or the prompt template's text
    label: str  # how it is named to people: the model, the agent, or the prompt file


@dataclass(frozen=True)
class RecordedExecution:
    """A marked production execution of the step: what the candidate answers again and is compared with."""

    run_id: str
    step: str
    label: float
    prompt: str | None
    output: Mapping[str, Any] | None
    self_reported: float | None
    grounding: float | None
    combined_trust: float | None
    deterministic_passed: bool | None
    cost: float | None
    duration_ms: float
    finished_at: str
    context: Mapping[str, Any] = field(default_factory=dict, repr=False)  # the run's normalised context
    outputs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict, repr=False)  # earlier steps'


@dataclass(frozen=True)
class CandidateResult:
    """What the candidate did on one sample; `error` set when it could not answer (or not be replayed)."""

    status: str  # the step status, `failed`, or `unreplayable`
    output: Mapping[str, Any] | None = None
    self_reported: float | None = None
    grounding: float | None = None
    combined_trust: float | None = None
    deterministic_passed: bool | None = None
    cost: float | None = None
    duration_ms: float | None = None
    error: str | None = None
    step_name: str | None = None  # the sample's step in the replay run


@dataclass(frozen=True)
class Sample:
    recorded: RecordedExecution
    candidate: CandidateResult

    @property
    def agreement(self) -> bool | None:
        if self.candidate.output is None:
            return None
        return agreement(self.recorded.output, self.candidate.output)

    @property
    def candidate_label(self) -> float | None:
        return inferred_label(self.recorded.label, self.agreement)


def _categorical(value: Any) -> bool:
    if isinstance(value, bool | int) and not isinstance(value, float):
        return True
    return isinstance(value, str) and 0 < len(value.split()) <= _CATEGORICAL_WORDS and len(value) <= 80


def _normalised(value: Any) -> Any:
    return value.strip().casefold() if isinstance(value, str) else value


def agreement(recorded: Mapping[str, Any] | None, candidate: Mapping[str, Any]) -> bool | None:
    """Do the two answers say the same on the recorded answer's categorical fields? None: nothing to compare."""
    if not recorded:
        return None
    compared = [
        name for name, value in recorded.items() if name not in _NOT_COMPARED and _categorical(value) and value != ""
    ]
    if not compared:
        return None
    return all(_normalised(recorded[name]) == _normalised(candidate.get(name)) for name in compared)


def inferred_label(recorded_label: float, agrees: bool | None) -> float | None:
    """Agreeing inherits the recorded label; departing from a correct answer is incorrect; else unknown."""
    if agrees is True:
        return recorded_label
    if agrees is False and recorded_label == 1.0:
        return 0.0
    return None


@dataclass(frozen=True)
class Comparison:
    """One measure for recorded and candidate, their difference and its 95% bootstrap interval."""

    recorded: float | None
    candidate: float | None
    difference: float | None
    interval: tuple[float, float] | None
    n: int  # samples both sides have a value for

    def as_json(self) -> dict[str, Any]:
        return {
            "recorded": self.recorded,
            "candidate": self.candidate,
            "difference": self.difference,
            "interval": list(self.interval) if self.interval else None,
            "n": self.n,
        }


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def bootstrap_interval(
    differences: Sequence[float], *, resamples: int = BOOTSTRAP_RESAMPLES
) -> tuple[float, float] | None:
    """The 95% percentile interval of the mean of paired differences; None under two pairs."""
    if len(differences) < 2:
        return None
    generator = random.Random(BOOTSTRAP_SEED)  # noqa: S311 - a statistic, reproducible on purpose
    size = len(differences)
    means = sorted(sum(generator.choices(differences, k=size)) / size for _ in range(resamples))
    low, high = means[math.floor(0.025 * (resamples - 1))], means[math.ceil(0.975 * (resamples - 1))]
    return round(low, 6), round(high, 6)


def compare(
    samples: Sequence[Sample],
    recorded: Callable[[Sample], float | None],
    candidate: Callable[[Sample], float | None],
) -> Comparison:
    """Both sides over the same samples (those both have a value for), so the difference is theirs."""
    pairs = [(a, b) for a, b in ((recorded(s), candidate(s)) for s in samples) if a is not None and b is not None]
    return Comparison(
        recorded=_mean([a for a, _ in pairs]),
        candidate=_mean([b for _, b in pairs]),
        difference=_mean([b - a for a, b in pairs]),
        interval=bootstrap_interval([b - a for a, b in pairs]),
        n=len(pairs),
    )


def escalated(trust: float | None, threshold: float) -> float:
    """1.0 when the step would not act on its own: trust below the threshold, or no trust at all."""
    return 1.0 if trust is None or trust < threshold else 0.0


@dataclass(frozen=True)
class ReplayReport:
    samples: tuple[Sample, ...]
    threshold: float
    totals: Mapping[str, Comparison]
    agreement_rate: float | None
    recorded_accuracy: float | None  # over every sample, labelled candidate or not
    labelled: int  # samples whose candidate answer has an inferred label
    failed: int  # samples the candidate could not answer (or that could not be replayed)


def replay_report(samples: Sequence[Sample], threshold: float) -> ReplayReport:
    answered = [sample for sample in samples if sample.candidate.output is not None]

    def candidate_trust(sample: Sample) -> float | None:
        # A failed candidate did not act: it counts as escalated, and has no trust to average.
        return sample.candidate.combined_trust if sample.candidate.output is not None else None

    totals = {
        "accuracy": compare(samples, lambda s: s.recorded.label, lambda s: s.candidate_label),
        "mean_trust": compare(samples, lambda s: s.recorded.combined_trust, candidate_trust),
        "escalation_rate": compare(
            samples,
            lambda s: escalated(s.recorded.combined_trust, threshold),
            lambda s: escalated(candidate_trust(s), threshold),
        ),
        # Trust that tells good work from bad: held back where the recorded answer was marked wrong, let
        # through where it was marked right.
        "escalation_on_incorrect": compare(
            [s for s in samples if s.recorded.label == 0.0],
            lambda s: escalated(s.recorded.combined_trust, threshold),
            lambda s: escalated(candidate_trust(s), threshold),
        ),
        "escalation_on_correct": compare(
            [s for s in samples if s.recorded.label == 1.0],
            lambda s: escalated(s.recorded.combined_trust, threshold),
            lambda s: escalated(candidate_trust(s), threshold),
        ),
        "cost": compare(samples, lambda s: s.recorded.cost, lambda s: s.candidate.cost),
        "latency_ms": compare(samples, lambda s: s.recorded.duration_ms, lambda s: s.candidate.duration_ms),
    }
    agreements = [sample.agreement for sample in answered if sample.agreement is not None]
    return ReplayReport(
        samples=tuple(samples),
        threshold=threshold,
        totals=totals,
        agreement_rate=_mean([1.0 if agrees else 0.0 for agrees in agreements]),
        recorded_accuracy=_mean([sample.recorded.label for sample in samples]),
        labelled=sum(1 for sample in samples if sample.candidate_label is not None),
        failed=len(samples) - len(answered),
    )


def sample_json(sample: Sample) -> dict[str, Any]:
    recorded, candidate = sample.recorded, sample.candidate
    return {
        "run_id": recorded.run_id,
        "step": recorded.step,
        "replay_step": candidate.step_name,
        "recorded": {
            "label": recorded.label,
            "self_reported": recorded.self_reported,
            "grounding": recorded.grounding,
            "combined_trust": recorded.combined_trust,
            "deterministic_passed": recorded.deterministic_passed,
            "cost": recorded.cost,
            "duration_ms": recorded.duration_ms,
        },
        "candidate": {
            "status": candidate.status,
            "label": sample.candidate_label,
            "self_reported": candidate.self_reported,
            "grounding": candidate.grounding,
            "combined_trust": candidate.combined_trust,
            "deterministic_passed": candidate.deterministic_passed,
            "cost": candidate.cost,
            "duration_ms": candidate.duration_ms,
            "error": candidate.error,
        },
        "agreement": sample.agreement,
    }


def report_json(report: ReplayReport) -> dict[str, Any]:
    return {
        "threshold": report.threshold,
        "samples": [sample_json(sample) for sample in report.samples],
        "totals": {name: comparison.as_json() for name, comparison in report.totals.items()},
        "agreement_rate": report.agreement_rate,
        "recorded_accuracy": report.recorded_accuracy,
        "labelled": report.labelled,
        "failed": report.failed,
    }
