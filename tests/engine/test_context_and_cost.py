"""The template context of a step, and pricing usage."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from tests.conftest import RecordingServer
from tests.fixtures.fake_providers import openai_text
from vectorstep.domain.execution import ModelUsage, Usage
from vectorstep.domain.status import RunStatus
from vectorstep.engine.context import RunState
from vectorstep.engine.cost import cost_of
from vectorstep.engine.services import Engine
from vectorstep.intake.alertmanager import normalise_alertmanager
from vectorstep.intake.generic import manual_context
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.project import load_project
from vectorstep.spec.service import PricingSpec
from vectorstep.spec.settings import load_settings
from vectorstep.templating import render_prompt
from vectorstep.testing import FakeClock, ProjectDir, alertmanager_payload


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


def test_cached_input_has_its_own_price_when_one_is_given() -> None:
    price = {"match": {"model": "gpt-4.1*"}, "input_per_mtok": 2.0, "output_per_mtok": 8.0}
    usage = Usage().add("gpt-4.1", ModelUsage(1_000_000, 0, 1, cached_input_tokens=600_000))
    plain = PricingSpec.model_validate({"models": [price]})
    cached = PricingSpec.model_validate({"models": [{**price, "cached_input_per_mtok": 0.5}]})
    assert cost_of(plain, "openai", usage) == 2.0  # every input token at the input price
    assert cost_of(cached, "openai", usage) == 0.4 * 2.0 + 0.6 * 0.5


@pytest.mark.parametrize(("approx", "status"), [(False, RunStatus.COMPLETED), (True, RunStatus.ABORTED)])
async def test_include_approx_cost_checks_max_usd_on_what_is_priced(
    project: ProjectDir, http_server: RecordingServer, approx: bool, status: RunStatus
) -> None:
    answer_text = json.dumps({"confidence": 0.9, "summary": "ok", "next_step_context": ""})
    http_server.responses = [openai_text(answer_text), openai_text(answer_text), openai_text(answer_text)]
    project.agent("unpriced", {"model": "local/served-model"}, instructions="Answer.")
    project.agent("priced", {"model": "openai/served-model"}, instructions="Answer.")
    steps = [
        {"name": name, "executor": "gateway", "executor_config": {"agent": agent}}
        for name, agent in (("first", "unpriced"), ("second", "priced"), ("third", "priced"))
    ]
    budget = {"max_usd": 0.5, "include_approx_cost": approx}
    project.pipeline("p", {"name": "p", "budget": budget, "steps": steps})
    base_url = f"{http_server.url}/v1"
    project.settings(
        {
            "database": {"url": "sqlite:///./unused.db"},
            "providers": {"openai": {"api_key": "sk-test", "base_url": base_url}, "local": {"base_url": base_url}},
            "pricing": {"models": [{"match": {"provider": "openai"}, "input_per_mtok": 10_000, "output_per_mtok": 0}]},
        }
    )
    loaded = load_project(load_settings(project.config))
    assert loaded.problems == ()
    clock = FakeClock()
    async with Engine(loaded, clock=clock) as engine:
        run = await engine.run(loaded.pipelines["p"].spec, manual_context(clock.now(), summary="x"))
    assert run.status is status and run.cost is None  # the `local` model has no price: the total is unknown
    if approx:
        assert [step.name for step in run.steps] == ["first", "second"]
        assert run.error == (
            "budget exceeded: at least 1.0000 USD spent (some tokens have no price; include_approx_cost), max_usd is 0.5"
        )
