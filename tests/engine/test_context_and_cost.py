"""The template context of a step, and pricing usage."""

from __future__ import annotations

from datetime import UTC, datetime

from vectorstep.domain.execution import ModelUsage, Usage
from vectorstep.engine.context import RunState
from vectorstep.engine.cost import cost_of
from vectorstep.intake.alertmanager import normalise_alertmanager
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.service import PricingSpec
from vectorstep.templating import render_prompt
from vectorstep.testing import alertmanager_payload


def state() -> RunState:
    pipeline = PipelineSpec.model_validate(
        {
            "name": "p",
            "stage": "production",
            "vars": {"runbook": "https://rb"},
            "context_template": {"include": ["severity", "labels.service", "metadata.receiver", "labels.missing"]},
            "steps": [{"name": "a", "executor": "notify", "executor_config": {"url": "u"}}],
        }
    )
    context = normalise_alertmanager(alertmanager_payload(), datetime(2026, 1, 1, tzinfo=UTC), team="sre")
    run = RunState("run-1", pipeline, "production", context)
    run.record_output("first-line-triage", {"summary": "s", "confidence": 0.8})
    return run


def test_every_name_of_the_step_context() -> None:
    template = (
        "{{ pipeline_run_id }}|{{ pipeline_name }}|{{ current_step }}|{{ stage }}|{{ _testing }}|{{ team }}|"
        "{{ severity }}|{{ service }}|{{ labels.service }}|{{ receiver }}|{{ metadata.receiver }}|"
        "{{ context.summary }}|{{ runbook }}|{{ steps.first_line_triage.summary }}|"
        "{{ steps['first-line-triage'].confidence }}"
    )
    text, warnings = render_prompt(template, state().step_context("b"))
    assert text == (
        "run-1|p|b|production|False|sre|critical|checkout|checkout|vectorstep|vectorstep|"
        "5xx rate above 2% on checkout|https://rb|s|0.8"
    )
    assert warnings == []


def test_an_include_that_is_not_in_the_context_stays_undefined_and_warns() -> None:
    _, warnings = render_prompt("{{ missing }}", state().step_context("b"))
    assert warnings == ["undefined in template: 'missing' is undefined"]


def test_cost_needs_a_price_for_every_model_used() -> None:
    pricing = PricingSpec.model_validate(
        {
            "models": [
                {"match": {"provider": "openai", "model": "gpt-4.1*"}, "input_per_mtok": 2.0, "output_per_mtok": 8.0}
            ]
        }
    )
    usage = Usage().add("gpt-4.1-mini", ModelUsage(1_000_000, 500_000, 3))
    assert cost_of(pricing, "openai", usage) == 6.0
    assert cost_of(pricing, "anthropic", usage) is None
    assert cost_of(pricing, "openai", usage.add("o3", ModelUsage(10, 10, 1))) is None
    assert cost_of(pricing, "scripted", Usage().add("scripted", ModelUsage(50, 50, 1))) == 0.0
    assert cost_of(pricing, "openai", Usage()) is None
