"""The grounding judge: which of the answer's load-bearing claims do its own tool results back?

G = supported claims / all claims, computed by us from the judge's list (the judge's own figure is
kept as `judge_reported_score`). No tool activity gives G = null ("no evidence trail to check"),
never 0; a judge that fails, times out or answers unreadably gives G = null with the reason.

Every claim the judge lists is also located (`pointers`: where its evidence is in the whole tool
result) and checked without a model (`local_check`), so each claim shows the anchor check's verdict
beside the judge's and their disagreements are counted. With `executor: local` there is no judge:
the anchor check alone gives G from the answer's own statements.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Mapping
from typing import Any

from vectorstep.domain.execution import ExecutionResult
from vectorstep.domain.signals import Claim, GroundingOutcome
from vectorstep.domain.trace import has_tool_activity
from vectorstep.grounding.anchors import statement_anchors
from vectorstep.grounding.evidence import StepEvidence
from vectorstep.grounding.local_check import SUPPORTED, UNDECIDABLE, answer_claims, check_claim, check_statement
from vectorstep.grounding.pointers import locate
from vectorstep.grounding.second_opinion import Ask, ask_softly
from vectorstep.grounding.transcript import Transcript, build_transcript
from vectorstep.prompts import prompt_template
from vectorstep.spec.trust_blocks import GroundingSpec
from vectorstep.templating import render_strict

MAX_CLAIMS_EXAMINED = 100
MAX_CLAIM_CHARS = 2000


def answer_for_review(result: ExecutionResult) -> dict[str, Any]:
    """The primary's answer as a reviewer sees it: without `raw_response`, `artifacts` and empty fields."""
    answer = result.output.as_context()
    answer.pop("artifacts", None)
    if answer.get("proceed") is True:
        del answer["proceed"]  # the default says nothing
    return {key: value for key, value in answer.items() if value not in (None, "", [], {})}


async def judge_grounding(spec: GroundingSpec, primary: ExecutionResult, ask: Ask | None) -> GroundingOutcome:
    outcome = GroundingOutcome(
        computed=False,
        reason="no_trace",
        enforce=spec.enforce,
        max_trace_chars=spec.max_trace_chars,
        evidence_windows=spec.evidence_windows,
        executor=spec.executor,
    )
    if not has_tool_activity(primary.trace):
        return outcome
    evidence = StepEvidence.of_trace(primary.prompt, primary.trace, primary.full_tool_results)
    answer = answer_for_review(primary)
    # Reading long results by their shape takes milliseconds of CPU: off the event loop, so a
    # service's other requests and runs are not held up by it.
    if spec.executor == "local" or ask is None:
        return await asyncio.to_thread(local_grounding, outcome, answer, evidence)
    transcript, prompt = await asyncio.to_thread(_judge_request, spec, primary, answer, evidence)
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
    claims = await asyncio.to_thread(_examined_all, _claims(output.reasoning), transcript, evidence)
    return dataclasses.replace(
        outcome,
        computed=True,
        reason="computed",
        score=sum(claim.supported for claim in claims) / len(claims) if claims else output.confidence,
        judge_reported_score=output.confidence,
        summary=output.summary,
        claims=tuple(claims),
    )


def _judge_request(
    spec: GroundingSpec, primary: ExecutionResult, answer: Mapping[str, Any], evidence: StepEvidence
) -> tuple[Transcript, str]:
    transcript = build_transcript(
        primary.trace,
        primary.full_tool_results,
        answer,
        max_chars=spec.max_trace_chars,
        evidence_windows=spec.evidence_windows,
        evidence=evidence,
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
    return transcript, prompt


def _examined_all(claims: list[Claim], transcript: Transcript, evidence: StepEvidence) -> list[Claim]:
    # The judge's answer is untrusted too: only so many claims are located and checked (G counts all).
    return [
        _examined(claim, transcript, evidence) if number < MAX_CLAIMS_EXAMINED else claim
        for number, claim in enumerate(claims)
    ]


def local_grounding(outcome: GroundingOutcome, answer: Mapping[str, Any], evidence: StepEvidence) -> GroundingOutcome:
    """G from the anchor check alone: the answer's `reasoning.supports` and extra fields, no model call."""
    claims = []
    for statement, anchors in answer_claims(answer):
        verdict = check_statement(statement, evidence, anchors)
        claims.append(Claim(statement, verdict.verdict == SUPPORTED, verdict.reason, local=verdict))
    decided = [claim for claim in claims if claim.local is not None and claim.local.verdict != UNDECIDABLE]
    if not decided:
        reason = "undecidable" if claims else "no_claims"
        return dataclasses.replace(outcome, reason=reason, claims=tuple(claims))
    supported = sum(claim.supported for claim in decided)
    return dataclasses.replace(
        outcome,
        computed=True,
        reason="computed",
        score=supported / len(decided),
        summary=f"{supported} of {len(decided)} checkable statements are backed by the tool results"
        + (
            f"; {len(claims) - len(decided)} could not be checked without a model" if len(decided) < len(claims) else ""
        ),
        claims=tuple(claims),
    )


def _claims(reasoning: Mapping[str, Any] | None) -> list[Claim]:
    listed = (reasoning or {}).get("claims")
    if not isinstance(listed, list):
        return []
    claims: list[Claim] = []
    for item in listed:
        # Only a real boolean counts: a string "false" from a sloppy judge is not a verdict.
        if isinstance(item, Mapping) and isinstance(item.get("supported"), bool) and item.get("claim"):
            text, evidence = str(item["claim"]), str(item.get("evidence") or "")
            claims.append(Claim(text[:MAX_CLAIM_CHARS], item["supported"], evidence[:MAX_CLAIM_CHARS]))
    return claims


def _examined(claim: Claim, transcript: Transcript, evidence: StepEvidence) -> Claim:
    """The judge's claim with where its evidence is, the anchor check's verdict, and truncation flags."""
    located = locate(claim.claim, claim.evidence, evidence, transcript.result_entries) if claim.supported else None
    examined = dataclasses.replace(
        claim,
        evidence_pointer=located.pointer if located else None,
        evidence_not_found=bool(located and located.not_found),
        local=check_claim(claim.claim, evidence),
    )
    return _flag(examined, transcript)


def _flag(claim: Claim, transcript: Transcript) -> Claim:
    """An unsupported claim while the judge was shown shortened results may be a truncation artefact.

    When the claim names concrete things (ids, numbers, names) we can tell: it is flagged when one of
    them is in a result but was cut from what the judge saw. A vague claim is flagged whenever
    anything was cut, since we cannot tell.
    """
    if claim.supported or not transcript.truncated_events:
        return claim
    anchors = [anchor for anchor in statement_anchors(claim.claim) if anchor.hard]
    hidden = any(transcript.hides(anchor) for anchor in anchors)
    if anchors and not hidden:
        return claim
    return dataclasses.replace(claim, possible_truncation_artefact=True, evidence_in_omitted_text=hidden)
