"""The grounding judge: which of the answer's load-bearing claims do its own tool results back?

G = supported claims / all claims, computed by us from the judge's list (the judge's own figure is
kept as `judge_reported_score`). No tool activity gives G = null ("no evidence trail to check"),
never 0; a judge that fails, times out or answers unreadably gives G = null with the reason.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from vectorstep.domain.execution import ExecutionResult
from vectorstep.domain.signals import Claim, GroundingOutcome
from vectorstep.domain.trace import has_tool_activity
from vectorstep.grounding.evidence import answer_terms
from vectorstep.grounding.second_opinion import Ask, ask_softly
from vectorstep.grounding.transcript import Transcript, build_transcript
from vectorstep.prompts import prompt_template
from vectorstep.spec.trust_blocks import GroundingSpec
from vectorstep.templating import render_strict


def answer_for_review(result: ExecutionResult) -> dict[str, Any]:
    """The primary's answer as a reviewer sees it: without `raw_response`, `artifacts` and empty fields."""
    answer = result.output.as_context()
    answer.pop("artifacts", None)
    if answer.get("proceed") is True:
        del answer["proceed"]  # the default says nothing
    return {key: value for key, value in answer.items() if value not in (None, "", [], {})}


async def judge_grounding(spec: GroundingSpec, primary: ExecutionResult, ask: Ask) -> GroundingOutcome:
    outcome = GroundingOutcome(
        computed=False,
        reason="no_trace",
        enforce=spec.enforce,
        max_trace_chars=spec.max_trace_chars,
        evidence_windows=spec.evidence_windows,
    )
    if not has_tool_activity(primary.trace):
        return outcome
    answer = answer_for_review(primary)
    transcript = build_transcript(
        primary.trace,
        primary.full_tool_results,
        answer,
        max_chars=spec.max_trace_chars,
        evidence_windows=spec.evidence_windows,
    )
    prompt = render_strict(
        prompt_template("grounding_judge"),
        {
            "task": primary.prompt,
            "answer": json.dumps(answer, ensure_ascii=False, separators=(",", ":")),
            "entries": len(transcript.entries),
            "truncated_events": transcript.truncated_events,
            "transcript": transcript.text,
        },
    )
    agent = getattr(spec.executor_config, "agent", spec.agent)
    opinion = await ask_softly(ask, prompt, spec.timeout_seconds, "grounding", agent)
    outcome = dataclasses.replace(
        outcome,
        reason="error",
        call=opinion.call,
        truncated_events=transcript.truncated_events,
        cut_by_runtime=transcript.cut_by_runtime,
    )
    if opinion.result is None:
        return dataclasses.replace(outcome, error=opinion.error)
    output = opinion.result.output
    claims = [_flag(claim, transcript) for claim in _claims(output.reasoning)]
    return dataclasses.replace(
        outcome,
        computed=True,
        reason="computed",
        score=sum(claim.supported for claim in claims) / len(claims) if claims else output.confidence,
        judge_reported_score=output.confidence,
        summary=output.summary,
        claims=tuple(claims),
    )


def _claims(reasoning: Mapping[str, Any] | None) -> list[Claim]:
    listed = (reasoning or {}).get("claims")
    if not isinstance(listed, list):
        return []
    claims: list[Claim] = []
    for item in listed:
        if isinstance(item, Mapping) and isinstance(item.get("supported"), bool) and item.get("claim"):
            claims.append(Claim(str(item["claim"]), item["supported"], str(item.get("evidence") or "")))
    return claims


def _flag(claim: Claim, transcript: Transcript) -> Claim:
    """An unsupported claim while the judge was shown shortened results may be a truncation artefact.

    When the claim names concrete things (ids, numbers, names) we can tell: it is flagged when one of
    them is in a result but was cut from what the judge saw. A vague claim is flagged whenever
    anything was cut, since we cannot tell.
    """
    if claim.supported or not transcript.truncated_events:
        return claim
    terms = answer_terms({"claim": claim.claim})
    hidden = any(transcript.hides(term) for term in terms)
    if terms and not hidden:
        return claim
    return Claim(claim.claim, claim.supported, claim.evidence, True, hidden)
