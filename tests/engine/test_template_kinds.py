"""What a service compiles while it warms up: every template of its pipelines, as each is rendered."""

from __future__ import annotations

import pytest

from vectorstep.engine.preflight import template_kinds
from vectorstep.errors import TemplateError
from vectorstep.spec.project import load_project
from vectorstep.spec.settings import load_settings
from vectorstep.templating import prepare, render_prompt
from vectorstep.testing import ProjectDir, answer


def test_each_template_of_a_pipeline_is_compiled_as_it_is_rendered(project: ProjectDir) -> None:
    project.scripted_agent("triage", answer(0.9, "looked"))
    step = {
        "name": "triage",
        "executor": "gateway",
        "executor_config": {"agent": "triage"},
        "prompt_template": "Why is {{ summary }} failing?",
        "when": "summary != ''",
        "deterministic_checks": [
            {"type": "shell", "name": "echo", "run": "echo {{ steps.triage.summary }}", "expect": "exit_code == 0"},
            {"type": "shell", "name": "argv", "argv": ["echo", "{{ steps.triage.summary }}"]},
            {"type": "webhook", "name": "probe", "url": "http://127.0.0.1:9/runs/{{ run_id }}"},
        ],
    }
    notify = {"escalate": [{"channel": "log", "template": "{{ step_name }} escalated"}]}
    project.pipeline("p", {"name": "p", "notifications": notify, "steps": [step]})
    project.settings({"database": {"url": "sqlite:///./unused.db"}})
    loaded = load_project(load_settings(project.config))
    assert loaded.problems == ()
    assert sorted(template_kinds(loaded.pipelines["p"])) == [
        ("Why is {{ summary }} failing?", "prompt"),
        ("echo {{ steps.triage.summary }}", "shell"),  # rendered with every value shell-quoted
        ("exit_code == 0", "expression"),
        ("http://127.0.0.1:9/runs/{{ run_id }}", "strict"),
        ("response.status_code < 400", "expression"),  # the webhook check's default `expect`
        ("summary != ''", "expression"),
        ("{{ step_name }} escalated", "prompt"),
        ("{{ steps.triage.summary }}", "strict"),  # an argv item: one argument, as it is
    ]


def test_a_template_that_does_not_compile_is_left_for_its_render_to_report() -> None:
    prepare("{{ summary", "prompt")  # the warm-up goes on
    with pytest.raises(TemplateError):
        render_prompt("{{ summary", {"summary": "x"})
