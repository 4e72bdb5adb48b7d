"""The sandboxed templates: lenient prompts with warnings, strict expressions, safe shell values."""

from __future__ import annotations

import shlex
import subprocess
from datetime import date

import pytest

from vectorstep.errors import TemplateError
from vectorstep.templating import (
    NamedMapping,
    evaluate,
    evaluate_condition,
    render_for_shell,
    render_prompt,
    render_strict,
    render_value,
    syntax_error,
)


def step_context() -> dict[str, object]:
    # Built in each test, not at import: `make mutation` only tries a mutant of NamedMapping against
    # the tests it saw construct one.
    return {
        "severity": "critical",
        "labels": NamedMapping("labels", {"service": "checkout"}),
        "steps": NamedMapping(
            "steps", {"triage": NamedMapping("steps.triage", {"summary": "5xx up", "confidence": 0.9})}
        ),
    }


def test_prompt_renders_and_records_every_undefined_name_once() -> None:
    text, warnings = render_prompt(
        "{{ severity }} {{ labels.service }} {{ steps.triage.summary }} {{ steps.invstigate.summary }} "
        "{{ nope }} {{ nope }}",
        step_context(),
    )
    assert text == "critical checkout 5xx up   "
    assert warnings == [
        "undefined in template: 'steps.invstigate' is undefined",
        "undefined in template: 'nope' is undefined",
    ]


def test_expressions_are_strict_about_typos() -> None:
    assert evaluate_condition("steps.triage.confidence > 0.8 and severity == 'critical'", step_context())
    with pytest.raises(TemplateError, match="invstigate"):
        evaluate_condition("steps.invstigate.confidence > 0.8", step_context())
    with pytest.raises(TemplateError, match="undefined"):
        evaluate("sevrity == 'critical'", step_context())


@pytest.mark.parametrize(
    "template",
    [
        "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "{{ labels.__init__.__globals__ }}",
        "{{ cycler.__init__.__globals__.os.popen('id').read() }}",
        "{% set x = labels.update({'service': 'pwned'}) %}{{ labels.service }}",
    ],
    ids=["class-walk", "globals", "os-popen", "mutation"],
)
def test_templates_cannot_escape_the_sandbox(template: str) -> None:
    with pytest.raises(TemplateError):
        render_strict(template, {"labels": {"service": "checkout"}})


def test_render_value_renders_every_string_in_a_payload() -> None:
    payload = {"text": "{{ steps.triage.summary }}", "fields": [{"v": "{{ labels.service }}"}, 3, None]}
    assert render_value(payload, step_context()) == {"text": "5xx up", "fields": [{"v": "checkout"}, 3, None]}


HOSTILE = [
    "; rm -rf /tmp/x",
    "$(id)",
    "`id`",
    "a | cat /etc/passwd",
    "' ; echo pwned '",
    '" && echo pwned "',
    "x\nwhoami",
    "$HOME ${HOME}",
    "a > /tmp/out",
    "& background",
]


@pytest.mark.parametrize("value", HOSTILE)
def test_interpolated_values_are_always_one_literal_shell_argument(value: str) -> None:
    command = render_for_shell("printf '%s|' {{ v }}", {"v": value})
    assert command == f"printf '%s|' {shlex.quote(value)}"
    result = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, check=True)
    assert result.stdout == value + "|"


def test_the_authors_literal_shell_text_is_untouched() -> None:
    command = render_for_shell("echo {{ a }} | tr a-z A-Z && echo done", {"a": "x y"})
    assert command == "echo 'x y' | tr a-z A-Z && echo done"


def test_syntax_errors_are_found_before_running() -> None:
    assert syntax_error("{{ unclosed") is not None
    assert syntax_error("a ==", expression=True) is not None
    assert syntax_error("steps.a.confidence > 0.5", expression=True) is None


def test_tojson_writes_text_not_html_escapes() -> None:
    text, _ = render_prompt("{{ value | tojson }}", {"value": {"expr": "rate > 0.02 & up < 1"}})
    assert text == '{"expr": "rate > 0.02 & up < 1"}'


@pytest.mark.parametrize(
    ("template", "context", "says"),
    [
        ("{{ 'x' * 10**9 }}", {}, "repeating 1 items 1,000,000,000 times is beyond the limit"),
        ("{{ [0] * n }}", {"n": 10**8}, "is beyond the limit"),
        ("{{ 10 ** 100000 }}", {}, "an exponent of 100000 is beyond the limit of 1000"),
        ("{% for i in range(100000) %}{{ 'y' * 100 }}{% endfor %}", {}, "at most 1,000,000"),
        ("{{ count + 1 }}", {"count": "many"}, "TypeError"),  # an agent wrote a word where a number was meant
        ("{{ count | int }}", {"count": "many"}, "'many' is not a number"),
        ("{{ total / count }}", {"total": 3, "count": 0}, "ZeroDivisionError"),
    ],
)
def test_rendering_is_bounded_and_a_hostile_value_fails_the_render_not_the_run(
    template: str, context: dict[str, object], says: str
) -> None:
    for render in (render_prompt, render_strict, render_for_shell):
        with pytest.raises(TemplateError) as raised:
            render(template, context)
        assert says in str(raised.value), render.__name__


@pytest.mark.parametrize(
    ("command", "value", "rendered"),
    [
        ("rm {{ v }}", "-rf", None),  # would be an option
        ("kubectl delete pod {{ v }} -n shop", "--all", None),
        ("rm -- {{ v }}", "-rf", "rm -- -rf"),  # after `--` it is a name
        ("grep --regexp={{ v }} log", "-x", "grep --regexp=-x log"),  # not where a word starts
        ("test {{ v }} -lt 0", "-5", "test -5 -lt 0"),  # a number
        ("echo ok; rm {{ v }}", "-rf", None),  # each command of a line is looked at on its own
        ("{{ v }} --dry-run", "--delete-all", None),  # the first word of the command
    ],
)
def test_a_value_that_would_be_read_as_an_option_is_refused(command: str, value: str, rendered: str | None) -> None:
    if rendered is not None:
        assert render_for_shell(command, {"v": value}) == rendered
        return
    with pytest.raises(TemplateError) as raised:
        render_for_shell(command, {"v": value})
    assert "starts with '-' where a word starts, so the program would read it as an option" in str(raised.value)


def test_tojson_writes_dates_as_text_and_unicode_as_itself() -> None:
    text, _ = render_prompt("{{ value | tojson }}", {"value": {"when": date(2024, 6, 11), "who": "café ☕"}})
    assert text == '{"when": "2024-06-11", "who": "café ☕"}'


def test_a_mapping_default_and_a_missing_subscript_behave_as_written() -> None:
    assert render_strict("{{ labels.get('team', 'none') }}", step_context()) == "none"
    assert render_strict("{{ labels.get('service', 'none') }}", step_context()) == "checkout"
    with pytest.raises(TemplateError) as raised:
        render_strict("{{ steps['typo'].summary }}", step_context())
    assert "'steps.typo' is undefined" in str(raised.value)
    text, warnings = render_prompt("[{{ steps['typo'] }}]", step_context())
    assert text == "[]" and warnings == ["undefined in template: 'steps.typo' is undefined"]


def test_every_value_of_a_command_is_quoted_in_its_place() -> None:
    assert render_for_shell("echo {{ a }} {{ b }}; echo {{ c }}", {"a": "x y", "b": 7, "c": "$HOME"}) == (
        "echo 'x y' 7; echo '$HOME'"
    )


def test_tojson_indents_when_asked() -> None:
    text, _ = render_prompt("{{ value | tojson(2) }}", {"value": {"pod": "a", "restarts": 3}})
    assert text == '{\n  "pod": "a",\n  "restarts": 3\n}'


def test_number_filters_read_numbers_written_as_text() -> None:
    assert evaluate("result | int == 42 and result | int + 1 == 43", {"result": "42"}) is True
    assert evaluate("result | float < 0.05", {"result": " 0.042\n"}) is True
    assert render_strict("{{ count | int * 2 }}", {"count": "21"}) == "42"


def test_arithmetic_within_the_limits_is_plain_arithmetic() -> None:
    assert render_strict("{{ count * 4 }} {{ 2 * 'ab' }} {{ 2 ** 1000 > 10 ** 300 }}", {"count": 3}) == "12 abab True"
    assert evaluate("('ab' * 500000) | length", {}) == 1_000_000  # exactly at the limit is allowed
    with pytest.raises(TemplateError) as raised:
        evaluate("2 ** 1001", {})
    assert "an exponent of 1001 is beyond the limit of 1000" in str(raised.value)


def test_an_expression_that_fails_says_how() -> None:
    with pytest.raises(TemplateError) as raised:
        evaluate("total / count > 1", {"total": 3, "count": 0})
    assert str(raised.value) == "cannot evaluate 'total / count > 1': ZeroDivisionError: division by zero"


def test_text_is_kept_as_written_to_its_last_newline() -> None:
    # A prompt or payload file ends with a newline; the rendered text must too (a here-doc, a signed body).
    assert render_strict("id={{ a }}\n", {"a": 7}) == "id=7\n"
    assert render_prompt("Look at {{ a }}.\n\n", {"a": "checkout"}) == ("Look at checkout.\n\n", [])


def test_subscripts_read_lists_mappings_and_step_outputs() -> None:
    context = {**step_context(), "pods": ["checkout-1", "checkout-2"], "payload": {"alert": "5xx"}}
    assert render_strict("{{ pods[1] }} {{ payload['alert'] }} {{ labels['service'] }}", context) == (
        "checkout-2 5xx checkout"
    )
    with pytest.raises(TemplateError) as raised:
        render_strict("{{ payload['missing'] }}", context)
    assert "has no attribute 'missing'" in str(raised.value)


def test_a_template_is_checked_as_a_template_unless_it_is_an_expression() -> None:
    assert syntax_error("Investigate {{ labels.service }} now") is None
    assert syntax_error("Investigate {{ labels.service }} now", expression=True) is not None
    assert syntax_error("{{ labels.service }") == "unexpected '}'"
