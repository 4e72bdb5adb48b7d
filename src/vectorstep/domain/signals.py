"""What the second opinions of a step found: the verifier (V) and the grounding judge (G).

Both fail softly: an error, a timeout or an unreadable answer is recorded here, never raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from vectorstep.domain.execution import Usage


@dataclass(frozen=True)
class CallAttribution:
    """Who answered a side call, what they were asked and what they said."""

    agent: str | None = None
    model: str | None = None
    provider: str | None = None
    prompt: str | None = None
    raw_output: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost: float | None = None
    duration_ms: float | None = None

    @property
    def input_tokens(self) -> int:
        return self.usage.input_tokens

    @property
    def output_tokens(self) -> int:
        return self.usage.output_tokens


@dataclass(frozen=True)
class VerifierOutcome:
    mode: str
    strategy: str
    veto_floor: float
    triggered: bool
    trigger_reason: str
    score: float | None = None
    summary: str | None = None
    error: str | None = None
    call: CallAttribution = field(default_factory=CallAttribution)

    def as_report(self) -> dict[str, Any]:
        return {
            "triggered": self.triggered,
            "trigger_reason": self.trigger_reason,
            "mode": self.mode,
            "combination_strategy": self.strategy,
            "veto_floor": self.veto_floor if self.strategy == "veto" else None,
            "score": self.score,
            "summary": self.summary,
            "error": self.error,
            **_attribution(self.call),
        }


@dataclass(frozen=True)
class EvidencePointer:
    """Where a claim's evidence is: characters `start`–`end` of one tool result, whole (not the capped copy)."""

    call_id: str | None
    tool: str | None
    start: int
    end: int
    excerpt: str  # the text at that place (bounded), for when the stored copy of the result was capped
    found_by: str  # quote: the judge's quoted evidence; anchors: the claim's figures, times and ids

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> EvidencePointer | None:
        return cls(**data) if data else None


@dataclass(frozen=True)
class LocalVerdict:
    """The model-free anchor check of one claim: `supported`, `unsupported` or `undecidable`, and why."""

    verdict: str
    reason: str
    pointer: EvidencePointer | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> LocalVerdict | None:
        if not data:
            return None
        return cls(data["verdict"], data["reason"], EvidencePointer.from_dict(data.get("pointer")))


@dataclass(frozen=True)
class Claim:
    claim: str
    supported: bool
    evidence: str
    possible_truncation_artefact: bool = False
    evidence_in_omitted_text: bool = False
    evidence_pointer: EvidencePointer | None = None
    evidence_not_found: bool = False  # the judge says supported, but its evidence is in no tool result
    local: LocalVerdict | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Claim:
        return cls(
            **{
                **data,
                "evidence_pointer": EvidencePointer.from_dict(data.get("evidence_pointer")),
                "local": LocalVerdict.from_dict(data.get("local")),
            }
        )

    @property
    def disagrees(self) -> bool:
        """The local anchor check decided, and decided otherwise than the judge."""
        return (
            self.local is not None
            and self.local.verdict != "undecidable"
            and ((self.local.verdict == "supported") != self.supported)
        )


@dataclass(frozen=True)
class GroundingOutcome:
    computed: bool
    reason: str  # computed | no_trace | error | no_claims | undecidable
    enforce: bool
    max_trace_chars: int
    evidence_windows: bool
    executor: str = "gateway"  # `local`: G from the anchor check, no model call
    score: float | None = None
    judge_reported_score: float | None = None
    summary: str | None = None
    error: str | None = None
    claims: tuple[Claim, ...] = ()
    truncated_events: int = 0
    cut_by_runtime: int = 0
    call: CallAttribution = field(default_factory=CallAttribution)

    @property
    def score_mismatch(self) -> bool:
        """The judge's own figure disagrees with the share of claims it marked supported."""
        if self.score is None or self.judge_reported_score is None or not self.claims:
            return False
        return abs(self.score - self.judge_reported_score) > 0.05

    @property
    def setting_to_raise(self) -> str | None:
        """Where to give the judge more room when evidence may have been cut."""
        if not self.truncated_events:
            return None
        if self.cut_by_runtime:
            return (
                "executor_config.trace_max_chars, or the gateway's limits.trace_tool_result_max_chars "
                "(the runtime cut the trace), then grounding.max_trace_chars"
            )
        return "grounding.max_trace_chars"

    @property
    def anchor_disagreements(self) -> int:
        return sum(claim.disagrees for claim in self.claims)

    def as_report(self) -> dict[str, Any]:
        return {
            "computed": self.computed,
            "reason": self.reason,
            "error": self.error,
            "executor": self.executor,
            "enforce": self.enforce,
            "score": self.score,
            "judge_reported_score": self.judge_reported_score,
            "score_mismatch": self.score_mismatch,
            "summary": self.summary,
            "claims": [asdict(claim) for claim in self.claims],
            "anchor_disagreements": self.anchor_disagreements,
            "evidence_not_found": sum(claim.evidence_not_found for claim in self.claims),
            "truncated_events": self.truncated_events,
            "cut_by_runtime": self.cut_by_runtime,
            "setting_to_raise": self.setting_to_raise,
            "max_trace_chars": self.max_trace_chars,
            "evidence_windows": self.evidence_windows,
            **_attribution(self.call),
        }


@dataclass(frozen=True)
class CheckResult:
    """One deterministic check: passed or not, and why (fail-closed: anything unclear is a failure)."""

    name: str
    type: str
    passed: bool
    detail: str
    duration_ms: float

    def as_report(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "passed": self.passed,
            "detail": self.detail,
            "duration_ms": self.duration_ms,
        }


def _attribution(call: CallAttribution) -> dict[str, Any]:
    return {
        "agent": call.agent,
        "model": call.model,
        "provider": call.provider,
        "input_tokens": call.input_tokens,
        "output_tokens": call.output_tokens,
        "cost": call.cost,
        "duration_ms": call.duration_ms,
        "prompt": call.prompt,
        "raw_output": call.raw_output,
    }
