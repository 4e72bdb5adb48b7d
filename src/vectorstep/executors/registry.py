"""Which executors this process can run, and what each can report."""

from __future__ import annotations

from collections.abc import Mapping

from vectorstep.domain.execution import ExecutorCapabilities
from vectorstep.executors.base import Executor


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
