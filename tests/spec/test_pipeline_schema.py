"""The whole pipeline schema of SYSTEM.md §3 parses; mistakes are located and explained."""

from __future__ import annotations

from pathlib import Path

import pytest

from vectorstep.errors import ConfigError, Problem
from vectorstep.spec.executor_config import GatewayConfig, NotifyConfig, PipelineConfig
from vectorstep.spec.pipelines import load_pipeline, load_step_library
from vectorstep.spec.steps import FanOutItem, ParallelItem, StepSpec
from vectorstep.spec.trust_blocks import HumanCheckSpec, ShellCheckSpec, WebhookCheckSpec

EVERY_KEY = """\
name: full-pipeline
description: every key of the schema
tags: [sre, checkout]
version: 3
stage: production
priority: 10
trigger:
  match:
    severity: critical
    labels.service: {in: [checkout, cart]}
    labels.env: {ne: staging}
    metadata.alert_count: {gte: 1, lt: 100}
    summary: {regex: "5xx|latency"}
  dedup: {enabled: true, window_seconds: 600}
vars: {runbook: "https://runbooks.example/checkout"}
context_template: {include: [severity, summary, labels.service]}
schedule: {cron: "*/15 * * * *", summary: "periodic check", severity: info, labels: {service: checkout}, team: sre}
budget: {max_tokens: 200000, max_usd: 2.5, include_approx_cost: true}
durable: {on_interrupted: rerun, max_resume_age_seconds: 900}
notifications:
  escalate:
    - {channel: slack, template: "Escalated: {{ step_summary }}", config: {channel: "#sre"}}
  notify:
    - {channel: log}
steps:
  - name: triage
    executor: gateway
    executor_config: {agent: triage, model: scripted, thinking_level: low, trace_max_chars: 6000, session_key: s1, timeout_seconds: 60}
    prompt_template: "Triage {{ summary }}"
    confidence_threshold: 0.6
    on_low_confidence: proceed
    on_abort: page
    when: "severity == 'critical'"
    timeout_seconds: 90
    retry: {attempts: 2, backoff: fixed, delay_seconds: 0.5}
    on_failure: continue
    loop_until: {confidence: 0.8, max_iterations: 2}
    calibration: {enforce: true, on_uncalibrated: escalate}
  - name: investigate
    executor: gateway
    executor_config: {agent: investigator}
    verifier:
      executor: gateway
      executor_config: {agent: critic}
      mode: reviewer
      combination_strategy: veto
      veto_floor: 0.5
      trigger: {always: false, confidence_below: 0.95, confidence_above: 0.3}
      max_trace_chars: 2000
    grounding: {agent: judge, timeout_seconds: 30, max_trace_chars: 4000, enforce: true, evidence_windows: false}
    deterministic_checks:
      - {type: shell, name: still_breaching, run: "echo {{ steps.triage.summary }}", expect: "result | float > 0.02", timeout_seconds: 5}
      - {type: shell, name: argv_form, argv: [curl, -s, "{{ labels.service }}"]}
      - {type: webhook, name: dashboard, url: "https://grafana/api/{{ steps.triage.uid }}", method: GET, headers: {X: y}, expect: "response.status_code == 200"}
      - {type: human, name: signoff, message: "Approve {{ steps.triage.summary }}?", timeout_seconds: 120}
    on_failure:
      policy: abort
      webhook: {url: "https://hooks.example/fail", method: POST, headers: {A: b}, payload: {text: "{{ current_step }} failed"}, timeout_seconds: 5}
  - parallel:
      name: checks
      join: weighted_average
      confidence_threshold: 0.7
      on_low_confidence: abort
      on_abort: page
      timeout_seconds: 120
      when: "true"
      steps:
        - {name: db, executor: gateway, executor_config: {agent: dba}, weight: 2.0}
        - {name: net, executor: webhook, executor_config: {url: "http://probe.local/net"}}
  - fan_out:
      name: per-pod
      over: "steps.investigate.pods"
      as: pod
      executor: gateway
      executor_config: {agent: pod-inspector}
      prompt_template: "Inspect {{ pod }} ({{ fan_out_index }}/{{ fan_out_total }})"
      join: any_must_pass
      max_items: 5
      on_empty: skip
      grounding: {}
      retry: {attempts: 2}
  - name: tell
    executor: notify
    executor_config: {url: "https://hooks.example/x", payload: {text: "{{ steps.investigate.summary }}"}}
  - name: human-ok
    executor: human
    executor_config: {message: "ok?", team: sre, timeout_seconds: 600}
  - name: child
    executor: pipeline
    executor_config: {pipeline: other, payload: {summary: "{{ summary }}"}}
  - name: post
    executor: webhook
    executor_config: {url: "http://x/y", method: PUT, headers: {A: b}, timeout_seconds: 3}
  - name: claw
    executor: openclaw
    executor_config: {agent: remote-agent}
"""


def write(tmp_path: Path, text: str, name: str = "pipeline.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def problems_of(tmp_path: Path, text: str) -> list[Problem]:
    with pytest.raises(ConfigError) as raised:
        load_pipeline(write(tmp_path, text), {})
    return list(raised.value.problems)


def test_every_key_of_the_schema_parses_into_typed_frozen_models(tmp_path: Path) -> None:
    spec = load_pipeline(write(tmp_path, EVERY_KEY), {}).spec
    assert spec.stage == "production" and spec.priority == 10 and spec.version == 3
    assert spec.budget is not None and spec.budget.max_usd == 2.5
    assert spec.durable is not None and spec.durable.on_interrupted == "rerun"
    triage, investigate, group, fan_out, tell, *_ = spec.steps
    assert isinstance(triage, StepSpec) and isinstance(triage.executor_config, GatewayConfig)
    assert triage.executor_config.trace_max_chars == 6000
    assert triage.on_failure.policy == "continue" and triage.retry is not None and triage.retry.backoff == "fixed"
    assert isinstance(investigate, StepSpec) and investigate.verifier is not None
    assert investigate.verifier.mode == "critic"  # `reviewer` is accepted as `critic`
    assert investigate.grounding is not None and investigate.grounding.enforce
    assert isinstance(investigate.grounding.executor_config, GatewayConfig)
    assert investigate.grounding.executor_config.agent == "judge"
    kinds = [type(check) for check in investigate.deterministic_checks]
    assert kinds == [ShellCheckSpec, ShellCheckSpec, WebhookCheckSpec, HumanCheckSpec]
    assert investigate.on_failure.webhook is not None
    assert isinstance(group, ParallelItem) and group.parallel.steps[0].weight == 2.0
    assert isinstance(fan_out, FanOutItem) and fan_out.fan_out.as_ == "pod"
    assert fan_out.fan_out.grounding is not None and fan_out.fan_out.grounding.agent == "grounding-judge"
    assert isinstance(tell, StepSpec) and isinstance(tell.executor_config, NotifyConfig)
    child = next(step for step in spec.steps if isinstance(step, StepSpec) and step.name == "child")
    assert isinstance(child.executor_config, PipelineConfig)
    assert child.executor_config.context == {"summary": "{{ summary }}"}  # `payload`, the older name of `context`
    with pytest.raises(ValueError, match="frozen"):
        triage.name = "renamed"  # type: ignore[misc]


def test_defaults_match_the_specification(tmp_path: Path) -> None:
    text = "name: p\nsteps:\n  - {name: s, executor: gateway, executor_config: {agent: a}}\n"
    spec = load_pipeline(write(tmp_path, text), {}).spec
    (step,) = spec.steps
    assert isinstance(step, StepSpec)
    assert spec.stage == "testing" and spec.priority == 0 and spec.version == 1
    assert step.confidence_threshold == 0.75 and step.on_low_confidence == "escalate"
    assert step.on_abort == "notify" and step.on_failure.policy == "abort"
    assert isinstance(step.executor_config, GatewayConfig) and step.executor_config.timeout_seconds == 1200


def test_unknown_key_is_rejected_with_a_suggestion_and_its_line(tmp_path: Path) -> None:
    text = (
        "name: p\nsteps:\n  - name: s\n    executor: gateway\n    executor_config: {agent: a}\n    promt_template: hi\n"
    )
    (problem,) = problems_of(tmp_path, text)
    assert problem.line == 6
    assert problem.key_path == "steps[0].promt_template"
    assert "did you mean 'prompt_template'" in problem.message


def test_unknown_key_inside_executor_config_lists_that_executors_keys(tmp_path: Path) -> None:
    text = "name: p\nsteps:\n  - name: s\n    executor: gateway\n    executor_config:\n      agent: a\n      modle: x\n"
    (problem,) = problems_of(tmp_path, text)
    assert (problem.line, problem.key_path) == (7, "steps[0].executor_config.modle")
    assert "did you mean 'model'" in problem.message
    assert "trace_max_chars" in problem.message and "executor" not in problem.message.split("expected one of:")[1]


def test_misspelt_executor_is_reported_once_with_a_suggestion(tmp_path: Path) -> None:
    text = "name: p\nsteps:\n  - name: s\n    executor: gatewy\n    executor_config: {agent: a}\n"
    (problem,) = problems_of(tmp_path, text)
    assert (problem.line, problem.key_path) == (4, "steps[0].executor")
    assert "did you mean 'gateway'" in problem.message


def test_every_problem_in_a_file_is_reported_at_once(tmp_path: Path) -> None:
    text = """\
name: p
stage: prod
steps:
  - name: a
    executor: gateway
    executor_config: {}
    confidence_threshold: 1.5
  - name: b
    executor: gateway
    executor_config: {agent: x}
    deterministic_checks:
      - {type: shel, name: c, run: x}
      - {type: shell, name: d}
    on_failure: explode
"""
    found = {(problem.line, problem.key_path) for problem in problems_of(tmp_path, text)}
    assert found == {
        (2, "stage"),
        (6, "steps[0].executor_config.agent"),
        (7, "steps[0].confidence_threshold"),
        (12, "steps[1].deterministic_checks[0].type"),
        (13, "steps[1].deterministic_checks[1]"),
        (14, "steps[1].on_failure.policy"),
    }


@pytest.mark.parametrize(
    ("snippet", "message"),
    [
        (
            "  - {name: a, executor: gateway, executor_config: {agent: x}}\n  - {name: a, executor: notify, executor_config: {url: u}}\n",
            "unique",
        ),
        (
            "  - {name: first-step, executor: gateway, executor_config: {agent: x}}\n  - {name: first_step, executor: gateway, executor_config: {agent: x}}\n",
            "differ only",
        ),
        ("  - {name: 'has space', executor: gateway, executor_config: {agent: x}}\n", "pattern"),
        (
            "  - {name: a, executor: gateway, executor_config: {agent: x}, retry: {attempts: 0}}\n",
            "greater than or equal to 1",
        ),
    ],
    ids=["duplicate-names", "hyphen-underscore-clash", "bad-name", "zero-attempts"],
)
def test_invalid_steps_are_explained(tmp_path: Path, snippet: str, message: str) -> None:
    problems = problems_of(tmp_path, "name: p\nsteps:\n" + snippet)
    assert any(message in problem.message for problem in problems), problems


def test_budget_needs_a_limit_and_cron_needs_five_fields(tmp_path: Path) -> None:
    text = "name: p\nbudget: {include_approx_cost: true}\nschedule: {cron: '* *'}\nsteps:\n  - {name: a, executor: gateway, executor_config: {agent: x}}\n"
    messages = {problem.key_path: problem.message for problem in problems_of(tmp_path, text)}
    assert "at least one limit" in messages["budget"]
    assert "5-field cron" in messages["schedule.cron"]


def test_match_conditions_check_their_operators(tmp_path: Path) -> None:
    text = "name: p\ntrigger:\n  match:\n    labels.service: {inn: [a]}\n    summary: {regex: '('}\nsteps:\n  - {name: a, executor: gateway, executor_config: {agent: x}}\n"
    messages = {problem.key_path: problem.message for problem in problems_of(tmp_path, text)}
    assert "did you mean 'in'" in messages["trigger.match.labels.service.inn"]
    assert "invalid regular expression" in messages["trigger.match.summary.regex"]


def library(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "steps"
    folder.mkdir()
    for name, text in files.items():
        (folder / f"{name}.yaml").write_text(text, encoding="utf-8")
    return folder


def test_use_takes_a_library_step_local_keys_win_and_executor_config_merges(tmp_path: Path) -> None:
    steps = library(
        tmp_path,
        {
            "notify-sre": "description: tell the SRE channel\nexecutor: notify\n"
            "executor_config: {url: 'https://hooks/sre', method: PUT, payload: {text: hi}}\nconfidence_threshold: 0.5\n"
        },
    )
    found, problems = load_step_library(steps)
    assert problems == []
    text = "name: p\nsteps:\n  - use: notify-sre\n    name: tell\n    executor_config: {method: POST}\n    confidence_threshold: 0.9\n"
    (step,) = load_pipeline(write(tmp_path, text), found).spec.steps
    assert isinstance(step, StepSpec) and isinstance(step.executor_config, NotifyConfig)
    assert step.name == "tell" and step.confidence_threshold == 0.9
    assert step.executor_config.method == "POST"  # local key wins
    assert step.executor_config.url == "https://hooks/sre"  # the rest comes from the library
    assert step.description == "tell the SRE channel"


def test_a_library_step_without_a_name_takes_its_file_name(tmp_path: Path) -> None:
    found, _ = load_step_library(library(tmp_path, {"page-oncall": "executor: notify\nexecutor_config: {url: u}\n"}))
    (step,) = load_pipeline(write(tmp_path, "name: p\nsteps:\n  - use: page-oncall\n"), found).spec.steps
    assert isinstance(step, StepSpec) and step.name == "page-oncall"


def test_unknown_use_is_a_load_error_with_a_suggestion(tmp_path: Path) -> None:
    found, _ = load_step_library(library(tmp_path, {"notify-sre": "executor: notify\nexecutor_config: {url: u}\n"}))
    with pytest.raises(ConfigError) as raised:
        load_pipeline(write(tmp_path, "name: p\nsteps:\n  - use: notify-sr\n"), found)
    (problem,) = raised.value.problems
    assert (problem.line, problem.key_path) == (3, "steps[0].use")
    assert "did you mean 'notify-sre'" in problem.message


def test_a_mistake_coming_from_the_library_points_into_the_library_file(tmp_path: Path) -> None:
    steps = library(tmp_path, {"probe": "executor: webhook\nexecutor_config: {url: 'http://x'}\n"})
    found, _ = load_step_library(steps)
    text = "name: p\nsteps:\n  - use: probe\n    executor: gateway\n"
    problems = problems_of_with_library(tmp_path, text, found)
    # the library's webhook config is not a gateway config: the offending keys are in the library file
    assert {(problem.key_path, problem.line) for problem in problems} == {
        ("steps[0].executor_config.agent", 2),
        ("steps[0].executor_config.url", 2),
    }
    assert all(problem.file.endswith("probe.yaml") for problem in problems)


def problems_of_with_library(tmp_path: Path, text: str, found: dict[str, object]) -> list[Problem]:
    with pytest.raises(ConfigError) as raised:
        load_pipeline(write(tmp_path, text), found)  # type: ignore[arg-type]
    return list(raised.value.problems)


def test_a_broken_library_file_is_reported_with_its_own_location(tmp_path: Path) -> None:
    steps = library(tmp_path, {"bad": "executor: notify\nexecutor_config: {url: u, colour: red}\n"})
    found, problems = load_step_library(steps)
    assert found == {}
    (problem,) = problems
    assert problem.file.endswith("bad.yaml") and problem.line == 2 and "colour" in problem.key_path


def test_a_misspelt_executor_config_points_at_the_missing_block(tmp_path: Path) -> None:
    text = "name: p\nsteps:\n  - name: s\n    executor: webhook\n    executor_confg: {url: 'http://x'}\n"
    found = {(problem.line, problem.key_path) for problem in problems_of(tmp_path, text)}
    assert found == {(5, "steps[0].executor_confg"), (3, "steps[0].executor_config.url")}


def test_a_parallel_branch_refuses_keys_it_would_ignore(tmp_path: Path) -> None:
    text = (
        "name: p\nsteps:\n  - parallel:\n      name: g\n      steps:\n"
        "        - {name: a, executor: webhook, executor_config: {url: u}, on_low_confidence: abort}\n"
    )
    (problem,) = problems_of(tmp_path, text)
    assert problem.key_path == "steps[0].parallel.steps[0].on_low_confidence"
    assert "unknown key" in problem.message and "weight" in problem.message


def test_a_verifier_band_that_can_never_fire_is_refused(tmp_path: Path) -> None:
    text = (
        "name: p\nsteps:\n  - name: s\n    executor: gateway\n    executor_config: {agent: a}\n"
        "    verifier:\n      executor_config: {agent: c}\n      trigger: {confidence_above: 0.9, confidence_below: 0.5}\n"
    )
    (problem,) = problems_of(tmp_path, text)
    assert problem.key_path == "steps[0].verifier.trigger" and "never fires" in problem.message


def test_a_notification_may_be_one_target_or_a_list(tmp_path: Path) -> None:
    text = (
        "name: p\nnotifications:\n  escalate: {channel: telegram, template: 'Escalated: {{ escalation_reason }}'}\n"
        "  stopped:\n    - {channel: log}\n    - {channel: webhook, template: stopped}\n"
        "steps:\n  - {name: a, executor: gateway, executor_config: {agent: x}}\n"
    )
    spec = load_pipeline(write(tmp_path, text), {}).spec
    assert [target.channel for target in spec.notifications["escalate"]] == ["telegram"]
    assert spec.notifications["escalate"][0].template == "Escalated: {{ escalation_reason }}"
    assert [target.channel for target in spec.notifications["stopped"]] == ["log", "webhook"]
    bad = "name: p\nnotifications:\n  escalate: {channel: pager}\nsteps:\n  - {name: a, executor: gateway, executor_config: {agent: x}}\n"
    (problem,) = problems_of(tmp_path, bad)
    assert problem.line == 3 and "telegram" in problem.message
