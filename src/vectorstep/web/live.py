"""Live updates of a run for the UI (server-sent events): observers publish, pages subscribe."""

from __future__ import annotations

import asyncio
from collections import defaultdict

from vectorstep.domain.events import RunEvent, RunFinished, StepFinished, StepStarted


class LiveEvents:
    def __init__(self) -> None:
        self._subscribers: dict[str, set[asyncio.Queue[str]]] = defaultdict(set)

    async def notify(self, event: RunEvent) -> None:
        run_id = event.log.run_id  # every event carries its log line
        if run_id not in self._subscribers:
            return
        kind = (
            "finished"
            if isinstance(event, RunFinished)
            else "step"
            if isinstance(event, StepStarted | StepFinished)
            else "log"
        )
        for queue in self._subscribers[run_id]:
            queue.put_nowait(kind)

    def subscribe(self, run_id: str) -> asyncio.Queue[str]:
        queue: asyncio.Queue[str] = asyncio.Queue()
        self._subscribers[run_id].add(queue)
        return queue

    def unsubscribe(self, run_id: str, queue: asyncio.Queue[str]) -> None:
        self._subscribers[run_id].discard(queue)
        if not self._subscribers[run_id]:
            del self._subscribers[run_id]
