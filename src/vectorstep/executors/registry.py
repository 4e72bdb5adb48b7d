"""Which executors this process can run, and what each can report."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from vectorstep.domain.execution import ExecutionResult, ExecutorCapabilities
from vectorstep.executors.base import Executor, StepCall


class ExecutorRegistry:
    def __init__(self, executors: Mapping[str, Executor]) -> None:
        self._executors = dict(executors)

    def get(self, name: str) -> Executor | None:
        return self._executors.get(name)

    def capabilities(self, name: str) -> ExecutorCapabilities | None:
        executor = self._executors.get(name)
        return executor.capabilities if executor is not None else None

    @property
    def names(self) -> list[str]:
        return sorted(self._executors)


class LazyExecutor:
    """An executor built on its first step: its libraries load only in a process that runs one
    (the OpenClaw executor's WebSocket and signing libraries cost ~7 MiB that most services never use)."""

    def __init__(self, capabilities: ExecutorCapabilities, build: Callable[[], Executor]) -> None:
        self.capabilities = capabilities
        self._build = build
        self._built: Executor | None = None

    async def execute(self, call: StepCall) -> ExecutionResult:
        if self._built is None:
            self._built = self._build()
        return await self._built.execute(call)
