"""Which steps promotion readiness judges, and the tiers each must meet.

A step's tiers are the pipeline's house default, then its parallel group's block, then its own: each
tier a later block writes replaces the earlier one whole (a `null` tier removes it). The house
default's answer-quality tiers (confidence, accuracy, calibration) are inherited by agent steps only
(`gateway`, `openclaw`): a notify, webhook, human or sub-pipeline step inherits just `operational`,
as its confidence is not an agent's judgement worth marking. Tiers written on the step itself, or on
its group, always apply.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from vectorstep.spec.executor_config import GatewayConfig, OpenClawConfig
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.readiness import (
    TIERS,
    AccuracyTierSpec,
    CalibrationTierSpec,
    ConfidenceTierSpec,
    OperationalTierSpec,
    ReadinessSpec,
    TierName,
)
from vectorstep.spec.steps import FanOutItem, ParallelItem, TrustedWorkSpec

AGENT_EXECUTORS = ("gateway", "openclaw")
Origin = Literal["pipeline", "group", "step"]


@dataclass(frozen=True)
class Tiers:
    """The tiers one step must meet, each with where it was written."""

    operational: OperationalTierSpec | None = None
    confidence: ConfidenceTierSpec | None = None  # `min_confidence` filled in (the step's threshold by default)
    accuracy: AccuracyTierSpec | None = None
    calibration: CalibrationTierSpec | None = None
    origins: Mapping[TierName, Origin] = field(default_factory=dict)

    @property
    def configured(self) -> tuple[TierName, ...]:
        return tuple(tier for tier in TIERS if getattr(self, tier) is not None)


@dataclass(frozen=True)
class ReadinessSubject:
    """A step as readiness judges it: a sequential step, a branch (`group/branch`) or a fan-out."""

    name: str  # as its executions are stored; a fan-out's are stored as `name/0`, `name/1`, ...
    executor: str
    agent: str | None
    prompt_template: str
    confidence_threshold: float
    fan_out: bool
    tiers: Tiers
    unconfigured: str = ""  # why no tier applies (empty when one does)


def readiness_subjects(spec: PipelineSpec) -> tuple[ReadinessSubject, ...]:
    """Every step of the pipeline that does work, in pipeline order, with its effective tiers."""
    house: tuple[ReadinessSpec, Origin] = (spec.readiness, "pipeline")
    found: list[ReadinessSubject] = []
    for name, work, threshold, blocks, fan_out in _works(spec):
        found.append(_subject(name, work, threshold, [house, *blocks], fan_out=fan_out))
    return tuple(found)


Blocks = list[tuple[ReadinessSpec, Origin]]


def _works(spec: PipelineSpec) -> Iterator[tuple[str, TrustedWorkSpec, float, Blocks, bool]]:
    for item in spec.steps:
        if isinstance(item, ParallelItem):
            group = item.parallel
            for branch in group.steps:
                blocks: Blocks = [(group.readiness, "group"), (branch.readiness, "step")]
                yield f"{group.name}/{branch.name}", branch, group.confidence_threshold, blocks, False
        elif isinstance(item, FanOutItem):
            fan = item.fan_out
            yield fan.name, fan, fan.confidence_threshold, [(fan.readiness, "step")], True
        else:
            yield item.name, item, item.confidence_threshold, [(item.readiness, "step")], False


def _subject(
    name: str, work: TrustedWorkSpec, threshold: float, blocks: Sequence[tuple[ReadinessSpec, Origin]], *, fan_out: bool
) -> ReadinessSubject:
    layered: dict[TierName, tuple[Any, Origin]] = {}
    for block, origin in blocks:
        for tier in TIERS:
            if block.writes(tier):
                layered[tier] = (getattr(block, tier), origin)
    written = {tier: pair for tier, pair in layered.items() if pair[0] is not None}
    agent_step = work.executor in AGENT_EXECUTORS
    kept = {
        tier: pair for tier, pair in written.items() if agent_step or tier == "operational" or pair[1] != "pipeline"
    }
    confidence = kept.get("confidence", (None, "pipeline"))[0]
    if confidence is not None and confidence.min_confidence is None:
        kept["confidence"] = (confidence.model_copy(update={"min_confidence": threshold}), kept["confidence"][1])
    tiers = Tiers(
        **{tier: value for tier, (value, _) in kept.items()},
        origins={tier: origin for tier, (_, origin) in kept.items()},
    )
    return ReadinessSubject(
        name=name,
        executor=work.executor,
        agent=_agent(work),
        prompt_template=work.prompt_template,
        confidence_threshold=threshold,
        fan_out=fan_out,
        tiers=tiers,
        unconfigured="" if kept else _why_none(work.executor, blocks, dropped=len(written) > len(kept)),
    )


def _agent(work: TrustedWorkSpec) -> str | None:
    config = work.executor_config
    return config.agent if isinstance(config, GatewayConfig | OpenClawConfig) else None


def _why_none(executor: str, blocks: Sequence[tuple[ReadinessSpec, Origin]], *, dropped: bool) -> str:
    if dropped:
        return (
            f"a {executor} step inherits only the operational tier of the pipeline's readiness, and it sets none; "
            "write tiers on the step to judge it"
        )
    for block, origin in reversed(blocks[1:]):
        if block.removes_all:
            return "opted out with `readiness: null`" + ("" if origin == "step" else f" on its {origin}")
    where = "the pipeline, its group or the branch" if len(blocks) > 2 else "the pipeline or the step"
    return f"no readiness tier is configured for it (none on {where})"
