"""PostgreSQL: runs are jobs on a procrastinate queue, taken by any worker process on any machine.

- A webhook, a schedule or "run now" writes the run's row, then defers its `drive` job; the
  answer comes once both are written.
- A decision defers a `resume` job; an approval's timeout is a `resume` job scheduled for then; a
  sub-pipeline run that ends defers its parent's `continue_parent` job.
- Workers beat every couple of seconds. A worker that stops beating (killed, its machine gone)
  is noticed by the others' maintenance: its jobs are retried and its runs taken up as their
  pipelines' `durable:` says (on PostgreSQL, by default: resumed after the last finished step).
- Jobs of one run never overlap (their `lock` is the run id), and each job takes the run's lease
  by compare-and-swap before it drives anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from procrastinate import App, JobContext, PsycopgConnector
from procrastinate.exceptions import AlreadyEnqueued, ConnectorException, UniqueViolation
from procrastinate.jobs import Job, Status
from sqlalchemy import text
from sqlalchemy.engine import make_url

from vectorstep.dispatch import jobs
from vectorstep.dispatch.queue_cron import QueueSchedules
from vectorstep.dispatch.timing import HEARTBEAT_SECONDS, MAINTENANCE_SECONDS, QUIET_SECONDS, STALLED_SECONDS
from vectorstep.domain.approvals import Approval
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.events import RunEvent, RunObserver, RunWaiting
from vectorstep.domain.records import DedupRule, RunRecord
from vectorstep.leases import HOST, holder_is_gone
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.project import Project
from vectorstep.store.database import Database
from vectorstep.store.orphans import find_orphans

if TYPE_CHECKING:
    from vectorstep.dispatch.host import RunHost

log = logging.getLogger(__name__)

QUEUE = "vectorstep"
# Job priorities. A run already under way goes before the queue's new runs: a person who decided,
# an ended sub-pipeline run, a run whose worker died are not kept behind a backlog of new alerts.
# An approval's timeout, scheduled for later, ranks lowest: in procrastinate a waiting job holds
# back every job of its lock that ranks lower (or as high, and came later), so a timeout an hour
# away must hold back nothing of its run.
TIMEOUT = -1
NEW_RUN = 0
UNDER_WAY = 2  # a decision, an ended sub-pipeline run, a run taken up again
_PRIORITY = {"vectorstep.drive": NEW_RUN, "vectorstep.fire": NEW_RUN}
STALLED_LOCK = 7_340_214  # the advisory lock the retrying of stalled jobs holds (any constant of ours)
CONTROL_CHANNEL = "vectorstep_control"
RUN_EVENTS_CHANNEL = "vectorstep_run_events"
OverloadCache = tuple[float, bool]


def libpq_url(url: str) -> str:
    """The SQLAlchemy URL (`postgresql+asyncpg://…`) as libpq reads it, for the queue's psycopg pool."""
    parsed = make_url(url)
    query = dict(parsed.query)
    if "ssl" in query and "sslmode" not in query:
        query["sslmode"] = query.pop("ssl")  # asyncpg's name for it
    return parsed.set(drivername="postgresql", query=query).render_as_string(hide_password=False)


class QueueDispatcher:
    name = "queue"

    def __init__(
        self, host: RunHost, *, work: bool = True, run_events: Callable[[str, str], None] | None = None
    ) -> None:
        """`work`: this process also runs jobs (`serve --workers-inline` and `vectorstep worker`);
        without it, it only defers them (`serve --no-workers-inline`). `run_events`: told (run id,
        log event) of every line any process writes to a run's log."""
        self._host = host
        self._work = work
        concurrency = host.settings.spec.concurrency
        self._concurrency = concurrency.max_runs
        self._max_queued = concurrency.max_queued
        self._grace = concurrency.shutdown_grace_seconds  # then a stopping worker's runs are left for the others
        connector = PsycopgConnector(
            conninfo=libpq_url(host.settings.database_url), min_size=1, max_size=max(4, min(self._concurrency, 20))
        )
        self._connector = connector
        self.app = App(connector=connector)
        self._register_tasks()
        self._schedules = QueueSchedules(self.app.tasks["vectorstep.fire"], QUEUE)
        self._running: set[asyncio.Task[Any]] = set()
        self._driving: set[str] = set()  # the runs this process's jobs drive right now
        self._loops: list[asyncio.Task[None]] = []
        self._backlog: OverloadCache = (0.0, False)
        self._run_events = run_events

    # -- the jobs -------------------------------------------------------------------------------

    def _register_tasks(self) -> None:
        host, app = self._host, self.app

        @app.task(name="vectorstep.drive", queue=QUEUE, pass_context=True)
        async def drive(context: JobContext, run_id: str) -> None:
            await self._job(context, run_id, lambda owner: jobs.take_up(host, owner, run_id, left_by=jobs.ANYONE))

        @app.task(name="vectorstep.recover", queue=QUEUE, pass_context=True)
        async def recover(context: JobContext, run_id: str, left_by: str | None) -> None:
            await self._job(context, run_id, lambda owner: jobs.take_up(host, owner, run_id, left_by=left_by))

        @app.task(name="vectorstep.resume", queue=QUEUE, pass_context=True)
        async def resume(context: JobContext, run_id: str, approval_id: str) -> None:
            await self._job(context, run_id, lambda owner: jobs.resume(host, owner, run_id, approval_id))

        @app.task(name="vectorstep.continue_parent", queue=QUEUE, pass_context=True)
        async def continue_parent(context: JobContext, run_id: str) -> None:
            await self._job(context, run_id, lambda owner: jobs.continue_parent(host, owner, run_id))

        @app.task(name="vectorstep.fire", queue=QUEUE)
        async def fire(timestamp: int, pipeline: str, cron: str) -> None:
            await self._schedules.fire(host, timestamp, pipeline, cron)

    async def _job(self, context: JobContext, run_id: str, work: Callable[[str], Awaitable[RunRecord | None]]) -> None:
        owner = f"worker:{context.job.worker_id}:{HOST}:{os.getpid()}"
        self._host.writer.owner = owner  # one procrastinate worker per process: the same name for every job
        if run_id in self._driving:  # a job of a run this process drives already: nothing to do twice
            log.warning("job %s of run %s: this process drives the run already", context.job.task_name, run_id)
            return
        task = asyncio.current_task()
        assert task is not None
        self._running.add(task)
        self._driving.add(run_id)
        try:
            record = await work(owner)
        except Exception:
            # Let go, so that maintenance takes the run up again instead of waiting for this worker to die.
            log.exception("job %s of run %s failed", context.job.task_name, run_id)
            await self._host.runs.release(run_id, owner)
            raise
        finally:
            self._running.discard(task)
            self._driving.discard(run_id)
        if record is not None and record.status.is_terminal and record.parent_run_id:
            await self._defer("vectorstep.continue_parent", record.parent_run_id, f"parent:{record.parent_run_id}")

    async def _defer(
        self, task_name: str, run_id: str, queueing_lock: str, *, at: datetime | None = None, **kwargs: Any
    ) -> None:
        """Defer a job of `run_id` unless the same one already waits in the queue (`at`: a timeout)."""
        task = self.app.tasks[task_name]
        priority = TIMEOUT if at is not None else _PRIORITY.get(task_name, UNDER_WAY)
        deferrer = task.configure(lock=run_id, queueing_lock=queueing_lock, schedule_at=at, priority=priority)
        with contextlib.suppress(AlreadyEnqueued):
            await deferrer.defer_async(run_id=run_id, **kwargs)

    # -- what the host asks -----------------------------------------------------------------------

    @property
    def in_flight(self) -> int:
        return len(self._running)

    def tasks(self) -> list[asyncio.Task[Any]]:
        return list(self._running)

    def observers(self) -> list[RunObserver]:
        return [_ApprovalTimeouts(self)]

    async def start_run(
        self, pipeline: PipelineSpec, context: NormalisedContext, *, run_id: str, dedup: DedupRule | None
    ) -> None:
        event = self._host.engine.runner.started(pipeline, context, run_id=run_id, dedup=dedup)
        await self._host.runs.insert_run(event.run, event.log)  # no lease: the worker that takes it claims it
        await self._defer("vectorstep.drive", run_id, f"drive:{run_id}")

    async def decided(self, approval: Approval) -> None:
        await self._defer("vectorstep.resume", approval.run_id, f"decided:{approval.id}", approval_id=approval.id)

    async def approval_asked(self, approval: Approval) -> None:
        """Its timeout is a job scheduled for then (a second late, so that it has expired everywhere)."""
        at = approval.expires_at + timedelta(seconds=1)
        await self._defer(
            "vectorstep.resume", approval.run_id, f"expires:{approval.id}", at=at, approval_id=approval.id
        )

    async def overloaded(self) -> bool:
        """Whether the runs waiting for a worker reach `concurrency.max_queued` (counted once a second)."""
        checked, full = self._backlog
        if time.monotonic() - checked < 1.0:
            return full
        query = text(
            "SELECT count(*) FROM (SELECT 1 FROM procrastinate_jobs WHERE queue_name = :queue "
            "AND task_name = 'vectorstep.drive' AND status = 'todo' LIMIT :limit) AS waiting"
        )
        limit = {"queue": QUEUE, "limit": self._max_queued}
        waiting = await self._host.database.read(lambda connection: int(connection.execute(query, limit).scalar_one()))
        self._backlog = (time.monotonic(), waiting >= self._max_queued)
        return self._backlog[1]

    async def reloaded(self, project: Project, *, announce: bool) -> None:
        self._schedules.load(project, catch_up=False)
        if announce:  # the other processes load it too
            query = text("SELECT pg_notify(:channel, :payload)")
            payload = {"channel": CONTROL_CHANNEL, "payload": f"reload {self._host.name}"}
            await self._host.database.write(lambda connection: connection.execute(query, payload))

    async def workers(self) -> int | None:
        return await workers_beating(self._host.database)

    # -- the process's loops ------------------------------------------------------------------------

    async def start(self) -> None:
        await self.app.open_async()
        self._loops = [asyncio.create_task(self._listen(), name="listen")]
        if self._work:
            self._schedules.load(self._host.project, catch_up=True)
            self._loops += [
                asyncio.create_task(self._worker(), name="worker"),
                asyncio.create_task(self._maintain(), name="maintenance"),
                asyncio.create_task(self._schedules.loop(), name="schedules"),
            ]

    async def stop(self) -> None:
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        await self.app.close_async()

    async def _worker(self) -> None:
        """The procrastinate worker, started again if it stops on its own (its database went away)."""
        delay = 1.0
        while True:
            started = time.monotonic()
            try:
                await self.app.run_worker_async(
                    queues=[QUEUE],
                    name=self._host.name,
                    concurrency=self._concurrency,
                    install_signal_handlers=False,
                    update_heartbeat_interval=HEARTBEAT_SECONDS,
                    stalled_worker_timeout=STALLED_SECONDS,
                    shutdown_graceful_timeout=self._grace,
                    fetch_job_polling_interval=1.0,
                    delete_jobs="successful",
                )
                log.error("the job worker stopped; starting it again in %.0f s", delay)
            except ConnectorException as error:
                log.error("the job worker lost its database (%s); starting it again in %.0f s", error, delay)
            delay = 1.0 if time.monotonic() - started > 60 else min(delay * 2, 30.0)
            await asyncio.sleep(delay)

    async def _maintain(self) -> None:
        while True:
            await asyncio.sleep(MAINTENANCE_SECONDS)
            try:
                await self.maintain()
            except Exception:  # the next round tries again
                log.exception("queue maintenance failed")

    async def maintain(self) -> None:
        """Retry the jobs of workers that stopped beating; give runs nothing moves the job they lack."""
        await self._retry_stalled()
        now = self._host.clock.now()
        quiet_since = now - timedelta(seconds=QUIET_SECONDS)
        found = await find_orphans(self._host.database, now, quiet_since=quiet_since, stalled_seconds=STALLED_SECONDS)
        for run_id, left_by in [*found.undriven, *_gone(found.leased_elsewhere)]:
            await self._defer("vectorstep.recover", run_id, f"recover:{run_id}", left_by=left_by)
        for run_id, approval_id in found.decided:
            await self._defer("vectorstep.resume", run_id, f"decided:{approval_id}", approval_id=approval_id)
        for run_id in found.parents:
            await self._defer("vectorstep.continue_parent", run_id, f"parent:{run_id}")

    async def _retry_stalled(self) -> None:
        """One process at a time (an advisory lock): two processes that both saw a job stalled would
        otherwise retry it twice, the second time while a live worker already runs it again."""
        manager = self.app.job_manager
        async with self._connector.pool.connection() as connection:
            locked = await connection.execute("SELECT pg_try_advisory_lock(%s)", (STALLED_LOCK,))
            if not (row := await locked.fetchone()) or not row[0]:
                return  # another process does it this round
            try:
                for job in await manager.get_stalled_jobs(queue=QUEUE, seconds_since_heartbeat=STALLED_SECONDS):
                    await self._retry(job)
            finally:
                await connection.execute("SELECT pg_advisory_unlock(%s)", (STALLED_LOCK,))

    async def _retry(self, job: Job) -> None:
        manager = self.app.job_manager
        try:
            await manager.retry_job(job)
        except UniqueViolation:
            # The same job waits in the queue already (its queueing lock is taken): this copy ends,
            # or it would hold its run's lock for good.
            await manager.finish_job(job=job, status=Status.FAILED, delete_job=False)
            log.warning("job %s of run %s: its worker stopped; the same job waits already", job.task_name, job.lock)
        except ConnectorException:
            return  # it ended meanwhile
        else:
            log.warning("job %s of run %s: its worker stopped; it runs again", job.task_name, job.lock)

    async def _listen(self) -> None:
        """Reloads announced by other processes, and every run's log lines (for live pages)."""
        connector = self.app.connector
        while True:
            try:
                await connector.listen_notify(self._notified, [CONTROL_CHANNEL, RUN_EVENTS_CHANNEL])
            except ConnectorException as error:
                log.warning("listening for notifications failed (%s); listening again in 2 s", error)
                await asyncio.sleep(2)

    async def _notified(self, *, channel: str, payload: str) -> None:
        if channel == RUN_EVENTS_CHANNEL:
            if self._run_events is not None:
                run_id, _, event = payload.partition(" ")
                self._run_events(run_id, event)
            return
        command, _, sender = payload.partition(" ")
        if command == "reload" and sender != self._host.name:
            problems = await self._host.reload()
            log.info("reloaded as process %s asked (%d problems)", sender, len(problems))


async def workers_beating(database: Database) -> int:
    """How many workers (in `serve` or `vectorstep worker` processes) beat right now."""
    query = text("SELECT count(*) FROM procrastinate_workers WHERE last_heartbeat >= now() - make_interval(secs => :s)")
    return await database.read(lambda connection: int(connection.execute(query, {"s": STALLED_SECONDS}).scalar_one()))


async def hand_decision_to_workers(database_url: str, approval: Approval) -> None:
    """From a process that drives no runs (a CLI decision): the workers resume the run, as if the
    service had taken the decision."""
    app = App(connector=PsycopgConnector(conninfo=libpq_url(database_url), min_size=1, max_size=1))
    async with app.open_async():
        deferrer = app.configure_task(
            name="vectorstep.resume",
            lock=approval.run_id,
            queueing_lock=f"decided:{approval.id}",
            queue=QUEUE,
            priority=UNDER_WAY,
        )
        with contextlib.suppress(AlreadyEnqueued):
            await deferrer.defer_async(run_id=approval.run_id, approval_id=approval.id)


def _gone(leased: Iterable[tuple[str, str]]) -> list[tuple[str, str | None]]:
    """The runs of a process outside the queue (a `vectorstep run`) that is known to be gone."""
    return [(run_id, owner) for run_id, owner in leased if holder_is_gone(owner)]


class _ApprovalTimeouts:
    """Schedules the job that applies an approval's timeout, as the run starts to wait."""

    def __init__(self, dispatcher: QueueDispatcher) -> None:
        self._dispatcher = dispatcher

    async def notify(self, event: RunEvent) -> None:
        if isinstance(event, RunWaiting):
            await self._dispatcher.approval_asked(event.approval)
