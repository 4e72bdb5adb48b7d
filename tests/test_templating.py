"""The sandboxed templates: lenient prompts with warnings, strict expressions, safe shell values."""

from __future__ import annotations

import shlex
import subprocess

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

CONTEXT = {
    "severity": "critical",
    "labels": NamedMapping("labels", {"service": "checkout"}),
    "steps": NamedMapping("steps", {"triage": NamedMapping("steps.triage", {"summary": "5xx up", "confidence": 0.9})}),
}


def test_prompt_renders_and_records_every_undefined_name_once() -> None:
    text, warnings = render_prompt(
        "{{ severity }} {{ labels.service }} {{ steps.triage.summary }} {{ steps.invstigate.summary }} "
        "{{ nope }} {{ nope }}",
        CONTEXT,
    )
    assert text == "critical checkout 5xx up   "
    assert warnings == [
        "undefined in template: 'steps.invstigate' is undefined",
        "undefined in template: 'nope' is undefined",
    ]


def test_expressions_are_strict_about_typos() -> None:
    assert evaluate_condition("steps.triage.confidence > 0.8 and severity == 'critical'", CONTEXT)
    with pytest.raises(TemplateError, match="invstigate"):
        evaluate_condition("steps.invstigate.confidence > 0.8", CONTEXT)
    with pytest.raises(TemplateError, match="undefined"):
        evaluate("sevrity == 'critical'", CONTEXT)


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
    assert render_value(payload, CONTEXT) == {"text": "5xx up", "fields": [{"v": "checkout"}, 3, None]}


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
