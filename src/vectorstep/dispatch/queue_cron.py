"""PostgreSQL: cron `schedule:` runs, fired once per fire time however many workers run.

Each worker defers a `fire` job for every fire time that has come, through procrastinate's
periodic deferrer: the queue keeps one row per (schedule, fire time), so only the first worker's
defer counts. The job then goes through the same stage gate and dedup as a webhook. A fire time
is still fired when the workers were down for less than `CATCH_UP_SECONDS` of it (a restart);
older ones are not replayed, and a schedule added by a reload fires from its next time on.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from procrastinate.periodic import PeriodicDeferrer, PeriodicRegistry
from procrastinate.tasks import Task

from vectorstep.dispatch.cron import cron_context
from vectorstep.spec.project import Project

if TYPE_CHECKING:
    from vectorstep.dispatch.host import RunHost

log = logging.getLogger(__name__)
CATCH_UP_SECONDS = 60
LONGEST_SLEEP_SECONDS = 5.0  # a reload that adds a schedule is noticed within this


class QueueSchedules:
    def __init__(self, fire: Task[Any, Any, Any], queue: str) -> None:
        self._fire = fire
        self._queue = queue
        self._deferrer = PeriodicDeferrer(registry=_registry(), max_delay=CATCH_UP_SECONDS)

    def load(self, project: Project, *, catch_up: bool) -> None:
        """The project's schedules; `catch_up`: also a fire time that came up to a minute ago."""
        registry = _registry()
        now = int(time.time())
        for name, loaded in sorted(project.pipelines.items()):
            schedule = loaded.spec.schedule
            if schedule is None:
                continue
            periodic_id = schedule_id(name, schedule.cron)
            registry.register_task(
                task=self._fire,
                cron=schedule.cron,
                periodic_id=periodic_id,
                configure_kwargs={"task_kwargs": {"pipeline": name, "cron": schedule.cron}, "queue": self._queue},
            )
            key = (self._fire.name, periodic_id)
            if not catch_up and key not in self._deferrer.last_defers:
                self._deferrer.last_defers[key] = now  # new here: from its next fire time on
        self._deferrer.registry = registry

    async def loop(self) -> None:
        while True:
            try:
                now = time.time()
                await self._deferrer.defer_jobs(jobs_to_defer=self._deferrer.get_previous_tasks(at=now))
                wait = self._deferrer.get_next_tick(at=now) if self._deferrer.registry.periodic_tasks else None
            except Exception:  # one bad round must not end the schedules
                log.exception("deferring scheduled runs failed")
                wait = None
            await asyncio.sleep(
                max(0.05, min(wait if wait is not None else LONGEST_SLEEP_SECONDS, LONGEST_SLEEP_SECONDS))
            )

    async def fire(self, host: RunHost, timestamp: int, pipeline: str, cron: str) -> None:
        loaded = host.project.pipelines.get(pipeline)
        if loaded is None or loaded.spec.schedule is None or loaded.spec.schedule.cron != cron:
            log.info("schedule %s of %s is no longer configured here: not fired", cron, pipeline)
            return
        fire_time = datetime.fromtimestamp(timestamp, UTC)
        context = cron_context(pipeline, loaded.spec.schedule, fire_time)
        outcome = await host.accept(loaded, context, gated=True)
        log.info("schedule %s of %s at %s: %s", cron, pipeline, fire_time.isoformat(), outcome.status)


def _registry() -> PeriodicRegistry:
    return PeriodicRegistry()  # type: ignore[no-untyped-call]  # procrastinate leaves its __init__ unannotated


def schedule_id(pipeline: str, cron: str) -> str:
    """One schedule's name in the queue (at most 128 characters, whatever the pipeline is called)."""
    digest = hashlib.sha256(f"{pipeline}\n{cron}".encode()).hexdigest()[:16]
    return f"{pipeline[:100]}|{digest}"
