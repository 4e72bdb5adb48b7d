"""Runs this process drives in the background: accepted with their row written, capped, resumed."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from vectorstep.domain.records import RunRecord


class InFlight:
    """Background tasks driving runs. A run parked on a person holds no slot."""

    def __init__(self, max_runs: int) -> None:
        self.max_runs = max_runs
        self._tasks: dict[str, asyncio.Task[RunRecord]] = {}

    @property
    def count(self) -> int:
        return len(self._tasks)

    @property
    def full(self) -> bool:
        return len(self._tasks) >= self.max_runs

    def holds(self, run_id: str) -> bool:
        return run_id in self._tasks

    def tasks(self) -> list[asyncio.Task[RunRecord]]:
        return list(self._tasks.values())

    def start(self, run_id: str, drive: Callable[[], Awaitable[RunRecord]]) -> None:
        async def runner() -> RunRecord:
            try:
                return await drive()
            finally:
                self._tasks.pop(run_id, None)

        self._tasks[run_id] = asyncio.create_task(runner(), name=f"run-{run_id}")

    async def drain(self, timeout_seconds: float) -> None:
        """On shutdown: let runs finish for a while, then stop them (each is marked, never left running)."""
        tasks = list(self._tasks.values())
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=timeout_seconds)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
