"""The running service: a `RunHost` (the project, its engine, the database, the dispatcher) plus what
the web needs beside it: sign-in sessions, marks, and the live updates of run pages.

On SQLite the service drives every run itself. On PostgreSQL runs are jobs on the queue; with
`workers_inline` (the default) this process is also one of the workers.
"""

from __future__ import annotations

import logging

from vectorstep.clock import Clock
from vectorstep.dispatch.host import Dispatcher, RunHost
from vectorstep.dispatch.inline import InlineDispatcher
from vectorstep.dispatch.replay import ReplayDesk
from vectorstep.spec.settings import Settings
from vectorstep.store.feedback import FeedbackRepository, Mark
from vectorstep.store.migrate import upgrade
from vectorstep.store.replay import ReplayRepository
from vectorstep.store.sessions import SessionRepository
from vectorstep.web.live import LiveEvents

log = logging.getLogger(__name__)


class Service(RunHost):
    def __init__(self, settings: Settings, *, clock: Clock | None = None, workers_inline: bool = True) -> None:
        self.live = LiveEvents()

        def dispatcher(host: RunHost) -> Dispatcher:
            if settings.database_url.startswith("sqlite"):
                # The log is the source of live pages: a `vectorstep run` beside the service writes there too.
                self.live.watch(host.runs.log_events_after)
                return InlineDispatcher(host)
            from vectorstep.dispatch.queue import QueueDispatcher  # noqa: PLC0415 - PostgreSQL installations only

            # Every log line is announced on PostgreSQL, whichever process wrote it.
            return QueueDispatcher(host, work=workers_inline, run_events=self.live.publish)

        super().__init__(settings, dispatcher, clock=clock, role="serve")
        self.feedback = FeedbackRepository(self.database)
        self.sessions = SessionRepository(self.database)
        self.replays = ReplayDesk(lambda: self.project, lambda: self.engine, ReplayRepository(self.database))
        for token in settings.spec.auth.tokens:
            if "role" not in token.model_fields_set:
                log.warning("auth token %s has no `role`: it may only post events (role intake)", token.name)

    async def start(self) -> None:
        await upgrade(self.database)
        await super().start()

    async def stop(self) -> None:
        await self.replays.stop()
        await self.live.close()
        await super().stop()

    async def mark(self, mark: Mark) -> None:
        pipeline, stage = await self.feedback.mark(mark)
        self.metrics.marked(pipeline, stage, mark.label)
