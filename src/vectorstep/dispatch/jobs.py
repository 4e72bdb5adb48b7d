"""What each job of the queue does with its run (`dispatch.queue` defers them; any worker runs them).

Every job first takes the run's lease by compare-and-swap, so a run is driven by one process at a
time whatever the queue delivers twice; jobs of one run also never overlap (their `lock` is the
run id). A job that finds nothing to do — the run ended, or another process took it up — ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from vectorstep.dispatch.settle import settle
from vectorstep.dispatch.timing import STALLED_SECONDS
from vectorstep.domain.approvals import ApprovalStatus
from vectorstep.domain.records import ResumePoint, RunRecord
from vectorstep.domain.status import RUN_ENDED, RunStatus
from vectorstep.engine.entries import step_index
from vectorstep.leases import holder_is_gone
from vectorstep.spec.snapshot import spec_from_snapshot
from vectorstep.store.orphans import worker_gone

if TYPE_CHECKING:
    from vectorstep.dispatch.host import RunHost

ANYONE = "*"  # `take_up(left_by=ANYONE)`: whoever the lease names, this job's run is known to be left


async def take_up(host: RunHost, owner: str, run_id: str, *, left_by: str | None) -> RunRecord | None:
    """Drive a running run that nobody drives: from its start when it was never driven, otherwise as
    its pipeline's `durable:` says. `left_by`: the lease it was found under (ANYONE for its own job)."""
    run = await host.runs.get_run(run_id)
    if run.status is not RunStatus.RUNNING:
        return None  # it ended, or it is parked on a person (a decision's job resumes it)
    holder, _ = await host.runs.lease(run_id)
    if left_by not in (ANYONE, holder):
        return None  # taken up meanwhile
    now = host.clock.now()
    if not await _take_lease(host, run_id, holder, owner):
        return None
    if holder is None and not run.steps:
        return await host.engine.runner.drive_recorded(run, note=f"picked up by {owner}")
    drive = await settle(host, run, now, owner)
    return await drive() if drive is not None else None


async def _take_lease(host: RunHost, run_id: str, holder: str | None, owner: str, *, parked: bool = False) -> bool:
    """Take the run's lease from nobody, from this process, or from a holder that is gone. `parked`:
    the run waits, and a worker's lease left on it drives nothing."""
    now = host.clock.now()
    if holder is None or holder == owner:
        return await host.runs.claim(run_id, owner, None, now)
    if holder.startswith("worker:"):
        if parked or await worker_gone(host.database, holder, stalled_seconds=STALLED_SECONDS):
            return await host.runs.take_over(run_id, holder, owner, None)
        return False  # its worker still beats: it drives the run
    if holder_is_gone(holder):
        return await host.runs.take_over(run_id, holder, owner, None)
    return await host.runs.claim(run_id, owner, None, now)  # another process's lease: only once it ran out


async def _take_parked(host: RunHost, run_id: str, owner: str) -> bool:
    """The lease of a parked run. A worker's lease on a waiting run is a leftover (parking lets go of
    it): nothing drives a waiting run, so it is taken over."""
    holder, _ = await host.runs.lease(run_id)
    return await _take_lease(host, run_id, holder, owner, parked=True)


async def resume(host: RunHost, owner: str, run_id: str, approval_id: str) -> RunRecord | None:
    """Continue a run parked on `approval_id` once it is decided (or has expired)."""
    run = await host.runs.get_run(run_id)
    if run.status is RunStatus.RUNNING:  # this job ran before, and its worker died: take the run up
        return await take_up(host, owner, run_id, left_by=ANYONE)
    if run.status is not RunStatus.WAITING or host.engine.desk is None:
        return None
    asked = await host.approvals.for_run(run_id)
    if not asked or asked[-1].id != approval_id or asked[-1].step in {step.name for step in run.steps}:
        return None  # it waits for something else now
    approval = await host.engine.desk.settle(asked[-1])
    if approval.status is ApprovalStatus.PENDING:
        return None  # not decided and not yet expired (the timeout's own job comes back for it)
    if not await _take_parked(host, run_id, owner):
        return None
    return await host.engine.resume(ResumePoint(run, approval))


async def continue_parent(host: RunHost, owner: str, run_id: str) -> RunRecord | None:
    """Continue a run parked on its sub-pipeline run once that has ended, at the step that started it."""
    run = await host.runs.get_run(run_id)
    if run.status is RunStatus.RUNNING:  # this job ran before, and its worker died: take the run up
        return await take_up(host, owner, run_id, left_by=ANYONE)
    if run.status is not RunStatus.WAITING:
        return None
    done, ended = {step.name for step in run.steps}, {status.value for status in RUN_ENDED}
    child = next((c for c in run.children if c.step not in done and c.status in ended), None)
    if child is None or not await _take_parked(host, run_id, owner):
        return None
    start = step_index(spec_from_snapshot(run.spec or {}), child.step or "")
    reason = f"resumed: its sub-pipeline run {child.run_id} ended {child.status}"
    return await host.engine.runner.resume_interrupted(run, start, reason=reason)
