"""What a step had done when it stopped to wait for a person, as JSON, and back.

A run waiting on a `human` check may be resumed by another process after a restart. The agent
must not be asked again (it would answer differently, and the person approved *this* answer):
the primary call's result, the verifier's and judge's outcomes and the checks already run are
kept in the approval row and restored from there.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from vectorstep.domain.execution import ExecutionResult, ModelUsage, Usage
from vectorstep.domain.llm_output import LLMOutput
from vectorstep.domain.signals import CallAttribution, CheckResult, Claim, GroundingOutcome, VerifierOutcome
from vectorstep.domain.trace import TraceEvent

VERSION = 1


@dataclass(frozen=True)
class Restored:
    result: ExecutionResult
    spent: Usage
    attempts: int
    iterations: int
    warnings: list[str]
    prompt_hash: str
    started_at: datetime
    verifier: VerifierOutcome | None
    grounding: GroundingOutcome | None
    checks: list[CheckResult]


def save_primary(
    result: ExecutionResult,
    *,
    spent: Usage,
    attempts: int,
    iterations: int,
    warnings: list[str],
    prompt_hash: str,
    started_at: datetime,
) -> dict[str, Any]:
    return {
        "version": VERSION,
        "primary": {
            "output": result.output.model_dump(mode="json"),
            "prompt": result.prompt,
            "response_text": result.response_text,
            "duration_ms": result.duration_ms,
            "trace": [event.as_dict() for event in result.trace],
            "usage": result.usage.as_dict(),
            "model": result.model,
            "provider": result.provider,
            "agent_version": result.agent_version,
            "agent": result.agent,
            "stop_reason": result.stop_reason,
            "truncated": result.truncated,
        },
        "spent": spent.as_dict(),
        "attempts": attempts,
        "iterations": iterations,
        "warnings": list(warnings),
        "prompt_hash": prompt_hash,
        "started_at": started_at.isoformat(),
    }


def with_signals(
    checkpoint: Mapping[str, Any], verifier: VerifierOutcome | None, grounding: GroundingOutcome | None
) -> dict[str, Any]:
    return {
        **checkpoint,
        "verifier": dataclasses.asdict(verifier) if verifier is not None else None,
        "grounding": dataclasses.asdict(grounding) if grounding is not None else None,
    }


def restore(checkpoint: Mapping[str, Any]) -> Restored:
    primary = checkpoint["primary"]
    result = ExecutionResult(
        output=LLMOutput.model_validate(primary["output"]),
        prompt=primary["prompt"],
        response_text=primary["response_text"],
        duration_ms=primary["duration_ms"],
        trace=tuple(TraceEvent.from_dict(event) for event in primary["trace"]),
        usage=_usage(primary["usage"]),
        model=primary["model"],
        provider=primary["provider"],
        agent_version=primary["agent_version"],
        agent=primary["agent"],
        stop_reason=primary["stop_reason"],
        truncated=primary["truncated"],
    )
    return Restored(
        result=result,
        spent=_usage(checkpoint["spent"]),
        attempts=checkpoint["attempts"],
        iterations=checkpoint["iterations"],
        warnings=list(checkpoint["warnings"]),
        prompt_hash=checkpoint["prompt_hash"],
        started_at=datetime.fromisoformat(checkpoint["started_at"]),
        verifier=_verifier(checkpoint.get("verifier")),
        grounding=_grounding(checkpoint.get("grounding")),
        checks=[CheckResult(**check) for check in checkpoint.get("checks") or []],
    )


def _usage(data: Mapping[str, Mapping[str, int]]) -> Usage:
    return Usage({model: ModelUsage(**counts) for model, counts in data.items()})


def _call(data: Mapping[str, Any]) -> CallAttribution:
    return CallAttribution(**{**data, "usage": _usage(data["usage"]["by_model"])})


def _verifier(data: Mapping[str, Any] | None) -> VerifierOutcome | None:
    if data is None:
        return None
    return VerifierOutcome(**{**data, "call": _call(data["call"])})


def _grounding(data: Mapping[str, Any] | None) -> GroundingOutcome | None:
    if data is None:
        return None
    claims = tuple(Claim.from_dict(claim) for claim in data["claims"])
    return GroundingOutcome(**{**data, "call": _call(data["call"]), "claims": claims})
