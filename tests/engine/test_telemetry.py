"""Traces of runs: spans per run, step, model call, tool call and check, with the trust figures; the step's
trace context reaches the webhooks it calls. Recorded with the OpenTelemetry SDK's in-memory exporter."""

from __future__ import annotations

import logging

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import RecordingServer, tool_server_config
from vectorstep.domain.status import RunStatus
from vectorstep.engine.services import Engine
from vectorstep.intake.generic import manual_context
from vectorstep.spec.project import load_project
from vectorstep.spec.settings import load_settings
from vectorstep.telemetry import TraceIdFilter, wanted
from vectorstep.telemetry_spans import TraceObserver
from vectorstep.testing import FakeClock, ProjectDir, answer


async def test_a_run_is_a_trace_of_its_steps_model_calls_tools_and_checks(
    project: ProjectDir, http_server: RecordingServer
) -> None:
    project.scripted_agent(
        "investigator",
        {"tool_calls": [{"name": "tools__echo", "args": {"text": "5xx ratio 0.042 since deploy 8f3a91c"}}]},
        answer(0.9, "5xx at 4.2%", reasoning={"supports": ["the 5xx ratio is 4.2%"]}),
        tools=["tools"],
    )
    investigate = {
        "name": "investigate",
        "executor": "gateway",
        "executor_config": {"agent": "investigator"},
        "grounding": {"executor": "local"},
        "deterministic_checks": [{"name": "still_failing", "type": "shell", "run": "true"}],
    }
    tell = {"name": "tell", "executor": "webhook", "executor_config": {"url": f"{http_server.url}/hook"}}
    project.pipeline("p", {"name": "p", "steps": [investigate, tell]})
    project.settings({"mcp_servers": tool_server_config()})
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    loaded = load_project(load_settings(project.config))
    async with Engine(loaded, observers=[TraceObserver(provider.get_tracer("test"))], clock=FakeClock()) as engine:
        record = await engine.run(loaded.pipelines["p"].spec, manual_context(FakeClock().now()))
    assert record.status is RunStatus.COMPLETED
    spans = {span.name: span for span in exporter.get_finished_spans()}
    run, step = spans["run p"], spans["step investigate"]
    assert run.attributes["vectorstep.run.status"] == "completed" and run.parent is None
    assert step.parent.span_id == run.context.span_id and spans["step tell"].parent.span_id == run.context.span_id
    assert step.attributes["vectorstep.trust.combined"] == 0.9 and step.attributes["vectorstep.trust.grounding"] == 1.0
    assert step.attributes["vectorstep.trust.checks_passed"] is True and step.attributes["vectorstep.gate"] == "passed"
    chats = [span for span in exporter.get_finished_spans() if span.name == "chat scripted"]
    assert len(chats) == 2 and all(span.parent.span_id == step.context.span_id for span in chats)
    assert chats[0].attributes["gen_ai.system"] == "scripted" and chats[0].attributes["gen_ai.usage.input_tokens"] > 0
    tool = spans["execute_tool tools__echo"]
    assert tool.attributes["gen_ai.tool.name"] == "tools__echo" and tool.parent.span_id == step.context.span_id
    assert tool.start_time <= tool.end_time and spans["check still_failing"].attributes["vectorstep.check.passed"]
    # The webhook step's request carried its span's W3C trace context.
    (hooked,) = http_server.requests
    traceparent = {key.lower(): value for key, value in hooked["headers"].items()}["traceparent"]
    _, trace_id, span_id, _ = traceparent.split("-")
    assert int(trace_id, 16) == run.context.trace_id and int(span_id, 16) == spans["step tell"].context.span_id


def test_tracing_is_off_unless_asked_and_log_lines_in_a_span_name_its_trace() -> None:
    assert not wanted(None, {}) and wanted("http://collector:4318", {})
    assert wanted(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    provider = TracerProvider()
    record = logging.LogRecord("vectorstep.runs", logging.WARNING, "", 0, "judge timed out", None, None)
    with trace.use_span(provider.get_tracer("test").start_span("step s"), end_on_exit=True) as span:
        assert TraceIdFilter().filter(record)
    assert record.getMessage() == f"judge timed out [trace {span.get_span_context().trace_id:032x}]"
    outside = logging.LogRecord("vectorstep.runs", logging.WARNING, "", 0, "plain", None, None)
    TraceIdFilter().filter(outside)
    assert outside.getMessage() == "plain"


@pytest.fixture(autouse=True)
def _no_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
