"""The running service: one engine, the database, runs in the background, and the loops that keep them.

- An accepted run has its row before the caller gets an answer (dedup is decided in that write).
- A run waiting on a person is parked: it holds no worker; the resumer continues it once decided.
- Runs a dead process left `running` are marked `interrupted` on start; none is ever stranded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from vectorstep.clock import Clock, SystemClock
from vectorstep.domain.approvals import TIMEOUT, Approval, ApprovalStatus
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.events import RunObserver
from vectorstep.domain.records import DedupRule, LogEntry, ResumePoint, RunRecord
from vectorstep.domain.status import RUN_ENDED, RunStatus
from vectorstep.engine.entries import step_index
from vectorstep.engine.preflight import preflight, settings_problems
from vectorstep.engine.recovery import STOPPED, Recovery, recovery
from vectorstep.engine.services import EXECUTOR_CAPABILITIES, Engine
from vectorstep.errors import ConfigError, DuplicateRunError, Problem
from vectorstep.leases import holder_is_gone
from vectorstep.spec.pipelines import LoadedPipeline
from vectorstep.spec.project import Project, load_project
from vectorstep.spec.settings import Settings
from vectorstep.spec.snapshot import spec_from_snapshot
from vectorstep.store.approvals import ApprovalRepository
from vectorstep.store.calibration import CalibrationRepository
from vectorstep.store.database import Database, answers, connect
from vectorstep.store.feedback import FeedbackRepository, Mark
from vectorstep.store.migrate import upgrade
from vectorstep.store.runs import RunRepository
from vectorstep.store.sessions import SessionRepository
from vectorstep.store.writer import LEASE_SECONDS, StoreWriter, keep_leases
from vectorstep.telemetry import configure as configure_tracing
from vectorstep.web.live import LiveEvents
from vectorstep.web.metrics import Metrics
from vectorstep.web.runs_in_flight import InFlight
from vectorstep.web.schedule import Scheduler

log = logging.getLogger(__name__)
RESUME_EVERY_SECONDS = 2.0


@dataclass(frozen=True)
class Outcome:
    """What became of an event: accepted, deduplicated, skipped_testing or overloaded."""

    status: str
    run_id: str | None = None
    pipeline: str | None = None


class Service:
    def __init__(self, settings: Settings, *, clock: Clock | None = None) -> None:
        self.settings = settings
        self.clock = clock or SystemClock()
        self.owner = f"serve:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.database: Database = connect(settings.database_url)
        self.runs = RunRepository(self.database)
        self.approvals = ApprovalRepository(self.database)
        self.feedback = FeedbackRepository(self.database)
        self.sessions = SessionRepository(self.database)
        self.metrics = Metrics(self._pending_count)
        self.tracing = configure_tracing(settings.spec.telemetry)
        self.live = LiveEvents()
        self.in_flight = InFlight(settings.spec.concurrency.max_runs)
        self.project: Project = load_project(settings)
        for warning in self.project.warnings:
            log.warning("%s", warning)
        for token in settings.spec.auth.tokens:
            if "role" not in token.model_fields_set:
                log.warning("auth token %s has no `role`: it may only post events (role intake)", token.name)
        self.blocked = self._blocked(self.project)
        self.engine = self._engine(self.project)
        self._wake = asyncio.Event()
        self._loops: list[asyncio.Task[None]] = []
        self._warm_up: asyncio.Task[None] | None = None  # the current engine's, see `warming`
        self._closing: set[asyncio.Task[None]] = set()  # engines replaced by a reload, closed once idle

    def _engine(self, project: Project) -> Engine:
        observers: list[RunObserver] = [StoreWriter(self.runs, self.owner), self.metrics, self.live]
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
        )

    async def start(self) -> None:
        await upgrade(self.database)
        await self._recover()
        scheduler = Scheduler(self, self.clock)
        self._loops = [
            asyncio.create_task(keep_leases(self.runs, self.owner, self.clock), name="leases"),
            asyncio.create_task(self._resume_loop(), name="resumer"),
            asyncio.create_task(scheduler.loop(), name="scheduler"),
        ]
        self._start_warm_up()

    @property
    def warming(self) -> bool:
        """Whether the current engine still loads its agents' models and starts their tool servers."""
        return self._warm_up is None or not self._warm_up.done()

    def _start_warm_up(self) -> None:
        """Warm the current engine (at start, and after a reload made a new one)."""
        if self._warm_up is not None:
            self._warm_up.cancel()
        self._warm_up = asyncio.create_task(_warmed(self.engine), name="warm-up")

    async def stop(self) -> None:
        tasks = [*self._loops, *([self._warm_up] if self._warm_up is not None else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await self.in_flight.drain(timeout_seconds=10)
        await asyncio.gather(*self._closing, return_exceptions=True)
        await self.engine.aclose()
        await self.database.dispose()

    # -- runs ---------------------------------------------------------------------------------

    async def accept(
        self, loaded: LoadedPipeline, context: NormalisedContext, *, gated: bool, allow_testing: bool = False
    ) -> Outcome:
        """Start a run in the background; the row exists when this returns `accepted`."""
        spec = loaded.spec
        if self.blocked.get(spec.name):
            raise ConfigError(self.blocked[spec.name])
        if gated and spec.stage == "testing" and not allow_testing:
            return Outcome("skipped_testing", pipeline=spec.name)
        if self.in_flight.full:
            return Outcome("overloaded", pipeline=spec.name)
        if spec.team is not None and context.team != spec.team:
            context = replace(context, team=spec.team)  # a team's pipeline runs for that team
        dedup = self._dedup(loaded, context) if gated else None
        run_id = uuid.uuid4().hex
        try:
            drive = await self.engine.runner.begin(spec, context, run_id=run_id, dedup=dedup)
        except DuplicateRunError as duplicate:
            return Outcome("deduplicated", duplicate.run_id, spec.name)
        self.in_flight.start(run_id, drive)
        return Outcome("accepted", run_id, spec.name)

    def _dedup(self, loaded: LoadedPipeline, context: NormalisedContext) -> DedupRule | None:
        rule = loaded.spec.trigger.dedup or self.settings.spec.dedup
        if not rule.enabled or not context.fingerprint:
            return None
        return DedupRule(f"{loaded.spec.name}:{context.fingerprint}", rule.window_seconds)

    # -- people ---------------------------------------------------------------------------------

    async def decide(self, approval_id: str, approve: bool, by: str) -> tuple[Approval, bool]:
        if self.engine.desk is None:  # pragma: no cover - the service always has a desk
            raise ConfigError([Problem("service", None, "", "no approval desk")])
        approval, changed = await self.engine.desk.decide(approval_id, approve, by)
        if changed:
            self.metrics.decided(approval.approved, approval.decided_by == TIMEOUT, approval.stage)
        self._wake.set()
        return approval, changed

    async def mark(self, mark: Mark) -> None:
        pipeline, stage = await self.feedback.mark(mark)
        self.metrics.marked(pipeline, stage, mark.label)

    async def _resume_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), RESUME_EVERY_SECONDS)
            self._wake.clear()
            try:
                await self._recover()
                await self.resume_decided()
                await self.resume_parents()
            except Exception:  # keep resuming the others; this one is retried next round
                log.exception("resuming waiting runs failed")

    async def resume_decided(self) -> None:
        """Continue every parked run whose approval was decided (or expired) and that nobody drives."""
        now = self.clock.now()
        for run_id in await self.runs.unattended(RunStatus.WAITING, now):
            if self.in_flight.full or self.in_flight.holds(run_id) or self.engine.desk is None:
                continue
            asked = await self.approvals.for_run(run_id)
            if not asked:
                continue  # it waits for its sub-pipeline run (`resume_parents`)
            waiting_on = asked[-1]
            waiting_on = await self.engine.desk.settle(waiting_on)
            if waiting_on.status is ApprovalStatus.PENDING:
                continue
            if not await self.runs.claim(run_id, self.owner, now + timedelta(seconds=LEASE_SECONDS), now):
                continue
            point = ResumePoint(await self.runs.get_run(run_id), waiting_on)
            self.in_flight.start(run_id, lambda point=point: self.engine.resume(point))  # type: ignore[misc]

    async def resume_parents(self) -> None:
        """Continue every parked run whose sub-pipeline run has ended, at the step that started it."""
        now = self.clock.now()
        for run_id in await self.runs.parents_to_continue(now):
            if self.in_flight.full or self.in_flight.holds(run_id):
                continue
            if not await self.runs.claim(run_id, self.owner, now + timedelta(seconds=LEASE_SECONDS), now):
                continue
            run = await self.runs.get_run(run_id)
            done, ended = {step.name for step in run.steps}, {status.value for status in RUN_ENDED}
            child = next((c for c in run.children if c.step not in done and c.status in ended), None)
            if run.status is not RunStatus.WAITING or child is None:  # continued meanwhile by another process
                await self.runs.release(run_id, self.owner)
                continue
            start = step_index(spec_from_snapshot(run.spec or {}), child.step or "")
            reason = f"resumed: its sub-pipeline run {child.run_id} ended {child.status}"
            self.in_flight.start(
                run_id,
                lambda run=run, start=start, reason=reason: self.engine.runner.resume_interrupted(  # type: ignore[misc]
                    run, start, reason=reason
                ),
            )

    async def _recover(self) -> None:
        """Runs a stopped process left `running` are settled: none is ever left hanging.

        On start and then every round of the resumer: runs whose lease ran out, and at once those
        whose holder was a process of this host that is gone (killed and restarted a second later).
        One that had asked a person (the approval is written before the run says it waits) waits
        for that answer; any other is marked interrupted.
        """
        now = self.clock.now()
        unattended = await self.runs.unattended(RunStatus.RUNNING, now, limit=10_000)
        left: dict[str, str | None] = dict.fromkeys(unattended)  # run id → the gone holder to take it from
        leased = await self.runs.leases(RunStatus.RUNNING, now)
        # Asked once per holder, not per run: each question is a signal and a /proc read.
        gone_holders = {owner for owner in {owner for _, owner in leased} - {self.owner} if holder_is_gone(owner)}
        left.update((run_id, owner) for run_id, owner in leased if owner in gone_holders)
        for run_id, gone in left.items():
            lease = now + timedelta(seconds=LEASE_SECONDS)
            taken = (
                await self.runs.take_over(run_id, gone, self.owner, lease)
                if gone is not None
                else await self.runs.claim(run_id, self.owner, lease, now)
            )
            if taken:  # else another process is settling it
                await self._settle(await self.runs.get_run(run_id), now)

    async def _settle(self, run: RunRecord, now: datetime) -> None:
        """A run left behind waits for the person it asked, or goes as its pipeline's `durable:` says."""
        asked = await self.approvals.for_run(run.run_id)
        if asked and asked[-1].step not in {step.name for step in run.steps}:
            message = f"waiting for a person: approval {asked[-1].id[:12]} (recorded on restart)"
            log_entry = LogEntry(run.run_id, now, "info", "run_waiting", message)
            await self.runs.set_status(run.run_id, RunStatus.WAITING, log_entry)
            await self.runs.release(run.run_id, self.owner)  # parked: whoever sees the decision resumes it
            return
        if not run.spec:  # nothing to continue from (a run recorded before snapshots were kept)
            await self._interrupted(run, now, STOPPED)
            return
        try:  # what a resumed run starts from must read back, or it is not resumed
            pipeline = spec_from_snapshot(run.spec)
            context = NormalisedContext.from_dict(run.context)
            plan = recovery(pipeline, {step.name for step in run.steps}, run.started_at, now)
        except (ConfigError, ValueError, KeyError, TypeError) as error:
            plan = Recovery("interrupt", f"{STOPPED}; it cannot be resumed: {type(error).__name__}: {error}")
        if plan.action == "resume":
            self.in_flight.start(run.run_id, lambda: self.engine.runner.resume_interrupted(run, plan.start))
        elif plan.action == "escalate":
            await self.engine.runner.escalate_interrupted(run, plan.reason)
        elif plan.action == "rerun":
            again = uuid.uuid4().hex
            drive = await self.engine.runner.begin(pipeline, context, run_id=again)
            await self._interrupted(run, now, f"{plan.reason} as run {again}")
            self.in_flight.start(again, drive)
        else:
            await self._interrupted(run, now, plan.reason)

    async def _interrupted(self, run: RunRecord, now: datetime, reason: str) -> None:
        entry = LogEntry(run.run_id, now, "warning", "run_finished", f"run interrupted: {reason}")
        await self.runs.finish_run(
            run.run_id,
            status=RunStatus.INTERRUPTED,
            finished_at=now,
            error=reason,
            input_tokens=run.input_tokens,
            output_tokens=run.output_tokens,
            cost=run.cost,
            log=entry,
            release=True,
        )

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

    async def reload(self) -> list[Problem]:
        """Load the pipelines, steps and agents again; runs in flight finish on what they started with."""
        project = load_project(self.settings)
        previous, started_on_it = self.engine, self.in_flight.tasks()
        self.project, self.blocked, self.engine = project, self._blocked(project), self._engine(project)
        self._start_warm_up()
        closing = asyncio.create_task(self._close_after(previous, started_on_it))
        self._closing.add(closing)
        closing.add_done_callback(self._closing.discard)
        return self.problems()

    async def _close_after(self, engine: Engine, runs: list[asyncio.Task[RunRecord]]) -> None:
        await asyncio.gather(*runs, return_exceptions=True)
        await engine.aclose()

    async def _pending_count(self) -> int:
        return await self.approvals.count_pending()


async def _warmed(engine: Engine) -> None:
    try:
        await engine.runtime.warm_up()
    except Exception as error:  # what did not warm up starts on first use, and says why there
        log.warning("warming up the agent runtime failed: %s", error)
