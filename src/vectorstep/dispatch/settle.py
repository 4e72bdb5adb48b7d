"""A run whose driver stopped, now held by this process: it waits for the person it asked, or goes as
its pipeline's `durable:` says (resumed, started again, escalated, or marked interrupted)."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING

from vectorstep.domain.approvals import ApprovalStatus
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.records import LogEntry, ResumePoint, RunRecord
from vectorstep.domain.status import RunStatus
from vectorstep.engine.recovery import STOPPED, Recovery, recovery
from vectorstep.errors import ConfigError
from vectorstep.spec.snapshot import spec_from_snapshot

if TYPE_CHECKING:
    from vectorstep.dispatch.host import RunHost

Drive = Callable[[], Awaitable[RunRecord]]


async def settle(host: RunHost, run: RunRecord, now: datetime, owner: str) -> Drive | None:
    """What drives the run on when it resumes (the caller runs it), or None when it was settled here.

    A run that had asked a person waits for the answer — or, answered already, goes on from it.

    `owner` is the lease this process took of the run; a run that only waits is parked without it.
    """
    asked = await host.approvals.for_run(run.run_id)
    if asked and asked[-1].step not in {step.name for step in run.steps}:
        decided = await host.engine.desk.settle(asked[-1]) if host.engine.desk is not None else asked[-1]
        if decided.status is not ApprovalStatus.PENDING:  # answered meanwhile: it goes on from there
            return lambda: host.engine.resume(ResumePoint(run, decided))
        message = f"waiting for a person: approval {asked[-1].id[:12]} (recorded after its driver stopped)"
        log_entry = LogEntry(run.run_id, now, "info", "run_waiting", message)
        # Parked without a lease: whoever sees the decision resumes it.
        await host.runs.set_status(run.run_id, RunStatus.WAITING, log_entry, release=owner)
        return None
    if not run.spec:  # nothing to continue from (a run recorded before snapshots were kept)
        await interrupted(host, run, now, STOPPED)
        return None
    try:  # what a resumed run starts from must read back, or it is not resumed
        pipeline = spec_from_snapshot(run.spec)
        context = NormalisedContext.from_dict(run.context)
        recorded = {step.name for step in run.steps}
        plan = recovery(pipeline, recorded, run.started_at, now, durable_by_default=host.durable_by_default)
    except (ConfigError, ValueError, KeyError, TypeError) as error:
        plan = Recovery("interrupt", f"{STOPPED}; it cannot be resumed: {type(error).__name__}: {error}")
    runner = host.engine.runner
    if plan.action == "resume":
        reason = f"resumed after the process driving it stopped (durable: resume), taken up by {owner}"
        return lambda: runner.resume_interrupted(run, plan.start, reason=reason)
    if plan.action == "escalate":
        await runner.escalate_interrupted(run, plan.reason)
    elif plan.action == "rerun":
        again = uuid.uuid4().hex
        await host.dispatcher.start_run(pipeline, context, run_id=again, dedup=None)
        await interrupted(host, run, now, f"{plan.reason} as run {again}")
    else:
        await interrupted(host, run, now, plan.reason)
    return None


async def interrupted(host: RunHost, run: RunRecord, now: datetime, reason: str) -> None:
    entry = LogEntry(run.run_id, now, "warning", "run_finished", f"run interrupted: {reason}")
    await host.runs.finish_run(
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
