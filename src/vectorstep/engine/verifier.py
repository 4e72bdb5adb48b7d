"""The verifier (V, SYSTEM.md §7.2): a second agent's opinion, which can only lower trust.

`critic` reviews the primary's task, answer and tool transcript; `independent` does the task
blind and its own confidence is V. It fires when `trigger.always`, or when
`confidence_above < S < confidence_below` (both exclusive). A failure is soft: V = null, S kept.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

from vectorstep.domain.execution import ExecutionResult
from vectorstep.domain.signals import VerifierOutcome
from vectorstep.grounding.judge import answer_for_review
from vectorstep.grounding.second_opinion import Ask, ask_softly
from vectorstep.grounding.transcript import build_transcript
from vectorstep.prompts import prompt_template
from vectorstep.spec.trust_blocks import VerifierSpec
from vectorstep.templating import render_strict


def trigger(spec: VerifierSpec, self_report: float) -> tuple[bool, str]:
    band = spec.trigger
    if band.always:
        return True, "trigger.always"
    if band.confidence_above < self_report < band.confidence_below:
        return True, f"S={self_report:g} is inside ({band.confidence_above:g}, {band.confidence_below:g})"
    return False, f"S={self_report:g} is outside ({band.confidence_above:g}, {band.confidence_below:g})"


async def verify(spec: VerifierSpec, primary: ExecutionResult, ask: Ask) -> VerifierOutcome:
    fired, reason = trigger(spec, primary.output.confidence)
    outcome = VerifierOutcome(
        mode=spec.mode,
        strategy=spec.combination_strategy,
        veto_floor=spec.veto_floor,
        triggered=fired,
        trigger_reason=reason,
    )
    if not fired:
        return outcome
    # A critic's transcript reads long results by their shape: CPU work, kept off the event loop.
    prompt = (
        await asyncio.to_thread(critic_prompt, spec, primary) if spec.mode == "critic" else independent_prompt(primary)
    )
    agent = getattr(spec.executor_config, "agent", None)
    opinion = await ask_softly(ask, prompt, spec.timeout_seconds, "verifier", agent)
    if opinion.result is None:
        return dataclasses.replace(outcome, error=opinion.error, call=opinion.call)
    answer = opinion.result.output
    return dataclasses.replace(outcome, score=answer.confidence, summary=answer.summary, call=opinion.call)


def critic_prompt(spec: VerifierSpec, primary: ExecutionResult) -> str:
    answer = answer_for_review(primary)
    transcript = build_transcript(primary.trace, primary.full_tool_results, answer, max_chars=spec.max_trace_chars)
    return render_strict(
        prompt_template("critic"),
        {
            "task": primary.prompt,
            "answer": json.dumps(answer, ensure_ascii=False, separators=(",", ":")),
            "transcript": transcript.text,
            "truncated_events": transcript.truncated_events,
        },
    )


def independent_prompt(primary: ExecutionResult) -> str:
    return render_strict(prompt_template("independent"), {"task": primary.prompt})
