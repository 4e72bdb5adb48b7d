"""What is recorded of a run and its steps: written by the store, shown by the CLI, API and UI."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from vectorstep.domain.approvals import Approval
from vectorstep.domain.artifacts import Artifact
from vectorstep.domain.status import RunStatus, StepStatus
from vectorstep.domain.trace import TraceEvent


@dataclass(frozen=True)
class VersionTexts:
    """The texts a step ran with, for version history: written once per version, never per step."""

    prompt_template: str | None = None  # what `prompt_hash` identifies
    agent_definition: str | None = None  # what `agent_version` identifies (None: not known here)


@dataclass(frozen=True)
class StepRecord:
    run_id: str
    name: str
    index: int
    status: StepStatus
    executor: str
    started_at: datetime
    finished_at: datetime
    duration_ms: float
    agent: str | None = None
    model: str | None = None
    provider: str | None = None
    agent_version: str | None = None
    prompt: str | None = None
    prompt_hash: str | None = None
    raw_output: str | None = None
    output: Mapping[str, Any] | None = None
    confidence: float | None = None  # S, the primary's self-report
    effective_confidence: float | None = None  # S after the verifier
    combined_trust: float | None = None
    grounding_score: float | None = None
    deterministic_passed: bool | None = None
    trust_report: Mapping[str, Any] | None = None
    trace: Sequence[TraceEvent] = ()
    input_tokens: int = 0  # the primary call's; the verifier's and the judge's are counted apart
    output_tokens: int = 0
    cost: float | None = None  # everything that ran for the step: primary, verifier, judge
    verifier_confidence: float | None = None
    verifier_mode: str | None = None
    verifier_agent: str | None = None
    verifier_model: str | None = None
    verifier_provider: str | None = None
    verifier_prompt: str | None = None
    verifier_input_tokens: int | None = None
    verifier_output_tokens: int | None = None
    grounding_model: str | None = None
    grounding_provider: str | None = None
    grounding_input_tokens: int | None = None
    grounding_output_tokens: int | None = None
    attempts: int = 0
    iterations: int = 0
    error_kind: str | None = None
    error: str | None = None
    warnings: Sequence[str] = ()
    gate_outcome: str | None = None
    # Kept beside the step's row, not in it (so a record read back from the store has neither):
    # the texts of its versions (see store/versions.py), and its artifacts' texts, which `output`
    # refers to by name.
    version_texts: VersionTexts | None = field(default=None, compare=False, repr=False)
    artifacts: Sequence[Artifact] = field(default=(), compare=False, repr=False)

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + (self.verifier_input_tokens or 0) + (self.grounding_input_tokens or 0)

    @property
    def total_output_tokens(self) -> int:
        return self.output_tokens + (self.verifier_output_tokens or 0) + (self.grounding_output_tokens or 0)

    def as_json(self) -> dict[str, Any]:
        """The step record of `vectorstep run --json` and the API."""
        return {
            "name": self.name,
            "status": self.status.value,
            "executor": self.executor,
            "agent": self.agent,
            "model": self.model,
            "provider": self.provider,
            "agent_version": self.agent_version,
            "prompt": self.prompt,
            "confidence": self.confidence,
            "verifier_confidence": self.verifier_confidence,
            "effective_confidence": self.effective_confidence,
            "combined_trust": self.combined_trust,
            "grounding_score": self.grounding_score,
            "deterministic_passed": self.deterministic_passed,
            "gate_outcome": self.gate_outcome,
            "output": dict(self.output) if self.output is not None else None,
            "raw_output": self.raw_output,
            "trust_report": dict(self.trust_report) if self.trust_report is not None else None,
            "trace": [event.as_dict() for event in self.trace],
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "verifier": {
                "mode": self.verifier_mode,
                "agent": self.verifier_agent,
                "model": self.verifier_model,
                "provider": self.verifier_provider,
                "prompt": self.verifier_prompt,
                "input_tokens": self.verifier_input_tokens,
                "output_tokens": self.verifier_output_tokens,
            }
            if self.verifier_mode is not None
            else None,
            "grounding": {
                "model": self.grounding_model,
                "provider": self.grounding_provider,
                "input_tokens": self.grounding_input_tokens,
                "output_tokens": self.grounding_output_tokens,
            }
            if self.grounding_input_tokens is not None
            else None,
            "cost": self.cost,
            "duration_ms": self.duration_ms,
            "attempts": self.attempts,
            "iterations": self.iterations,
            "warnings": list(self.warnings),
            "error_kind": self.error_kind,
            "error": self.error,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat(),
        }


@dataclass(frozen=True)
class LogEntry:
    run_id: str
    ts: datetime
    level: str
    event: str
    message: str
    step: str | None = None
    data: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class DedupRule:
    """One run per (pipeline, fingerprint) while one is in flight or started within the window."""

    key: str
    window_seconds: int


@dataclass(frozen=True)
class RunLink:
    """Another run this one is linked to (a sub-pipeline run), as lists and pages show it."""

    run_id: str
    pipeline: str
    status: str
    step: str | None = None  # the parent's step that started it

    def as_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "pipeline": self.pipeline, "status": self.status, "step": self.step}


@dataclass(frozen=True)
class RunRecord:
    run_id: str
    pipeline: str
    status: RunStatus
    stage: str
    started_at: datetime
    source: str
    team: str | None = None
    context: Mapping[str, Any] = field(default_factory=dict)
    finished_at: datetime | None = None
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None
    steps: Sequence[StepRecord] = ()
    log: Sequence[LogEntry] = ()
    spec: Mapping[str, Any] | None = field(default=None, repr=False)  # the pipeline as it ran
    dedup: DedupRule | None = field(default=None, repr=False)
    parent_run_id: str | None = None
    parent_step: str | None = None  # the parent's step that runs this one (`executor: pipeline`)
    children: Sequence[RunLink] = ()  # the sub-pipeline runs this run started

    def as_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "pipeline": self.pipeline,
            "parent_run_id": self.parent_run_id,
            "parent_step": self.parent_step,
            "children": [child.as_json() for child in self.children],
            "status": self.status.value,
            "stage": self.stage,
            "team": self.team,
            "source": self.source,
            "started_at": self.started_at.isoformat(),
            "finished_at": self.finished_at.isoformat() if self.finished_at else None,
            "error": self.error,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost": self.cost,
            "steps": [step.as_json() for step in self.steps],
        }


@dataclass(frozen=True)
class ResumePoint:
    """A waiting run, with the decided approval it waited on."""

    run: RunRecord
    approval: Approval
