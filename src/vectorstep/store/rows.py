"""Rows of the run tables ↔ the domain's records (runs, steps, log lines): one mapping, both ways."""

from __future__ import annotations

from typing import Any

from sqlalchemy import RowMapping

from vectorstep.domain.records import LogEntry, RunRecord, StepRecord
from vectorstep.domain.status import RunStatus, StepStatus
from vectorstep.domain.trace import TraceEvent

# Who ran the second opinions of a step: the same name in the record and in the table.
ATTRIBUTION_COLUMNS = (
    "verifier_mode",
    "verifier_agent",
    "verifier_model",
    "verifier_provider",
    "verifier_prompt",
    "verifier_input_tokens",
    "verifier_output_tokens",
    "grounding_model",
    "grounding_provider",
    "grounding_input_tokens",
    "grounding_output_tokens",
)


def run_row(run: RunRecord) -> dict[str, Any]:
    """A run's row as it is first written (a new run, or a replay stored once it ended)."""
    return {
        "id": run.run_id,
        "pipeline_name": run.pipeline,
        "status": run.status.value,
        "stage": run.stage,
        "source": run.source,
        "team": run.team,
        "fingerprint": run.context.get("fingerprint"),
        "context": dict(run.context),
        "error": run.error,
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "cost": run.cost,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "updated_at": run.finished_at or run.started_at,
        "spec": dict(run.spec) if run.spec is not None else None,
        "parent_run_id": run.parent_run_id,
        "parent_step": run.parent_step,
    }


def log_row(log: LogEntry) -> dict[str, Any]:
    return {
        "run_id": log.run_id,
        "ts": log.ts,
        "level": log.level,
        "event": log.event,
        "step_name": log.step,
        "message": log.message,
        "data": dict(log.data) if log.data is not None else None,
    }


def step_row(record: StepRecord) -> dict[str, Any]:
    return {
        "run_id": record.run_id,
        "step_index": record.index,
        "step_name": record.name,
        "status": record.status.value,
        "executor": record.executor,
        "agent": record.agent,
        "model": record.model,
        "provider": record.provider,
        "agent_version": record.agent_version,
        "prompt": record.prompt,
        "prompt_hash": record.prompt_hash,
        "raw_output": record.raw_output,
        "parsed_output": dict(record.output) if record.output is not None else None,
        "agent_trace": [event.as_dict() for event in record.trace],
        "primary_confidence": record.confidence,
        "verifier_confidence": record.verifier_confidence,
        "effective_confidence": record.effective_confidence,
        "combined_trust": record.combined_trust,
        "grounding_score": record.grounding_score,
        "deterministic_passed": record.deterministic_passed,
        "gate_outcome": record.gate_outcome,
        "trust_report": dict(record.trust_report) if record.trust_report is not None else None,
        "input_tokens": record.input_tokens,
        "output_tokens": record.output_tokens,
        **{column: getattr(record, column) for column in ATTRIBUTION_COLUMNS},
        "cost": record.cost,
        "duration_ms": record.duration_ms,
        "attempts": record.attempts,
        "iterations": record.iterations,
        "warnings": list(record.warnings),
        "error_kind": record.error_kind,
        "error": record.error,
        "started_at": record.started_at,
        "finished_at": record.finished_at,
    }


def step_record(row: RowMapping) -> StepRecord:
    return StepRecord(
        run_id=row["run_id"],
        name=row["step_name"],
        index=row["step_index"],
        status=StepStatus(row["status"]),
        executor=row["executor"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        duration_ms=row["duration_ms"],
        agent=row["agent"],
        model=row["model"],
        provider=row["provider"],
        agent_version=row["agent_version"],
        prompt=row["prompt"],
        prompt_hash=row["prompt_hash"],
        raw_output=row["raw_output"],
        output=row["parsed_output"],
        confidence=row["primary_confidence"],
        verifier_confidence=row["verifier_confidence"],
        effective_confidence=row["effective_confidence"],
        combined_trust=row["combined_trust"],
        grounding_score=row["grounding_score"],
        deterministic_passed=row["deterministic_passed"],
        trust_report=row["trust_report"],
        trace=tuple(TraceEvent.from_dict(event) for event in row["agent_trace"] or []),
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        **{column: row[column] for column in ATTRIBUTION_COLUMNS},
        cost=row["cost"],
        attempts=row["attempts"],
        iterations=row["iterations"],
        error_kind=row["error_kind"],
        error=row["error"],
        warnings=tuple(row["warnings"] or ()),
        gate_outcome=row["gate_outcome"],
    )


def log_entry(row: RowMapping) -> LogEntry:
    return LogEntry(
        run_id=row["run_id"],
        ts=row["ts"],
        level=row["level"],
        event=row["event"],
        message=row["message"],
        step=row["step_name"],
        data=row["data"],
    )


def run_record(row: RowMapping, steps: list[StepRecord], log: list[LogEntry]) -> RunRecord:
    return RunRecord(
        run_id=row["id"],
        pipeline=row["pipeline_name"],
        status=RunStatus(row["status"]),
        stage=row["stage"],
        started_at=row["started_at"],
        source=row["source"],
        team=row["team"],
        context=row["context"] or {},
        finished_at=row["finished_at"],
        error=row["error"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cost=row["cost"],
        steps=tuple(steps),
        log=tuple(log),
        spec=row.get("spec"),
        parent_run_id=row.get("parent_run_id"),
        parent_step=row.get("parent_step"),
    )
