"""Spans of runs: one per run and step, and inside a step's span one per model call (GenAI semantic
conventions), tool call, verifier, grounding judge and deterministic check.

They are made by an observer of run events, so the engine knows nothing of them: a step's span is
the current span while the step works, which is how the W3C trace context reaches the webhooks it
calls and the remote gateway (`telemetry.inject`); the spans inside a step are drawn from what its
record holds (each model call's and tool call's timing, the trust report), once it has finished.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode, Tracer

from vectorstep.domain.events import (
    RunDetached,
    RunEvent,
    RunFinished,
    RunResumed,
    RunStarted,
    RunWaiting,
    StepFinished,
    StepStarted,
)
from vectorstep.domain.records import StepRecord
from vectorstep.domain.status import RunStatus, StepStatus
from vectorstep.domain.trace import TraceEvent
from vectorstep.telemetry import TRACER_NAME, activate


class TraceObserver:
    """Turns run events into spans (a no-op tracer when no provider is configured)."""

    def __init__(self, tracer: Tracer | None = None) -> None:
        self._tracer = tracer or trace.get_tracer(TRACER_NAME)
        activate()
        self._runs: dict[str, Span] = {}
        self._steps: dict[tuple[str, str], tuple[Span, object | None]] = {}  # span, and its context token

    async def notify(self, event: RunEvent) -> None:
        if isinstance(event, RunStarted):
            self._run_span(event.run.run_id, event.run.pipeline, event.run.stage, event.log.ts)
        elif isinstance(event, RunResumed) and event.pipeline:  # taken up here: its span is this process's
            self._run_span(event.run_id, event.pipeline, event.stage, event.log.ts)
        elif isinstance(event, StepStarted):
            self._started(event)
        elif isinstance(event, StepFinished):
            self._finished(event.record)
        elif isinstance(event, RunFinished):
            self._end_run(event.run_id, event.finished_at, event.status.value, event.error)
        elif isinstance(event, RunWaiting | RunDetached):
            self._end_run(event.run_id, event.log.ts, "waiting", None)

    def _run_span(self, run_id: str, pipeline: str, stage: str, at: datetime) -> Span:
        span = self._runs.get(run_id)
        if span is None:
            span = self._tracer.start_span(
                f"run {pipeline}",
                start_time=_ns(at),
                attributes={"vectorstep.run_id": run_id, "vectorstep.pipeline": pipeline, "vectorstep.stage": stage},
                context=otel_context.Context(),  # a run is a trace of its own
            )
            self._runs[run_id] = span
        return span

    def _started(self, event: StepStarted) -> None:
        run = self._runs.get(event.run_id) or self._run_span(event.run_id, "", "", event.log.ts)
        span = self._tracer.start_span(
            f"step {event.step}",
            context=trace.set_span_in_context(run),
            start_time=_ns(event.log.ts),
            attributes={"vectorstep.step": event.step, "vectorstep.executor": event.executor},
        )
        # Current while the step works: its webhooks and gateway calls carry its trace context.
        token = otel_context.attach(trace.set_span_in_context(span))
        self._steps[(event.run_id, event.step)] = (span, token)

    def _finished(self, record: StepRecord) -> None:
        found = self._steps.pop((record.run_id, record.name), None)
        if found is None:  # a branch of a group: drawn now, under the span current where it ran
            span = self._tracer.start_span(f"step {record.name}", start_time=_ns(record.started_at))
            token = None
        else:
            span, token = found
        _describe_step(span, record)
        parent = trace.set_span_in_context(span)
        for child in _work_spans(record):
            _draw(self._tracer, parent, child)
        span.end(end_time=_ns(record.finished_at))
        if token is not None:  # attached in another context, it has nothing of ours to restore
            with contextlib.suppress(RuntimeError, ValueError):
                otel_context.detach(token)  # type: ignore[arg-type]

    def _end_run(self, run_id: str, at: datetime, status: str, error: str | None) -> None:
        for key in [key for key in self._steps if key[0] == run_id]:
            span, _ = self._steps.pop(key)
            span.set_attribute("vectorstep.step.status", "waiting" if status == "waiting" else "stopped")
            span.end(end_time=_ns(at))
        ended = self._runs.pop(run_id, None)
        if ended is None:
            return
        span = ended
        span.set_attribute("vectorstep.run.status", status)
        if error:
            span.set_attribute("vectorstep.run.error", error[:1000])
        if status in (RunStatus.FAILED.value, RunStatus.INTERRUPTED.value):
            span.set_status(Status(StatusCode.ERROR, (error or status)[:200]))
        span.end(end_time=_ns(at))


def _describe_step(span: Span, record: StepRecord) -> None:
    figures: dict[str, Any] = {
        "vectorstep.step.status": record.status.value,
        "vectorstep.step.executor": record.executor,
        "vectorstep.step.agent": record.agent,
        "vectorstep.trust.self_reported": record.confidence,
        "vectorstep.trust.verifier": record.verifier_confidence,
        "vectorstep.trust.after_verifier": record.effective_confidence,
        "vectorstep.trust.grounding": record.grounding_score,
        "vectorstep.trust.checks_passed": record.deterministic_passed,
        "vectorstep.trust.combined": record.combined_trust,
        "vectorstep.gate": record.gate_outcome,
        "vectorstep.error_kind": record.error_kind,
        "gen_ai.request.model": record.model,
        "gen_ai.usage.input_tokens": record.input_tokens,
        "gen_ai.usage.output_tokens": record.output_tokens,
    }
    span.set_attributes({key: value for key, value in figures.items() if value is not None})
    if record.status is StepStatus.FAILED:
        span.set_status(Status(StatusCode.ERROR, (record.error or "failed")[:200]))


@dataclass(frozen=True)
class _Drawn:
    name: str
    start: datetime
    end: datetime
    attributes: dict[str, Any]
    error: str | None = None


def _work_spans(record: StepRecord) -> list[_Drawn]:
    """The step's model calls and tool calls, from its trace; its verifier, judge and checks, from its report."""
    drawn: list[_Drawn] = []
    calls: dict[str | None, TraceEvent] = {}
    for event in record.trace:
        at = _when(event.ts, record.started_at)
        if event.type == "llm_call":  # recorded when the answer arrived
            start = at - timedelta(milliseconds=event.duration_ms or 0)
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.system": event.provider,
                "gen_ai.request.model": event.model,
                "gen_ai.usage.input_tokens": event.input_tokens,
                "gen_ai.usage.output_tokens": event.output_tokens,
            }
            drawn.append(_Drawn(f"chat {event.model or ''}".strip(), start, at, attributes))
        elif event.type == "tool_call":
            calls[event.call_id] = event
        elif event.type == "tool_result":
            call = calls.get(event.call_id)
            start = _when(call.ts, at) if call is not None else at - timedelta(milliseconds=event.duration_ms or 0)
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": event.name}
            attributes["gen_ai.tool.call.id"] = event.call_id
            drawn.append(
                _Drawn(f"execute_tool {event.name}", start, at, attributes, "tool error" if event.is_error else None)
            )
    drawn.extend(_report_spans(record))
    return drawn


def _report_spans(record: StepRecord) -> list[_Drawn]:
    report = record.trust_report or {}
    end = record.finished_at
    drawn: list[_Drawn] = []
    for check in reversed(report.get("deterministic_checks") or []):  # checks run last, in order
        start = end - timedelta(milliseconds=float(check.get("duration_ms") or 0))
        attributes = {"vectorstep.check.type": check.get("type"), "vectorstep.check.passed": check.get("passed")}
        drawn.append(
            _Drawn(f"check {check.get('name')}", start, end, attributes, None if check.get("passed") else "failed")
        )
        end = start
    for role in ("grounding", "verifier"):
        block: dict[str, Any] = report.get(role) or {}
        call: dict[str, Any] = block["call"] if isinstance(block.get("call"), dict) else block
        duration = call.get("duration_ms")
        if duration is None:
            continue
        start = end - timedelta(milliseconds=float(duration))
        score = block.get("score")
        attributes = {"gen_ai.request.model": call.get("model"), f"vectorstep.trust.{role}": score}
        drawn.append(_Drawn("grounding judge" if role == "grounding" else "verifier", start, end, attributes))
        end = start
    return drawn


def _draw(tracer: Tracer, parent: otel_context.Context, drawn: _Drawn) -> None:
    span = tracer.start_span(drawn.name, context=parent, start_time=_ns(drawn.start))
    span.set_attributes({key: value for key, value in drawn.attributes.items() if value is not None})
    if drawn.error:
        span.set_status(Status(StatusCode.ERROR, drawn.error))
    span.end(end_time=_ns(drawn.end))


def _when(ts: str | None, fallback: datetime) -> datetime:
    try:
        return datetime.fromisoformat(ts) if ts else fallback
    except ValueError:
        return fallback


def _ns(at: datetime) -> int:
    return int(at.timestamp() * 1_000_000_000)
