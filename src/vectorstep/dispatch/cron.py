"""Cron `schedule:` runs: each fire time becomes one event, through the same stage gate and dedup as a webhook.

The event's fingerprint is `cron:<pipeline>:<fire time>`. `Scheduler` is the one process's clock on
SQLite: a fire time missed while the service was down is not replayed. On PostgreSQL the job
queue fires schedules instead (`dispatch.queue_cron`), once per fire time across every worker.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import TYPE_CHECKING

from croniter import croniter

from vectorstep.clock import Clock
from vectorstep.domain.context import NormalisedContext
from vectorstep.spec.pipeline import ScheduleSpec

if TYPE_CHECKING:
    from vectorstep.dispatch.host import RunHost

log = logging.getLogger(__name__)
LONGEST_SLEEP_SECONDS = 30.0  # a reload that adds a schedule is noticed within this


def cron_context(pipeline: str, schedule: ScheduleSpec, fire_time: datetime) -> NormalisedContext:
    return NormalisedContext(
        source="cron",
        received_at=fire_time,
        pipeline=pipeline,
        severity=schedule.severity,
        labels=dict(schedule.labels),
        summary=schedule.summary or f"scheduled run of {pipeline} ({schedule.cron})",
        fingerprint=f"cron:{pipeline}:{fire_time.isoformat()}",
        team=schedule.team,
        metadata={"cron": schedule.cron, "fire_time": fire_time.isoformat()},
    )


def next_fire(cron: str, after: datetime) -> datetime:
    following: datetime = croniter(cron, after).get_next(datetime)
    return following


class Scheduler:
    def __init__(self, host: RunHost, clock: Clock) -> None:
        self._host = host
        self._clock = clock
        self._due: dict[tuple[str, str], datetime] = {}  # (pipeline, cron) → its next fire time

    async def loop(self) -> None:
        while True:
            try:
                await self.fire_due()
            except Exception:  # one bad round must not end the schedule
                log.exception("starting scheduled runs failed")
            await self._clock.sleep(self._sleep_seconds())

    async def fire_due(self) -> None:
        now = self._clock.now()
        scheduled = {
            (name, loaded.spec.schedule.cron): loaded
            for name, loaded in self._host.project.pipelines.items()
            if loaded.spec.schedule is not None
        }
        self._due = {key: due for key, due in self._due.items() if key in scheduled}
        for key, loaded in scheduled.items():
            due = self._due.setdefault(key, next_fire(key[1], now))
            if due > now:
                continue
            self._due[key] = next_fire(key[1], now)
            assert loaded.spec.schedule is not None
            context = cron_context(loaded.spec.name, loaded.spec.schedule, due)
            outcome = await self._host.accept(loaded, context, gated=True)
            log.info("schedule %s of %s at %s: %s", key[1], key[0], due.isoformat(), outcome.status)

    def _sleep_seconds(self) -> float:
        if not self._due:
            return LONGEST_SLEEP_SECONDS
        wait = (min(self._due.values()) - self._clock.now()).total_seconds()
        return max(0.05, min(wait, LONGEST_SLEEP_SECONDS))
