"""A process that drives runs: the project and its engine, the database, and the gate every event passes.

`vectorstep serve` is one (with the web app in front of it) and so is `vectorstep worker`. Who
drives a run is the dispatcher's business: `dispatch.inline` on SQLite, `dispatch.queue` on
PostgreSQL. An accepted run has its row before the caller gets an answer (dedup is decided in
that write).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Protocol

from vectorstep.clock import Clock, SystemClock
from vectorstep.domain.approvals import TIMEOUT, Approval
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.events import RunObserver
from vectorstep.domain.records import DedupRule
from vectorstep.engine.preflight import preflight, settings_problems, template_kinds
from vectorstep.engine.services import EXECUTOR_CAPABILITIES, Engine
from vectorstep.errors import ConfigError, DuplicateRunError, Problem
from vectorstep.leases import HOST
from vectorstep.metrics import Metrics
from vectorstep.prompts import BUILT_IN_PROMPTS, prompt_template
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.pipelines import LoadedPipeline
from vectorstep.spec.project import Project, load_project
from vectorstep.spec.settings import Settings
from vectorstep.store.approvals import ApprovalRepository
from vectorstep.store.calibration import CalibrationRepository
from vectorstep.store.database import Database, answers, connect
from vectorstep.store.dedup import lost_holder
from vectorstep.store.runs import RunRepository
from vectorstep.store.writer import StoreWriter
from vectorstep.telemetry import configure as configure_tracing
from vectorstep.templating import prepare

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Outcome:
    """What became of an event: accepted, deduplicated, skipped_testing or overloaded."""

    status: str
    run_id: str | None = None
    pipeline: str | None = None
    replaces: str | None = None  # accepted: the run of the same event that was lost, which this one takes over


class Dispatcher(Protocol):
    """Who drives a process's runs: this process (`inline`) or the workers of a job queue (`queue`)."""

    name: str

    @property
    def in_flight(self) -> int:
        """Runs this process drives right now."""
        ...

    def tasks(self) -> list[asyncio.Task[Any]]:
        """What drives this process's runs right now (a reload closes the old engine once they end)."""
        ...

    def observers(self) -> list[RunObserver]:
        """What the dispatcher watches in the runs this process drives."""
        ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    async def overloaded(self) -> bool:
        """Whether a new run would be one too many (the webhook answers 429)."""
        ...

    async def start_run(
        self, pipeline: PipelineSpec, context: NormalisedContext, *, run_id: str, dedup: DedupRule | None
    ) -> None:
        """Record a new run and have it driven; raises DuplicateRunError when `dedup` finds its event's run."""
        ...

    async def decided(self, approval: Approval) -> None:
        """A person (or the clock) decided: the run that waits on it continues."""
        ...

    async def workers(self) -> int | None:
        """How many queue workers beat right now (None: runs are not dispatched through a queue)."""
        ...

    async def reloaded(self, project: Project, *, announce: bool) -> None:
        """The project was loaded again (its schedules may have changed); `announce`: ask the other
        processes on the database to load it too."""
        ...


class RunHost:
    def __init__(
        self,
        settings: Settings,
        dispatcher: Callable[[RunHost], Dispatcher],
        *,
        clock: Clock | None = None,
        role: str = "serve",
    ) -> None:
        """`dispatcher` makes this host's dispatcher (`dispatch.inline` or `dispatch.queue`)."""
        self.settings = settings
        self.clock = clock or SystemClock()
        self.name = f"{role}:{HOST}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.database: Database = connect(settings.database_url)
        self.queued = not settings.database_url.startswith("sqlite")
        self.runs = RunRepository(self.database)
        self.approvals = ApprovalRepository(self.database)
        # The pending-approvals gauge says the same everywhere: the service shows it, a worker need not.
        self.metrics = Metrics(self.approvals.count_pending if role == "serve" else None)
        self.tracing = configure_tracing(settings.spec.telemetry)
        # Inline, this process holds (and renews) the lease of every run it drives; a queue worker
        # names itself once its first job tells it its worker id, and its leases never run out.
        self.writer = (
            StoreWriter(self.runs, None, lease_seconds=None) if self.queued else StoreWriter(self.runs, self.name)
        )
        self.project: Project = load_project(settings)
        for warning in self.project.warnings:
            log.warning("%s", warning)
        self.blocked = self._blocked(self.project)
        self.dispatcher = dispatcher(self)
        self.engine = self._engine(self.project)
        self._warm_up: asyncio.Task[None] | None = None  # the current engine's, see `warming`
        self._closing: set[asyncio.Task[None]] = set()  # engines replaced by a reload, closed once idle

    @property
    def durable_by_default(self) -> bool:
        """On PostgreSQL a pipeline without `durable:` is durable: any worker can take its runs up."""
        return self.queued

    def _engine(self, project: Project) -> Engine:
        observers: list[RunObserver] = [self.writer, self.metrics, *self.dispatcher.observers()]
        if self.tracing:
            from vectorstep.telemetry_spans import TraceObserver  # noqa: PLC0415 - only when tracing

            observers.append(TraceObserver())
        return Engine(
            project,
            observers=observers,
            approvals=self.approvals,
            clock=self.clock,
            park=True,
            calibration=CalibrationRepository(self.database),
            runs=self.runs,
            cancelled_runs_stay_running=self.queued,
        )

    async def start(self) -> None:
        await self.dispatcher.start()
        self._start_warm_up(rehearse_writes=True)

    @property
    def warming(self) -> bool:
        """Whether the current engine still loads its agents' models and starts their tool servers."""
        return self._warm_up is None or not self._warm_up.done()

    def _start_warm_up(self, *, rehearse_writes: bool = False) -> None:
        """Warm the current engine (at start, and after a reload made a new one); at start, the store's
        statements too (a reload changes none of them)."""
        if self._warm_up is not None:
            self._warm_up.cancel()
        rehearsal = functools.partial(self.runs.rehearse, self.clock.now()) if rehearse_writes else None
        self._warm_up = asyncio.create_task(_warmed(self.engine, rehearsal), name="warm-up")

    async def stop(self) -> None:
        if self._warm_up is not None:
            self._warm_up.cancel()
            await asyncio.gather(self._warm_up, return_exceptions=True)
        await self.dispatcher.stop()
        await asyncio.gather(*self._closing, return_exceptions=True)
        await self.engine.aclose()
        await self.database.dispose()

    # -- runs ---------------------------------------------------------------------------------

    async def accept(
        self, loaded: LoadedPipeline, context: NormalisedContext, *, gated: bool, allow_testing: bool = False
    ) -> Outcome:
        """Start a run; the row exists when this returns `accepted`."""
        spec = loaded.spec
        if self.blocked.get(spec.name):
            raise ConfigError(self.blocked[spec.name])
        if gated and spec.stage == "testing" and not allow_testing:
            return Outcome("skipped_testing", pipeline=spec.name)
        if await self.dispatcher.overloaded():
            return Outcome("overloaded", pipeline=spec.name)
        if spec.team is not None and context.team != spec.team:
            context = replace(context, team=spec.team)  # a team's pipeline runs for that team
        dedup = self._dedup(loaded, context) if gated else None
        replaces = await self.runs.database.read(lambda connection: lost_holder(connection, dedup)) if dedup else None
        run_id = uuid.uuid4().hex
        try:
            await self.dispatcher.start_run(spec, context, run_id=run_id, dedup=dedup)
        except DuplicateRunError as duplicate:
            return Outcome("deduplicated", duplicate.run_id, spec.name)
        return Outcome("accepted", run_id, spec.name, replaces)

    def _dedup(self, loaded: LoadedPipeline, context: NormalisedContext) -> DedupRule | None:
        rule = loaded.spec.trigger.dedup or self.settings.spec.dedup
        if not rule.enabled or not context.fingerprint:
            return None
        return DedupRule(f"{loaded.spec.name}:{context.fingerprint}", rule.window_seconds)

    async def decide(self, approval_id: str, approve: bool, by: str) -> tuple[Approval, bool]:
        if self.engine.desk is None:  # pragma: no cover - a host always has a desk
            raise ConfigError([Problem("service", None, "", "no approval desk")])
        approval, changed = await self.engine.desk.decide(approval_id, approve, by)
        if changed:
            self.metrics.decided(approval.approved, approval.decided_by == TIMEOUT, approval.stage)
            await self.dispatcher.decided(approval)
        return approval, changed

    async def database_answers(self) -> bool:
        return await answers(self.database)

    # -- configuration ----------------------------------------------------------------------------

    def _blocked(self, project: Project) -> dict[str, list[Problem]]:
        """What stops each pipeline from running (checked once per load, not per event)."""
        shared = settings_problems(self.settings)
        blocked = {}
        for name, loaded in project.pipelines.items():
            notifications = self.settings.spec.notifications
            problems = shared + project.problems_for(loaded) + preflight(loaded, EXECUTOR_CAPABILITIES, notifications)
            if problems:
                blocked[name] = problems
        return blocked

    def problems(self) -> list[Problem]:
        """Everything wrong with the loaded project, each problem once."""
        found = list(self.project.problems) + settings_problems(self.settings)
        for problems in self.blocked.values():
            found += [problem for problem in problems if problem not in found]
        return found

    async def reload(self, *, announce: bool = False) -> list[Problem]:
        """Load the pipelines, steps and agents again; runs in flight finish on what they started with.

        `announce`: every other process on the database loads them again too (an admin's reload)."""
        project = load_project(self.settings)
        previous, started_on_it = self.engine, self.dispatcher.tasks()
        self.project, self.blocked, self.engine = project, self._blocked(project), self._engine(project)
        self._start_warm_up()
        closing = asyncio.create_task(self._close_after(previous, started_on_it))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)
        await self.dispatcher.reloaded(project, announce=announce)
        return self.problems()

    async def _close_after(self, engine: Engine, runs: list[asyncio.Task[Any]]) -> None:
        await asyncio.gather(*runs, return_exceptions=True)
        await engine.aclose()


async def _warmed(engine: Engine, rehearse_writes: Callable[[], Awaitable[None]] | None) -> None:
    if rehearse_writes is not None:
        try:
            await rehearse_writes()
        except Exception as error:  # the first run compiles what was not rehearsed
            log.warning("rehearsing a run's writes failed: %s", error)
    await asyncio.to_thread(_compile_templates, engine.project)
    try:
        await engine.runtime.warm_up()
    except Exception as error:  # what did not warm up starts on first use, and says why there
        log.warning("warming up the agent runtime failed: %s", error)


def _compile_templates(project: Project) -> None:
    """The built-in prompts and every pipeline's templates, compiled before the first run renders them."""
    for name in BUILT_IN_PROMPTS:
        prepare(prompt_template(name), "strict")
    for loaded in project.pipelines.values():
        for text, kind in template_kinds(loaded):
            prepare(text, kind)
