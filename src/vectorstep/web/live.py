"""Live updates of a run for the UI (server-sent events), whichever process drives the run.

The run log in the database is the source: on PostgreSQL every log line is announced (`NOTIFY`,
see migration 0007) and handed to `publish`; on SQLite, where a `vectorstep run` in a terminal may
write beside the service, the log of each watched run is read a few times a second while someone
watches it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Mapping

log = logging.getLogger(__name__)
POLL_SECONDS = 0.25
Poll = Callable[[Mapping[str, int]], Awaitable[list[tuple[str, int, str]]]]  # last ids → (run, id, event)


def kind_of(event: str) -> str:
    """What a page does about a log line: `finished` (the run ended), `step` or `log`."""
    if event == "run_finished":
        return "finished"
    return "step" if event in ("step_started", "step_finished") else "log"


class LiveEvents:
    def __init__(self) -> None:
        self._subscribers: dict[str, set[asyncio.Queue[str]]] = defaultdict(set)
        self._poll: Poll | None = None
        self._seen: dict[str, int] = {}  # run id → the last log line read of it (polling)
        self._poller: asyncio.Task[None] | None = None

    def publish(self, run_id: str, event: str) -> None:
        for queue in self._subscribers.get(run_id, ()):
            queue.put_nowait(kind_of(event))

    def watch(self, poll: Poll) -> None:
        """Read watched runs' logs with `poll` instead of being told (SQLite)."""
        self._poll = poll

    def subscribe(self, run_id: str) -> asyncio.Queue[str]:
        queue: asyncio.Queue[str] = asyncio.Queue()
        self._subscribers[run_id].add(queue)
        if self._poll is not None:
            self._seen.setdefault(run_id, 0)  # the first read tells of what came since the page was built
            if self._poller is None or self._poller.done():
                self._poller = asyncio.create_task(self._polling(self._poll), name="live-poll")
        return queue

    def unsubscribe(self, run_id: str, queue: asyncio.Queue[str]) -> None:
        self._subscribers[run_id].discard(queue)
        if not self._subscribers[run_id]:
            del self._subscribers[run_id]
            self._seen.pop(run_id, None)

    async def _polling(self, poll: Poll) -> None:
        while self._seen:
            try:
                for run_id, event_id, event in await poll(dict(self._seen)):
                    if run_id in self._seen:
                        self._seen[run_id] = max(self._seen[run_id], event_id)
                        self.publish(run_id, event)
            except Exception:  # the next round reads again
                log.exception("reading the logs of watched runs failed")
            await asyncio.sleep(POLL_SECONDS)

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
