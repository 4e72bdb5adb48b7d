"""Promotion readiness: is a pipeline's own testing record good enough for it to act in production?

Pure: given each step's effective tiers (spec/readiness_subjects.py), its recent testing executions and
its current configuration, it says per tier, per step and for the pipeline one of `ready`, `building`,
`not_ready`, `no_data` or `not_configured` (readiness_tiers.py says what each tier means). A step is
ready when every tier it has is; the pipeline when every step with tiers is. Otherwise the worst
verdict wins: `not_ready` over `building`, `building` over `no_data` — the evidence saying no matters
most, then what is still missing. Steps without tiers are left out; a pipeline none of whose steps
has one is `not_configured`. Advisory only: nothing here ever gates a run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vectorstep.domain.readiness import CurrentConfig, Execution
from vectorstep.spec.readiness import EVIDENCE_LIMIT, TierName
from vectorstep.spec.readiness_subjects import Origin, ReadinessSubject
from vectorstep.trust import readiness_tiers
from vectorstep.trust.readiness_tiers import Finding, Verdict

RANK: dict[Verdict, int] = {"ready": 0, "no_data": 1, "building": 2, "not_ready": 3}
WORDS: dict[Verdict, str] = {
    "ready": "ready",
    "building": "building",
    "not_ready": "not ready",
    "no_data": "no data",
    "not_configured": "not configured",
}


@dataclass(frozen=True)
class TierVerdict:
    tier: TierName
    verdict: Verdict
    reason: str
    rule: str  # what the tier asks, in words, with its numbers
    origin: Origin  # where it was written: the pipeline's house default, the group, or the step
    settings: Mapping[str, Any]
    figures: Mapping[str, Any]

    def as_json(self) -> dict[str, Any]:
        return {
            "tier": self.tier,
            "verdict": self.verdict,
            "reason": self.reason,
            "rule": self.rule,
            "origin": self.origin,
            "settings": dict(self.settings),
            "figures": dict(self.figures),
        }


@dataclass(frozen=True)
class StepReadiness:
    step: str
    executor: str
    agent: str | None
    verdict: Verdict
    reason: str
    tiers: tuple[TierVerdict, ...]
    executions: int  # how many testing executions were read
    current: CurrentConfig

    def as_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "executor": self.executor,
            "agent": self.agent,
            "verdict": self.verdict,
            "reason": self.reason,
            "executions": self.executions,
            "current_config": {
                "prompt_hash": self.current.prompt_hash,
                "agent_version": self.current.agent_version,
                "agent_version_from": self.current.version_source,
            },
            "tiers": [tier.as_json() for tier in self.tiers],
        }


@dataclass(frozen=True)
class PipelineReadiness:
    pipeline: str
    stage: str
    verdict: Verdict
    reason: str
    steps: tuple[StepReadiness, ...]
    judged_at: datetime
    teams: tuple[str, ...] | None = None  # judged on these teams' runs only (None: every run)
    per_step_limit: int = EVIDENCE_LIMIT  # the most recent executions of each step that were read

    def as_json(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline,
            "stage": self.stage,
            "verdict": self.verdict,
            "ready": self.verdict == "ready",
            "reason": self.reason,
            "judged_at": self.judged_at.isoformat(),
            "evidence": {
                "stage": "testing",
                "excluded_sources": ["replay"],
                "teams": None if self.teams is None else list(self.teams),
                "per_step_limit": self.per_step_limit,
            },
            "steps": [step.as_json() for step in self.steps],
        }


def combined(verdicts: Iterable[Verdict]) -> Verdict:
    """The worst of the verdicts of what has tiers; `not_configured` when nothing does."""
    judged = [verdict for verdict in verdicts if verdict != "not_configured"]
    return max(judged, key=RANK.__getitem__) if judged else "not_configured"


def judge_step(
    subject: ReadinessSubject, executions: Sequence[Execution], current: CurrentConfig, now: datetime
) -> StepReadiness:
    """One step's verdict from its executions, newest first."""
    current = current.resolved(executions)
    matching = [execution for execution in executions if current.matches(execution)]
    tiers = tuple(_tier(subject, tier, executions, matching, now) for tier in subject.tiers.configured)
    verdict = combined(tier.verdict for tier in tiers)
    return StepReadiness(
        step=subject.name,
        executor=subject.executor,
        agent=subject.agent,
        verdict=verdict,
        reason=_step_reason(verdict, tiers, subject.unconfigured),
        tiers=tiers,
        executions=len(executions),
        current=current,
    )


def judge_pipeline(
    name: str,
    stage: str,
    steps: Sequence[StepReadiness],
    now: datetime,
    teams: tuple[str, ...] | None = None,
) -> PipelineReadiness:
    verdict = combined(step.verdict for step in steps)
    return PipelineReadiness(name, stage, verdict, _pipeline_reason(verdict, steps), tuple(steps), now, teams)


def _tier(
    subject: ReadinessSubject,
    tier: TierName,
    executions: Sequence[Execution],
    matching: Sequence[Execution],
    now: datetime,
) -> TierVerdict:
    tiers = subject.tiers
    bound = subject.confidence_threshold
    finding: Finding
    if tier == "operational" and tiers.operational is not None:
        settings: Any = tiers.operational
        finding = readiness_tiers.operational(tiers.operational, executions, matching, now)
    elif tier == "confidence" and tiers.confidence is not None:
        settings = tiers.confidence
        bound = tiers.confidence.min_confidence if tiers.confidence.min_confidence is not None else bound
        finding = readiness_tiers.confidence(tiers.confidence, matching, bound)
    elif tier == "accuracy" and tiers.accuracy is not None:
        settings = tiers.accuracy
        finding = readiness_tiers.accuracy(tiers.accuracy, matching)
    elif tier == "calibration" and tiers.calibration is not None:
        settings = tiers.calibration
        finding = readiness_tiers.calibration(tiers.calibration, matching)
    else:
        raise ValueError(f"step {subject.name} has no {tier} tier")
    return TierVerdict(
        tier=tier,
        verdict=finding.verdict,
        reason=finding.reason,
        rule=readiness_tiers.rule(settings, bound),
        origin=tiers.origins.get(tier, "step"),
        settings=settings.model_dump(mode="json"),
        figures=finding.figures,
    )


def _step_reason(verdict: Verdict, tiers: Sequence[TierVerdict], unconfigured: str) -> str:
    if verdict == "not_configured":
        return unconfigured
    if verdict == "ready":
        return "its tier is ready" if len(tiers) == 1 else f"all {len(tiers)} tiers are ready"
    names = [tier.tier for tier in tiers if tier.verdict == verdict]
    return f"{_and(names)} {WORDS[verdict]}"


def _pipeline_reason(verdict: Verdict, steps: Sequence[StepReadiness]) -> str:
    judged = [step for step in steps if step.verdict != "not_configured"]
    if not judged:
        return (
            "no step has a readiness tier: add `readiness:` to the pipeline (the house default for every step) "
            "or to its steps"
        )
    left_out = len(steps) - len(judged)
    aside = f"; {left_out} step{'s' if left_out > 1 else ''} without tiers left out" if left_out else ""
    if verdict == "ready":
        return f"all {len(judged)} judged steps are ready{aside}"
    worst = [
        f"{step.step} ({_and([tier.tier for tier in step.tiers if tier.verdict == verdict])})"
        for step in judged
        if step.verdict == verdict
    ]
    ready = sum(step.verdict == "ready" for step in judged)
    return f"{WORDS[verdict]}: {', '.join(worst)}; {ready} of {len(judged)} judged steps ready{aside}"


def _and(names: Sequence[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
