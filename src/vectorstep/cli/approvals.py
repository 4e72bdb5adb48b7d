"""`vectorstep approvals list|approve|reject`: decide what a run waits for, from any terminal.

On PostgreSQL with workers running, the decision goes to them: a worker resumes the run, as if the
service had taken it. Otherwise deciding also continues the run when no live process drives it
any more (it was restarted, or the terminal that started it is gone): the decision is recorded,
and this process resumes it.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import click

from vectorstep.cli.common import HISTORY_KEYS, config_option, open_runs, reports_errors, run_async, settings_from
from vectorstep.cli.completion import approval_ids, run_ids
from vectorstep.cli.interactive import terminal_user
from vectorstep.cli.output import Output
from vectorstep.cli.run import Session, session
from vectorstep.cli.show import print_run
from vectorstep.clock import SystemClock
from vectorstep.domain.approvals import Approval, ApprovalStatus
from vectorstep.domain.records import ResumePoint, RunRecord
from vectorstep.domain.status import RunStatus, exit_code
from vectorstep.errors import ConfigError, NotFoundError
from vectorstep.spec.project import load_project
from vectorstep.spec.settings import Settings
from vectorstep.store.approvals import ApprovalRepository
from vectorstep.store.writer import LEASE_SECONDS


@click.group("approvals")
def approvals_group() -> None:
    """List and decide human approvals."""


@approvals_group.command("list")
@click.option("--all", "show_all", is_flag=True, help="Also decided approvals (the 100 most recent).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_option
@reports_errors
def list_command(show_all: bool, as_json: bool, config_path: Path | None) -> int:
    """Pending approvals, newest first."""
    found = run_async(
        _list(settings_from(config_path, only=HISTORY_KEYS), None if show_all else ApprovalStatus.PENDING)
    )
    out = Output()
    if as_json:
        out.json([approval.as_json() for approval in found])
        return 0
    if not found:
        out.line("no pending approvals" if not show_all else "no approvals yet")
        return 0
    rows = [
        (
            approval.id[:12],
            approval.status.value,
            approval.pipeline,
            approval.check or approval.step,
            approval.stage,
            approval.expires_at.strftime("%H:%M:%S"),
            approval.message.splitlines()[0][:70] if approval.message else "",
        )
        for approval in found
    ]
    out.table(("approval", "status", "pipeline", "step/check", "stage", "expires (UTC)", "message"), rows)
    return 0


@approvals_group.command("approve")
@click.argument("approval_id", shell_complete=approval_ids)
@click.option("--by", default=None, help="Who decides (default: your user name).")
@config_option
@reports_errors
def approve_command(approval_id: str, by: str | None, config_path: Path | None) -> int:
    """Approve APPROVAL_ID (a unique prefix is enough)."""
    return run_async(_decide(settings_from(config_path), approval_id, True, by or terminal_user()))


@approvals_group.command("reject")
@click.argument("approval_id", shell_complete=approval_ids)
@click.option("--by", default=None, help="Who decides (default: your user name).")
@config_option
@reports_errors
def reject_command(approval_id: str, by: str | None, config_path: Path | None) -> int:
    """Reject APPROVAL_ID (a unique prefix is enough)."""
    return run_async(_decide(settings_from(config_path), approval_id, False, by or terminal_user()))


async def _list(settings: Settings, status: ApprovalStatus | None) -> list[Approval]:
    runs = await open_runs(settings)
    try:
        return await ApprovalRepository(runs.database).list_approvals(status=status)
    finally:
        await runs.database.dispose()


async def _decide(settings: Settings, approval_id: str, approve: bool, by: str) -> int:
    out = Output()
    project = load_project(settings)
    async with session(settings, project) as active:
        if active.engine.desk is None:  # pragma: no cover - a session always has a desk
            raise ConfigError.single(settings.source, "no approval desk")
        approval, changed = await active.engine.desk.decide(approval_id, approve, by)
        verdict = f"{approval.status.value} by {approval.decided_by}"
        if changed:
            out.line(f"approval {approval.id[:12]} {verdict}", style="green" if approval.approved else "yellow")
        else:
            out.line(f"approval {approval.id[:12]} was already {verdict}", style="yellow")
        if changed and await _handed_to_workers(settings, active, approval):
            out.line(f"run {approval.run_id[:12]} continues on a worker (the job queue has it)")
            return 0
        return await continue_if_unattended(active, approval.run_id, out) or 0


async def _handed_to_workers(settings: Settings, active: Session, approval: Approval) -> bool:
    """On PostgreSQL, a decision goes to the workers when one is running."""
    if settings.database_url.startswith("sqlite"):
        return False
    from vectorstep.dispatch.queue import hand_decision_to_workers, workers_beating  # noqa: PLC0415

    if not await workers_beating(active.runs.database):
        return False
    await hand_decision_to_workers(settings.database_url, approval)
    return True


async def continue_if_unattended(active: Session, run_id: str, out: Output) -> int | None:
    """Resume the run here unless a live process is driving it; None when this process did not."""
    run = await active.runs.get_run(run_id)
    if run.status is RunStatus.RUNNING:  # the process that waited saw the decision first
        out.line(f"run {run_id[:12]} continues in the process that waits for it")
        return None
    if run.status is not RunStatus.WAITING:
        out.line(f"run {run_id[:12]} has ended: {run.status.value}")
        return None
    waiting_on = (await active.approvals.for_run(run_id))[-1]
    if active.engine.desk is not None:
        waiting_on = await active.engine.desk.settle(waiting_on)  # it may have expired with nobody waiting
    if waiting_on.status is ApprovalStatus.PENDING:
        out.line(f"run {run_id[:12]} still waits for approval {waiting_on.id[:12]}")
        return None
    clock = SystemClock()
    now = clock.now()
    if not await active.runs.claim(run_id, active.owner, now + timedelta(seconds=LEASE_SECONDS), now):
        _, until = await active.runs.lease(run_id)
        out.line(
            f"run {run_id[:12]} continues in the process that waits for it"
            + (
                f" (if that process is gone, `vectorstep runs resume {run_id[:12]}` after {until:%H:%M:%S} UTC)"
                if until
                else ""
            )
        )
        return None
    out.line(f"continuing run {run_id[:12]} here (no process was driving it)", style="bold")
    record = await active.resume(ResumePoint(run, waiting_on))
    print_run(record, out)
    return exit_code(record.status)


@click.command("resume")
@click.argument("run_id", shell_complete=run_ids)
@config_option
@reports_errors
def resume_command(run_id: str, config_path: Path | None) -> int:
    """Continue a waiting run whose approval was decided while no process was driving it."""
    settings = settings_from(config_path)
    return run_async(_resume(settings, run_id))


async def _resume(settings: Settings, given: str) -> int:
    out = Output()
    async with session(settings, load_project(settings)) as active:
        run_id = await active.runs.resolve_run_id(given)
        run: RunRecord = await active.runs.get_run(run_id)
        if run.status is not RunStatus.WAITING:
            raise NotFoundError(f"run {run_id[:12]} is not waiting (it is {run.status.value})")
        code = await continue_if_unattended(active, run_id, out)
        if code is None:  # said why above; nothing was resumed here
            out.line("nothing was resumed", style="yellow")
            return 1
        return code
