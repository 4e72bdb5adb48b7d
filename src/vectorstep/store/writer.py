"""The observer that writes a run to the database as it happens (and holds the leases of its runs)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Protocol

from vectorstep.domain.events import (
    RunDetached,
    RunEvent,
    RunFinished,
    RunLogged,
    RunResumed,
    RunStarted,
    RunWaiting,
    RunWaitingOnChild,
    StepFinished,
    StepStarted,
)
from vectorstep.domain.status import RunStatus
from vectorstep.store.runs import RunRepository

LEASE_SECONDS = 30.0


class StoreWriter:
    """Writes every event as it happens; with an `owner`, also holds the lease of the runs it writes.

    A lease runs out `lease_seconds` after it was last renewed (`keep_leases`); with None it never
    does: a queue worker's runs are known to be driven while its worker's heartbeat is fresh.
    A queue worker learns its `owner` once its first job names the worker id.
    """

    def __init__(self, runs: RunRepository, owner: str | None = None, *, lease_seconds: float | None = LEASE_SECONDS):
        self._runs = runs
        self.owner = owner
        self._lease_seconds = lease_seconds

    async def notify(self, event: RunEvent) -> None:
        if isinstance(event, RunStarted):
            await self._started(event)
        elif isinstance(event, StepFinished):
            await self._runs.insert_step(event.record, event.log, pipeline=event.pipeline)
        elif isinstance(event, StepStarted | RunLogged):
            await self._runs.append_log(event.log)
        elif isinstance(event, RunWaiting | RunResumed):
            status = RunStatus.RUNNING if isinstance(event, RunResumed) else RunStatus.WAITING
            await self._runs.set_status(event.run_id, status, event.log)
        elif isinstance(event, RunWaitingOnChild | RunDetached):
            # Parked (it waits for its child, or for a person, holding no worker): whoever sees the wait
            # end continues it. Meanwhile the run shows what its finished steps spent.
            spent = (event.input_tokens, event.output_tokens, event.cost)
            await self._runs.set_status(event.run_id, RunStatus.WAITING, event.log, spent=spent, release=self.owner)
        elif isinstance(event, RunFinished):
            await self._runs.finish_run(
                event.run_id,
                status=event.status,
                finished_at=event.finished_at,
                error=event.error,
                input_tokens=event.input_tokens,
                output_tokens=event.output_tokens,
                cost=event.cost,
                log=event.log,
                release=self.owner is not None,
            )

    async def _started(self, event: RunStarted) -> None:
        lease = None
        if self.owner is not None:
            seconds = self._lease_seconds
            lease = (self.owner, event.log.ts + timedelta(seconds=seconds) if seconds is not None else None)
        await self._runs.insert_run(event.run, event.log, lease=lease)


class _Now(Protocol):
    def now(self) -> datetime: ...


async def keep_leases(runs: RunRepository, owner: str, clock: _Now) -> None:
    """While a process drives runs (also while they wait on people), it says so every few seconds."""
    while True:
        await asyncio.sleep(LEASE_SECONDS / 3)
        await runs.renew(owner, clock.now() + timedelta(seconds=LEASE_SECONDS))
