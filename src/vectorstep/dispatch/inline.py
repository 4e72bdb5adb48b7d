"""SQLite: the one service process drives every run itself.

- A run waiting on a person is parked: it holds no worker; the resumer continues it once decided
  (from this process's API, or from a CLI on the same database file).
- Runs a stopped process left `running` are settled on start and every round after, at once when
  that process was on this host and is gone, otherwise when its lease runs out: none is stranded.
- The leases say which process drives a run, so a `vectorstep run` in a terminal beside the
  service keeps its own runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from vectorstep.dispatch.cron import Scheduler
from vectorstep.dispatch.in_flight import InFlight
from vectorstep.dispatch.settle import settle
from vectorstep.domain.approvals import Approval, ApprovalStatus
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.events import RunObserver
from vectorstep.domain.records import DedupRule, ResumePoint
from vectorstep.domain.status import RUN_ENDED, RunStatus
from vectorstep.engine.entries import step_index
from vectorstep.leases import holder_is_gone
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.project import Project
from vectorstep.spec.snapshot import spec_from_snapshot
from vectorstep.store.writer import LEASE_SECONDS, keep_leases

if TYPE_CHECKING:
    from vectorstep.dispatch.host import RunHost

log = logging.getLogger(__name__)
RESUME_EVERY_SECONDS = 2.0


class InlineDispatcher:
    name = "inline"

    def __init__(self, host: RunHost) -> None:
        self._host = host
        self.runs_in_flight = InFlight(host.settings.spec.concurrency.max_runs)
        self._wake = asyncio.Event()
        self._loops: list[asyncio.Task[None]] = []

    @property
    def in_flight(self) -> int:
        return self.runs_in_flight.count

    def tasks(self) -> list[asyncio.Task[Any]]:
        return list(self.runs_in_flight.tasks())

    def observers(self) -> list[RunObserver]:
        return []

    @property
    def _owner(self) -> str:
        return self._host.name

    async def start(self) -> None:
        await self.recover()
        host = self._host
        self._loops = [
            asyncio.create_task(keep_leases(host.runs, self._owner, host.clock), name="leases"),
            asyncio.create_task(self._resume_loop(), name="resumer"),
            asyncio.create_task(Scheduler(host, host.clock).loop(), name="scheduler"),
        ]

    async def stop(self) -> None:
        for task in self._loops:
            task.cancel()
        await asyncio.gather(*self._loops, return_exceptions=True)
        await self.runs_in_flight.drain(timeout_seconds=self._host.settings.spec.concurrency.shutdown_grace_seconds)

    async def overloaded(self) -> bool:
        return self.runs_in_flight.full

    async def start_run(
        self, pipeline: PipelineSpec, context: NormalisedContext, *, run_id: str, dedup: DedupRule | None
    ) -> None:
        drive = await self._host.engine.runner.begin(pipeline, context, run_id=run_id, dedup=dedup)
        self.runs_in_flight.start(run_id, drive)

    async def decided(self, approval: Approval) -> None:
        self._wake.set()

    async def workers(self) -> int | None:
        return None

    async def reloaded(self, project: Project, *, announce: bool) -> None:
        """The scheduler reads the project's schedules on each round; no other process drives runs."""

    async def _resume_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), RESUME_EVERY_SECONDS)
            self._wake.clear()
            try:
                await self.recover()
                await self.resume_decided()
                await self.resume_parents()
            except Exception:  # keep resuming the others; this one is retried next round
                log.exception("resuming waiting runs failed")

    async def resume_decided(self) -> None:
        """Continue every parked run whose approval was decided (or expired) and that nobody drives."""
        host, in_flight = self._host, self.runs_in_flight
        now = host.clock.now()
        for run_id in await host.runs.unattended(RunStatus.WAITING, now):
            if in_flight.full or in_flight.holds(run_id) or host.engine.desk is None:
                continue
            asked = await host.approvals.for_run(run_id)
            if not asked:
                continue  # it waits for its sub-pipeline run (`resume_parents`)
            waiting_on = await host.engine.desk.settle(asked[-1])
            if waiting_on.status is ApprovalStatus.PENDING:
                continue
            run = await host.runs.get_run(run_id)
            if waiting_on.step in {step.name for step in run.steps}:
                continue  # not what it waits for: it waits for its sub-pipeline run
            if not await host.runs.claim(run_id, self._owner, now + timedelta(seconds=LEASE_SECONDS), now):
                continue
            point = ResumePoint(run, waiting_on)
            in_flight.start(run_id, lambda point=point: host.engine.resume(point))  # type: ignore[misc]

    async def resume_parents(self) -> None:
        """Continue every parked run whose sub-pipeline run has ended, at the step that started it."""
        host, in_flight = self._host, self.runs_in_flight
        now = host.clock.now()
        for run_id in await host.runs.parents_to_continue(now):
            if in_flight.full or in_flight.holds(run_id):
                continue
            if not await host.runs.claim(run_id, self._owner, now + timedelta(seconds=LEASE_SECONDS), now):
                continue
            run = await host.runs.get_run(run_id)
            done, ended = {step.name for step in run.steps}, {status.value for status in RUN_ENDED}
            child = next((c for c in run.children if c.step not in done and c.status in ended), None)
            if run.status is not RunStatus.WAITING or child is None:  # continued meanwhile by another process
                await host.runs.release(run_id, self._owner)
                continue
            start = step_index(spec_from_snapshot(run.spec or {}), child.step or "")
            reason = f"resumed: its sub-pipeline run {child.run_id} ended {child.status}"
            in_flight.start(
                run_id,
                lambda run=run, start=start, reason=reason: host.engine.runner.resume_interrupted(  # type: ignore[misc]
                    run, start, reason=reason
                ),
            )

    async def recover(self) -> None:
        """Runs a stopped process left `running` are settled: none is ever left hanging.

        On start and then every round of the resumer: runs whose lease ran out, and at once those
        whose holder was a process of this host that is gone (killed and restarted a second later).
        """
        host = self._host
        now = host.clock.now()
        unattended = await host.runs.unattended(RunStatus.RUNNING, now, limit=10_000)
        left: dict[str, str | None] = dict.fromkeys(unattended)  # run id → the gone holder to take it from
        leased = await host.runs.leases(RunStatus.RUNNING, now)
        # Asked once per holder, not per run: each question is a signal and a /proc read.
        gone_holders = {owner for owner in {owner for _, owner in leased} - {self._owner} if holder_is_gone(owner)}
        left.update((run_id, owner) for run_id, owner in leased if owner in gone_holders)
        for run_id, gone in left.items():
            lease = now + timedelta(seconds=LEASE_SECONDS)
            taken = (
                await host.runs.take_over(run_id, gone, self._owner, lease)
                if gone is not None
                else await host.runs.claim(run_id, self._owner, lease, now)
            )
            if not taken:  # another process is settling it
                continue
            drive = await settle(host, await host.runs.get_run(run_id), now, self._owner)
            if drive is not None:
                self.runs_in_flight.start(run_id, drive)
