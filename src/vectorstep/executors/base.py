"""The executor interface: one attempt of a step's work, returning an ExecutionResult."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from vectorstep.approvals.gate import HumanGate
from vectorstep.domain.execution import ExecutionResult, ExecutorCapabilities
from vectorstep.runtime.protocol import TraceListener
from vectorstep.spec.executor_config import ExecutorConfig


@dataclass(frozen=True)
class StepCall:
    """Everything an executor may use for one attempt."""

    run_id: str
    step: str
    stage: str
    prompt: str
    config: ExecutorConfig
    context: Mapping[str, Any]
    timeout_seconds: float | None = None
    on_trace: TraceListener | None = None
    pipeline: str = ""
    human: HumanGate | None = None  # asking a person, for `executor: human`
    attempt: int = 1  # of `retry`, counted from 1


class Executor(Protocol):
    capabilities: ExecutorCapabilities

    async def execute(self, call: StepCall) -> ExecutionResult: ...
