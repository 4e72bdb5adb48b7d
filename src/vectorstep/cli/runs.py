"""`vectorstep runs list|show`: what ran, from the database."""

from __future__ import annotations

import asyncio
from pathlib import Path

import click

from vectorstep.cli.common import HISTORY_KEYS, config_option, open_runs, reports_errors, run_async, settings_from
from vectorstep.cli.completion import run_ids
from vectorstep.cli.output import Output, clipped, duration
from vectorstep.cli.show import print_run
from vectorstep.domain.records import RunRecord
from vectorstep.domain.status import RunStatus, exit_code
from vectorstep.spec.settings import Settings
from vectorstep.store.runs import RunFilter


@click.group("runs")
def runs_group() -> None:
    """List and inspect recorded runs."""


@runs_group.command("list")
@click.option("--status", type=click.Choice([status.value for status in RunStatus]), help="Only runs with this status.")
@click.option("--pipeline", help="Only runs of this pipeline.")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_option
@reports_errors
def list_command(status: str | None, pipeline: str | None, limit: int, as_json: bool, config_path: Path | None) -> int:
    """The most recent runs, newest first."""
    runs = run_async(
        _list(settings_from(config_path, only=HISTORY_KEYS), RunFilter(status=status, pipeline=pipeline), limit)
    )
    out = Output()
    if as_json:
        out.json([run.as_json() for run in runs])
        return 0
    if not runs and (status or pipeline):
        wanted = ", ".join(
            part for part in (f"status {status}" if status else "", f"pipeline {pipeline}" if pipeline else "") if part
        )
        out.line(f"no runs with {wanted}")
        return 0
    if not runs:
        out.line("no runs yet — try `vectorstep demo`")
        return 0
    rows = [
        (
            run.run_id[:12],
            run.pipeline,
            run.status.value,
            run.stage,
            run.started_at.strftime("%Y-%m-%d %H:%M:%S"),
            duration((run.finished_at - run.started_at).total_seconds() * 1000) if run.finished_at else "—",
            clipped(run.error or "", 60),
        )
        for run in runs
    ]
    out.table(("run", "pipeline", "status", "stage", "started (UTC)", "duration", "reason"), rows, status_column=2)
    return 0


@runs_group.command("show")
@click.argument("run_id", shell_complete=run_ids)
@click.option("--json", "as_json", is_flag=True, help="Print the run record as JSON.")
@config_option
@reports_errors
def show_command(run_id: str, as_json: bool, config_path: Path | None) -> int:
    """One run: its steps, outcome and log (RUN_ID may be a unique prefix)."""
    run = run_async(_show(settings_from(config_path, only=HISTORY_KEYS), run_id))
    out = Output()
    if as_json:
        out.json(run.as_json())
    else:
        print_run(run, out, show_log=True)
    return 0


@runs_group.command("watch")
@click.argument("run_id", shell_complete=run_ids)
@click.option(
    "--interval", type=click.FloatRange(0.1, 60), default=0.5, show_default=True, help="Seconds between looks."
)
@config_option
@reports_errors
def watch_command(run_id: str, interval: float, config_path: Path | None) -> int:
    """Follow a run as it happens (in any process): its log lines as they are written, then its steps.

    Exits with the run's exit code once it ends (0 completed or stopped, 3 escalated, 4 aborted, 1
    otherwise); Ctrl-C stops watching, not the run."""
    run = run_async(_watch(settings_from(config_path, only=HISTORY_KEYS), run_id, interval, Output()))
    return exit_code(run.status)


async def _watch(settings: Settings, given: str, interval: float, out: Output) -> RunRecord:
    runs = await open_runs(settings)
    try:
        run_id = await runs.resolve_run_id(given)
        shown = 0
        while True:
            run = await runs.get_run(run_id, with_log=True)
            if shown == 0:
                out.line(
                    f"watching run {run.run_id}  {run.pipeline}  [{run.stage}] (Ctrl-C stops watching)", style="bold"
                )
            for entry in run.log[shown:]:
                style = "yellow" if entry.level == "warning" else None
                step = f"{entry.step}: " if entry.step else ""
                out.line(f"  {entry.ts.strftime('%H:%M:%S.%f')[:-3]} {step}{entry.message}", style=style)
            shown = len(run.log)
            if run.status.is_terminal:
                out.line()
                print_run(run, out)
                return run
            await asyncio.sleep(interval)
    finally:
        await runs.database.dispose()


async def _list(settings: Settings, where: RunFilter, limit: int) -> list[RunRecord]:
    runs = await open_runs(settings)
    try:
        return await runs.list_runs(where, limit=limit)
    finally:
        await runs.database.dispose()


async def _show(settings: Settings, given: str) -> RunRecord:
    runs = await open_runs(settings)
    try:
        return await runs.get_run(await runs.resolve_run_id(given), with_log=True)
    finally:
        await runs.database.dispose()
