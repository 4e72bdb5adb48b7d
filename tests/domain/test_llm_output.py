"""The step contract: finding the JSON answer in an agent's text and validating it."""

from __future__ import annotations

import pytest

from vectorstep.domain.llm_output import LLMOutput, find_json_object, parse_llm_output
from vectorstep.errors import LLMParseError, LLMSchemaError

GOOD = '{"confidence": 0.8, "summary": "ok", "next_step_context": ""}'


@pytest.mark.parametrize(
    ("text", "summary"),
    [
        (GOOD, "ok"),
        (f"Here is my answer:\n```json\n{GOOD}\n```\nThanks!", "ok"),
        (
            'I considered {"confidence": 0.1, "summary": "draft", "next_step_context": ""} first.\n'
            'Final: {"confidence": 0.9, "summary": "final", "next_step_context": "x"} done',
            "final",
        ),
        (
            '```\n{"confidence": 0.1, "summary": "a", "next_step_context": ""}\n```\n'
            '```json\n{"confidence": 0.2, "summary": "b", "next_step_context": ""}\n```',
            "b",
        ),
        (
            'Use {braces} in prose, then {"confidence": 0.5, "summary": "nested {ok}", "next_step_context": "",'
            ' "reasoning": {"supports": ["a}b"]}}',
            "nested {ok}",
        ),
    ],
    ids=["whole", "fenced", "last-of-several", "last-fence", "balanced-with-braces-in-strings"],
)
def test_the_last_json_object_in_the_text_is_the_answer(text: str, summary: str) -> None:
    assert parse_llm_output(text).summary == summary


def test_not_first_brace_to_last_brace() -> None:
    # A naive first-{-to-last-} slice would produce invalid JSON here.
    text = 'Checked {cpu} and {mem}. {"confidence": 0.7, "summary": "s", "next_step_context": ""} end}'
    assert find_json_object(text) == {"confidence": 0.7, "summary": "s", "next_step_context": ""}


def test_no_json_raises_parse_error_with_the_whole_raw_text() -> None:
    text = "I could not decide. " * 100
    with pytest.raises(LLMParseError) as raised:
        parse_llm_output(text)
    assert raised.value.raw_text == text
    # The message carries the first 500 characters and says there is more; the error keeps everything.
    assert str(raised.value) == f"no JSON object found in the agent's answer: {text[:500] + '…'!r}"
    with pytest.raises(LLMParseError) as exactly:
        parse_llm_output("x" * 500)
    assert str(exactly.value) == f"no JSON object found in the agent's answer: {'x' * 500!r}"


@pytest.mark.parametrize(
    ("answer", "field"),
    [
        ('{"confidence": 1.5, "summary": "s", "next_step_context": ""}', "confidence"),
        ('{"confidence": -0.1, "summary": "s", "next_step_context": ""}', "confidence"),
        ('{"confidence": "0.9", "summary": "s", "next_step_context": ""}', "confidence"),
        ('{"confidence": true, "summary": "s", "next_step_context": ""}', "confidence"),
        ('{"confidence": NaN, "summary": "s", "next_step_context": ""}', "confidence"),
        ('{"confidence": 0.9, "next_step_context": ""}', "summary"),
        ('{"confidence": 0.9, "summary": "s"}', "next_step_context"),
        ('{"confidence": 0.9, "summary": "s", "next_step_context": "", "proceed": "no"}', "proceed"),
    ],
    ids=["above-1", "below-0", "string", "bool", "nan", "no-summary", "no-context", "proceed-string"],
)
def test_json_that_breaks_the_contract_is_a_schema_error_keeping_the_text(answer: str, field: str) -> None:
    with pytest.raises(LLMSchemaError) as raised:
        parse_llm_output(answer)
    assert raised.value.raw_text == answer
    assert field in str(raised.value)


def test_extra_fields_flow_downstream_but_raw_response_does_not() -> None:
    output = parse_llm_output(
        '{"confidence": 1, "summary": "s", "next_step_context": "", "root_cause": "deploy 8f3a",'
        ' "raw_response": {"huge": true}, "proceed": false, "proceed_reason": "done"}'
    )
    assert output.extras()["root_cause"] == "deploy 8f3a"
    context = output.as_context()
    assert context["root_cause"] == "deploy 8f3a" and "raw_response" not in context
    assert output.proceed is False and output.proceed_reason == "done"
    assert isinstance(output, LLMOutput) and output.confidence == 1.0


def test_the_last_object_is_read_whole_even_when_it_nests_objects() -> None:
    text = (
        'An example: {"confidence": 0.1}. My answer: '
        '{"confidence": 0.8, "summary": "s", "next_step_context": "", "reasoning": {"claims": [{"claim": "c"}]}} done'
    )
    found = find_json_object(text)
    assert found is not None and found["confidence"] == 0.8 and found["reasoning"] == {"claims": [{"claim": "c"}]}


def test_a_schema_error_names_every_field_that_is_wrong_by_its_path() -> None:
    answer = '{"confidence": 2, "summary": "s", "next_step_context": "", "reasoning": {"claims": []}, "proceed": 1}'
    with pytest.raises(LLMSchemaError) as raised:
        parse_llm_output(answer)
    assert str(raised.value) == (
        "the agent's JSON is not a valid step answer: confidence: Input should be less than or equal to 1; "
        "proceed: Input should be a valid boolean"
    )
    assert [(error["loc"], error["msg"], error["type"]) for error in raised.value.errors] == [
        (["confidence"], "Input should be less than or equal to 1", "less_than_equal"),
        (["proceed"], "Input should be a valid boolean", "bool_type"),
    ]


def test_an_artifact_that_is_not_text_does_not_fail_the_answer() -> None:
    # It is left out, with a warning, when the step is recorded (domain.artifacts).
    answer = '{"confidence": 0.5, "summary": "s", "next_step_context": "", "artifacts": {"runbook": 1, "a": "t"}}'
    assert parse_llm_output(answer).artifacts == {"runbook": 1, "a": "t"}


def test_a_fenced_answer_wins_over_an_example_written_after_it() -> None:
    text = (
        'Here is my answer:\n```json\n{"confidence": 0.8, "summary": "s", "next_step_context": ""}\n```\n'
        'An answer with too little evidence would look like {"confidence": 0.1}.'
    )
    assert find_json_object(text) == {"confidence": 0.8, "summary": "s", "next_step_context": ""}


def test_an_answer_wrapped_in_doubled_braces_is_still_found() -> None:
    # Models that have seen templates write `{{ … }}`: the outer brace is not JSON, the object inside is.
    text = 'Result: {{"confidence": 0.8, "summary": "s", "next_step_context": ""}}'
    assert find_json_object(text) == {"confidence": 0.8, "summary": "s", "next_step_context": ""}


ANSWER = '{"confidence": 0.5, "summary": "ok", "next_step_context": ""}'


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("text", "says"),
    [
        ('{"a":' * 20_000, "no JSON object found"),
        ('{"x": ' + "[" * 20_000, "no JSON object found"),
        ("{" * 200_000, "no JSON object found"),
        ('{"' * 100_000, "no JSON object found"),
        ('{"a":' * 3000 + "1" + "}" * 3000, "the agent's JSON nests objects and arrays deeper than 64"),
        (
            ANSWER[:-1] + ', "d": ' + "[" * 70 + "]" * 70 + "}",
            "the agent's JSON nests objects and arrays deeper than 64",
        ),
    ],
    ids=["unclosed-objects", "unclosed-arrays", "braces", "open-keys", "closed-3000-deep", "70-deep"],
)
def test_a_hostile_answer_is_a_parse_error_within_bounds(text: str, says: str) -> None:
    # Nesting past Python's stack raised RecursionError, and a failed decode at each of 200,000 braces
    # took seconds: an agent's answer is untrusted, so it is read within bounds and refused by name.
    with pytest.raises(LLMParseError) as refused:
        parse_llm_output(text)
    assert says in str(refused.value) and refused.value.raw_text == text


def test_an_answer_after_thousands_of_stray_braces_is_still_found() -> None:
    assert parse_llm_output("{" * 50_000 + " and then " + ANSWER).summary == "ok"


def test_an_answer_with_a_long_list_is_kept_whole() -> None:
    # Only nesting is bounded: an answer's length already bounds how many values it holds.
    answer = parse_llm_output(ANSWER[:-1] + ', "pods": [' + ",".join(["1"] * 100_001) + "]}")
    assert len(answer.extras()["pods"]) == 100_001
