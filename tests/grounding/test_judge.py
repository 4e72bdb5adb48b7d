"""The grounding judge in process: what G is, what the judge is shown, and how a bad judge is read.

The judge model is outside VectorStep; `ScriptedJudge` stands in for it and answers as written.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from vectorstep.domain.execution import ExecutionResult
from vectorstep.domain.llm_output import LLMOutput
from vectorstep.domain.signals import GroundingOutcome
from vectorstep.domain.trace import TraceEvent, cap_text
from vectorstep.errors import ExecutorError
from vectorstep.grounding.judge import MAX_CLAIM_CHARS, MAX_CLAIMS_EXAMINED, answer_for_review, judge_grounding
from vectorstep.spec.trust_blocks import GroundingSpec

TASK = "Investigate the checkout 5xx alert (service checkout, env prod)."
RESULT = (
    '{"service": "checkout", "error_rate": 0.042, "pod": "checkout-7d9f-x2kqp", "restarts": 3, "deploy": "dep-4940"}'
)
LOG = "\n".join(
    [f"2026-06-12T14:{minute:02d}:00Z INFO checkout request ok latency_ms=42" for minute in range(60)]
    + ["2026-06-12T14:02:17Z ERROR connection pool exhausted pod=checkout-7d9f6b5c4-x2kqp"]
)
JUDGE = GroundingSpec.model_validate({"enforce": True})


def event(type_: str, seq: int, **fields: Any) -> TraceEvent:
    return TraceEvent(type=type_, seq=seq, ts="2026-06-12T14:10:00+00:00", **fields)


def tool_trace(content: str = RESULT, **result_fields: Any) -> tuple[TraceEvent, ...]:
    return (
        event("llm_call", 1, model="m"),
        event("tool_call", 2, call_id="c1", name="metrics__query", args={"q": "rate"}),
        event("tool_result", 3, call_id="c1", name="metrics__query", content=content, **result_fields),
        event("llm_call", 4, model="m"),
    )


def primary(
    trace: tuple[TraceEvent, ...] | None = None, full: dict[str, str] | None = None, **answer: Any
) -> ExecutionResult:
    output = LLMOutput.model_validate(
        {"confidence": 0.9, "summary": "5xx at 4.2% on checkout-7d9f-x2kqp", "next_step_context": "", **answer}
    )
    return ExecutionResult(
        output,
        TASK,
        output.model_dump_json(),
        1.0,
        trace=tool_trace() if trace is None else trace,
        full_tool_results=full or {},
    )


class ScriptedJudge:
    def __init__(self, answer: dict[str, Any] | Exception) -> None:
        self.answer = answer
        self.prompts: list[str] = []

    async def __call__(self, prompt: str, timeout_seconds: float) -> ExecutionResult:
        self.prompts.append(prompt)
        if isinstance(self.answer, Exception):
            raise self.answer
        text = json.dumps(self.answer)
        return ExecutionResult(
            LLMOutput.model_validate(self.answer), prompt, text, 1.0, model="judge-model", provider="fake"
        )


def verdicts(*claims: Any, confidence: float = 0.9) -> ScriptedJudge:
    return ScriptedJudge(
        {
            "confidence": confidence,
            "summary": "judged",
            "next_step_context": "",
            "reasoning": {"claims": list(claims)},
        }
    )


def claim(text: str, supported: Any, evidence: str = "") -> dict[str, Any]:
    return {"claim": text, "supported": supported, "evidence": evidence}


async def judged(
    judge: ScriptedJudge, step: ExecutionResult | None = None, spec: GroundingSpec = JUDGE
) -> GroundingOutcome:
    return await judge_grounding(spec, step or primary(), judge)


async def test_g_is_the_share_of_claims_supported_not_the_judges_own_figure() -> None:
    judge = verdicts(
        claim("5xx at 4.2%", True, '"error_rate": 0.042'),
        claim("checkout-7d9f-x2kqp was OOMKilled", False),
        claim("the database is healthy", False),
        claim("the rollback is safe", False),
        confidence=0.9,
    )
    outcome = await judged(judge)
    assert (outcome.computed, outcome.reason, outcome.score, outcome.judge_reported_score) == (
        True,
        "computed",
        0.25,
        0.9,
    )
    assert outcome.score_mismatch and outcome.enforce and outcome.error is None
    assert [(found.claim, found.supported) for found in outcome.claims] == [
        ("5xx at 4.2%", True),
        ("checkout-7d9f-x2kqp was OOMKilled", False),
        ("the database is healthy", False),
        ("the rollback is safe", False),
    ]
    assert outcome.summary == "judged"
    assert (outcome.call.agent, outcome.call.model, outcome.call.provider) == ("grounding-judge", "judge-model", "fake")
    assert outcome.call.prompt == judge.prompts[0]


async def test_only_a_claim_with_text_and_a_real_boolean_counts() -> None:
    outcome = await judged(
        verdicts(
            claim("5xx at 4.2%", True),
            claim("the deploy dep-4941 caused it", "true"),  # a string is not a verdict
            claim("the pool is fine", "false"),
            claim("", True),
            {"supported": True},
            "checkout restarted",
            claim("checkout-7d9f-x2kqp restarted 3 times", False),
        )
    )
    assert [(found.claim, found.supported) for found in outcome.claims] == [
        ("5xx at 4.2%", True),
        ("checkout-7d9f-x2kqp restarted 3 times", False),
    ]
    assert outcome.score == 0.5
    assert [found.evidence for found in outcome.claims] == ["", ""]  # none was given


@pytest.mark.parametrize("reasoning", [{"claims": []}, {"claims": "all fine"}, {}, None])
async def test_without_claims_g_is_the_judges_own_figure(reasoning: dict[str, Any] | None) -> None:
    answer: dict[str, Any] = {"confidence": 0.7, "summary": "nothing load-bearing", "next_step_context": ""}
    outcome = await judged(ScriptedJudge({**answer, "reasoning": reasoning}))
    assert outcome.computed and outcome.score == 0.7 and outcome.claims == ()
    assert not outcome.score_mismatch


async def test_no_tool_activity_gives_no_g_and_asks_no_judge() -> None:
    judge = verdicts(claim("x", True))
    talk_only = (event("llm_call", 1, model="m"), event("text", 2, content="I think it is the deploy."))
    outcome = await judged(judge, primary(trace=talk_only))
    assert (outcome.computed, outcome.reason, outcome.score) == (False, "no_trace", None)
    assert (outcome.enforce, outcome.max_trace_chars, outcome.evidence_windows) == (True, 1500, True)  # for the report
    assert judge.prompts == []


async def test_a_failed_judge_gives_no_g_and_says_why() -> None:
    outcome = await judged(ScriptedJudge(ExecutorError("connection refused")), primary(trace=tool_trace(LOG)))
    assert (outcome.computed, outcome.reason, outcome.score) == (False, "error", None)
    assert outcome.error == "grounding failed: connection refused"
    assert outcome.truncated_events == 1 and outcome.call.agent == "grounding-judge"  # what it would have seen


async def test_the_judge_is_shown_the_task_the_answer_and_the_transcript() -> None:
    judge = verdicts(claim("5xx at 4.2%", True))
    await judged(judge, primary(artifacts={"runbook": "r.md"}, service="café ☕", note=""))
    (prompt,) = judge.prompts
    assert TASK in prompt
    assert '{"confidence":0.9,"summary":"5xx at 4.2% on checkout-7d9f-x2kqp","service":"café ☕"}' in prompt
    assert '[1] call metrics__query {"q":"rate"}' in prompt
    assert f"[2] result of [1] metrics__query (ok): {RESULT}" in prompt


def test_the_answer_for_review_leaves_out_what_says_nothing() -> None:
    step = primary(artifacts={"runbook": "r.md"}, proceed=True, reasoning={}, extra=[0], blank=None)
    assert answer_for_review(step) == {
        "confidence": 0.9,
        "summary": "5xx at 4.2% on checkout-7d9f-x2kqp",
        "extra": [0],
    }
    held_back = primary(proceed=False, proceed_reason="needs a human")
    assert answer_for_review(held_back)["proceed"] is False  # a step that holds back says so


async def test_each_claim_is_located_and_checked_without_a_model() -> None:
    outcome = await judged(
        verdicts(
            claim("checkout-7d9f-x2kqp restarted 3 times", True, '"restarts": 3'),
            claim("deploy dep-4941 went out at 14:00", True, "dep-4941 at 14:00"),
            claim("error rate is 9.9%", False),
        )
    )
    located, invented, unsupported = outcome.claims
    assert located.evidence_pointer is not None and located.evidence_pointer.call_id == "c1"
    assert not located.evidence_not_found and located.local is not None and located.local.verdict == "supported"
    assert invented.evidence_not_found and invented.evidence_pointer is None  # the judge's evidence is nowhere
    assert invented.local is not None and invented.local.verdict == "unsupported"
    assert unsupported.evidence_pointer is None and not unsupported.evidence_not_found
    assert unsupported.local is not None and unsupported.local.verdict == "unsupported"


async def test_a_claim_is_located_by_its_own_words_and_in_the_result_the_judge_names() -> None:
    trace = (
        *tool_trace(),
        event("tool_call", 5, call_id="c2", name="metrics__query", args={"q": "rate", "again": True}),
        event("tool_result", 6, call_id="c2", name="metrics__query", content=RESULT),
    )
    outcome = await judged(
        verdicts(
            claim("checkout-7d9f-x2kqp restarted 3 times", True),  # no evidence given: its anchors find it
            claim("the error rate was 0.042", True, '[4] "error_rate": 0.042'),  # entry 4 is the second call's
            claim("checkout-7d9f-x2kqp restarted 3 times", False),  # rejected: not pointed at
        ),
        primary(trace=trace),
    )
    by_words, named, rejected = outcome.claims
    assert by_words.evidence_pointer is not None and by_words.evidence_pointer.call_id == "c1"
    assert named.evidence_pointer is not None and named.evidence_pointer.call_id == "c2"
    assert rejected.evidence_pointer is None and rejected.local is not None


async def test_an_unsupported_claim_whose_evidence_was_cut_is_flagged() -> None:
    spec = GroundingSpec.model_validate({"max_trace_chars": 200, "evidence_windows": False})
    outcome = await judged(
        verdicts(
            claim("connection pool exhausted on checkout-7d9f6b5c4-x2kqp", False),  # its pod is past the cut
            claim("latency_ms=42 at 2026-06-12T14:00:00Z", False),  # all of it was shown
            claim("the service is unhealthy", False),  # nothing to look for: cannot tell
            claim("requests succeed", True),
        ),
        primary(trace=tool_trace(LOG), full={"c1": LOG}),
        spec,
    )
    cut, shown, vague, supported = outcome.claims
    assert outcome.truncated_events == 1 and outcome.cut_by_runtime == 0
    assert cut.possible_truncation_artefact and cut.evidence_in_omitted_text
    assert not shown.possible_truncation_artefact and not shown.evidence_in_omitted_text
    assert vague.possible_truncation_artefact and not vague.evidence_in_omitted_text
    assert not supported.possible_truncation_artefact


async def test_nothing_is_flagged_when_nothing_was_cut() -> None:
    outcome = await judged(verdicts(claim("the service is unhealthy", False)))
    assert outcome.truncated_events == 0 and not outcome.claims[0].possible_truncation_artefact


async def test_the_runtime_s_cut_is_counted_when_only_its_copy_exists() -> None:
    capped, original = cap_text(LOG, 500)
    step = primary(trace=tool_trace(capped, original_chars=original))
    judge = verdicts(claim("connection pool exhausted", False))
    outcome = await judged(judge, step)
    assert (outcome.truncated_events, outcome.cut_by_runtime) == (1, 1)
    assert LOG.splitlines()[0] in judge.prompts[0]  # shown the copy there is, never nothing
    assert outcome.claims[0].possible_truncation_artefact


async def test_an_untrusted_judge_answer_is_examined_within_bounds() -> None:
    many = [claim(f"checkout-7d9f-x2kqp restarted {number} times", number % 2 == 0) for number in range(150)]
    outcome = await judged(verdicts(*many, claim("x" * 5000, True)))
    assert len(outcome.claims) == 151 and outcome.score == pytest.approx(76 / 151)  # G counts every claim
    assert all(found.local is not None for found in outcome.claims[:MAX_CLAIMS_EXAMINED])
    assert all(found.local is None for found in outcome.claims[MAX_CLAIMS_EXAMINED:])
    assert len(outcome.claims[-1].claim) == MAX_CLAIM_CHARS


async def test_the_judge_is_the_agent_its_executor_names() -> None:
    spec = GroundingSpec.model_validate({"agent": "sre-judge", "executor_config": {"agent": "strict-judge"}})
    named = await judged(verdicts(claim("5xx at 4.2%", True)), spec=spec)
    default = await judged(
        verdicts(claim("5xx at 4.2%", True)), spec=GroundingSpec.model_validate({"agent": "sre-judge"})
    )
    assert (named.call.agent, default.call.agent) == ("strict-judge", "sre-judge")


LOCAL = GroundingSpec.model_validate({"executor": "local", "enforce": True})


async def test_with_executor_local_no_judge_is_asked_even_when_one_is_configured() -> None:
    judge = verdicts(claim("5xx at 4.2%", True))
    outcome = await judge_grounding(LOCAL, primary(reasoning={"supports": ["error rate is 4.2%"]}), judge)
    assert judge.prompts == [] and outcome.executor == "local" and outcome.score == 1.0


async def test_without_a_judge_the_anchor_check_gives_g_from_the_answer_s_statements() -> None:
    supports = [
        "checkout-7d9f-x2kqp restarted 3 times",
        "error rate is 4.2%",
        "deploy dep-4941 caused it",
        "the service is unhealthy",
    ]
    outcome = await judge_grounding(LOCAL, primary(reasoning={"supports": supports}), None)
    assert (outcome.computed, outcome.reason, outcome.executor) == (True, "computed", "local")
    assert outcome.score == pytest.approx(2 / 3)  # the undecidable statement is not counted
    assert outcome.summary == (
        "2 of 3 checkable statements are backed by the tool results; 1 could not be checked without a model"
    )
    assert [(found.claim, found.supported) for found in outcome.claims] == [
        ("checkout-7d9f-x2kqp restarted 3 times", True),
        ("error rate is 4.2%", True),
        ("deploy dep-4941 caused it", False),
        ("the service is unhealthy", False),
    ]
    assert [found.local.verdict for found in outcome.claims if found.local] == [
        "supported",
        "supported",
        "unsupported",
        "undecidable",
    ]
    assert outcome.claims[2].evidence == "`dep-4941` is in no tool result"


async def test_the_anchor_check_says_when_it_could_decide_nothing() -> None:
    vague = await judge_grounding(LOCAL, primary(summary="x", reasoning={"supports": ["it looks unhealthy"]}), None)
    assert (vague.computed, vague.reason, vague.score) == (False, "undecidable", None)
    assert [found.claim for found in vague.claims] == ["it looks unhealthy"]
    everything = await judge_grounding(
        LOCAL, primary(summary="x", reasoning={"supports": ["error rate is 4.2%"]}), None
    )
    assert everything.summary == "1 of 1 checkable statements are backed by the tool results"
    assert everything.score == 1.0


async def test_the_anchor_check_reads_the_answer_s_own_fields_by_their_values() -> None:
    step = primary(summary="x", pod="checkout-7d9f-x2kqp", deploy="dep-4941")
    outcome = await judge_grounding(LOCAL, step, None)
    # An id that is there is not evidently the thing the field names; one that is nowhere is unsupported.
    assert [(found.claim, found.local.verdict if found.local else None) for found in outcome.claims] == [
        ("pod: checkout-7d9f-x2kqp", "undecidable"),
        ("deploy: dep-4941", "unsupported"),
    ]
    assert (outcome.computed, outcome.score) == (True, 0.0)
    silent = await judge_grounding(LOCAL, primary(summary="x"), None)
    assert (silent.computed, silent.reason, silent.score, silent.claims) == (False, "no_claims", None, ())
