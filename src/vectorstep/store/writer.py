"""The observer that writes a run to the database as it happens."""

from __future__ import annotations

from vectorstep.domain.events import (
    RunEvent,
    RunFinished,
    RunLogged,
    RunResumed,
    RunStarted,
    RunWaiting,
    StepFinished,
    StepStarted,
)
from vectorstep.domain.status import RunStatus
from vectorstep.store.runs import RunRepository


class StoreWriter:
    def __init__(self, runs: RunRepository) -> None:
        self._runs = runs

    async def notify(self, event: RunEvent) -> None:
        if isinstance(event, RunStarted):
            await self._runs.insert_run(event.run, event.log)
        elif isinstance(event, StepFinished):
            await self._runs.insert_step(event.record, event.log)
        elif isinstance(event, StepStarted | RunLogged):
            await self._runs.append_log(event.log)
        elif isinstance(event, RunWaiting):
            await self._runs.set_status(event.run_id, RunStatus.WAITING, event.log)
        elif isinstance(event, RunResumed):
            await self._runs.set_status(event.run_id, RunStatus.RUNNING, event.log)
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
            )
