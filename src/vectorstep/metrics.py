"""Prometheus metrics (SYSTEM.md §15), for production runs only, with bounded labels (no run ids).

Counters live in memory and count what this process did: the steps and runs it drove, the
decisions and marks it took. A run is counted once, by whichever process records each of its
events, so with several processes the deployment's figure is the sum over their scrapes (a run
resumed elsewhere after a crash is not counted twice). A scrape costs the same with ten runs or a
million; only the gauges read the database, and they say the same on every process (aggregate them
with `max`, not `sum`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from vectorstep.domain.events import RunEvent, RunFinished, StepFinished

PRODUCTION = "production"


class Metrics:
    def __init__(self, pending_approvals: Callable[[], Awaitable[int]] | None) -> None:
        """`pending_approvals`: the gauge's source; None leaves the gauge out (a worker's metrics)."""
        self.registry = CollectorRegistry()
        self._pending_approvals = pending_approvals
        r = self.registry
        self.runs = Counter(
            "vectorstep_pipeline_runs", "Runs that ended, by status.", ["pipeline", "status"], registry=r
        )
        self.steps = Counter(
            "vectorstep_pipeline_steps", "Steps that ended, by status.", ["pipeline", "step", "status"], registry=r
        )
        self.step_duration = Histogram(
            "vectorstep_pipeline_step_duration_seconds",
            "How long steps took.",
            ["pipeline", "step"],
            buckets=(0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600),
            registry=r,
        )
        self.verifier_runs = Counter(
            "vectorstep_verifier_runs", "Verifier calls.", ["pipeline", "step", "mode"], registry=r
        )
        self.verifier_overrides = Counter(
            "vectorstep_verifier_overrides", "Verifier calls that lowered trust.", ["pipeline", "step"], registry=r
        )
        self.tokens = Counter("vectorstep_pipeline_tokens", "Tokens used.", ["pipeline", "kind"], registry=r)
        self.cost = Counter(
            "vectorstep_pipeline_cost", "Cost of runs, in the pricing currency.", ["pipeline"], registry=r
        )
        self.approvals_pending = (
            Gauge("vectorstep_human_approvals_pending", "Approvals waiting for a person.", registry=r)
            if pending_approvals is not None
            else None
        )
        self.approval_decisions = Counter(
            "vectorstep_human_approval_decisions", "Approval decisions.", ["decision", "by"], registry=r
        )
        self.feedback = Counter("vectorstep_step_feedback", "Marks people gave.", ["pipeline", "label"], registry=r)
        self.grounding = Histogram(
            "vectorstep_step_grounding_score",
            "Grounding scores (G).",
            ["pipeline", "step"],
            buckets=(0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
            registry=r,
        )
        self.checks = Counter(
            "vectorstep_step_deterministic_check",
            "Deterministic check outcomes.",
            ["pipeline", "step", "check", "outcome"],
            registry=r,
        )

    async def notify(self, event: RunEvent) -> None:
        if isinstance(event, StepFinished) and event.stage == PRODUCTION:
            self._step(event.pipeline, event)
        elif isinstance(event, RunFinished) and event.stage == PRODUCTION:
            pipeline = event.pipeline
            self.runs.labels(pipeline, event.status.value).inc()
            self.tokens.labels(pipeline, "input").inc(event.input_tokens)
            self.tokens.labels(pipeline, "output").inc(event.output_tokens)
            if event.cost:
                self.cost.labels(pipeline).inc(event.cost)

    def _step(self, pipeline: str, event: StepFinished) -> None:
        record = event.record
        self.steps.labels(pipeline, record.name, record.status.value).inc()
        self.step_duration.labels(pipeline, record.name).observe(record.duration_ms / 1000)
        report = record.trust_report or {}
        verifier = report.get("verifier") or {}
        if verifier.get("triggered"):
            self.verifier_runs.labels(pipeline, record.name, verifier.get("mode", "")).inc()
            signals = report.get("signals") or {}
            if (
                signals.get("S_after_V") is not None
                and signals.get("S") is not None
                and signals["S_after_V"] < signals["S"]
            ):
                self.verifier_overrides.labels(pipeline, record.name).inc()
        if record.grounding_score is not None:
            self.grounding.labels(pipeline, record.name).observe(record.grounding_score)
        for check in report.get("deterministic_checks") or []:
            outcome = "passed" if check.get("passed") else "failed"
            self.checks.labels(pipeline, record.name, check.get("name", ""), outcome).inc()

    def decided(self, approved: bool, by_timeout: bool, stage: str) -> None:
        if stage == PRODUCTION:
            self.approval_decisions.labels(
                "approved" if approved else "rejected", "timeout" if by_timeout else "person"
            ).inc()

    def marked(self, pipeline: str, stage: str, label: str) -> None:
        if stage == PRODUCTION:
            self.feedback.labels(pipeline, label).inc()

    async def render(self) -> bytes:
        if self.approvals_pending is not None and self._pending_approvals is not None:
            self.approvals_pending.set(await self._pending_approvals())
        return generate_latest(self.registry)
