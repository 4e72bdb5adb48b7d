"""`vectorstep mark RUN[/STEP] correct|partial|incorrect`: a person's verdict on a run or one of its steps.

Calibration reads these marks (docs/configuration.md#calibration); marking again replaces the
verdict and keeps the history.
"""

from __future__ import annotations

import getpass
from dataclasses import replace
from pathlib import Path

import click

from vectorstep.cli.common import HISTORY_KEYS, config_option, open_runs, reports_errors, run_async, settings_from
from vectorstep.cli.completion import run_ids
from vectorstep.cli.output import Output
from vectorstep.clock import SystemClock
from vectorstep.spec.settings import Settings
from vectorstep.store.feedback import LABELS, FeedbackRepository, Mark


@click.command("mark")
@click.argument("target", metavar="RUN_ID[/STEP]", shell_complete=run_ids)
@click.argument("label", type=click.Choice(LABELS))
@click.option("--comment", default=None, help="Why, in a few words.")
@click.option("--by", "marked_by", default=None, help="Who marks (default: your login name).")
@config_option
@reports_errors
def mark_command(target: str, label: str, comment: str | None, marked_by: str | None, config_path: Path | None) -> int:
    """Mark a run, or one of its steps, correct, partial or incorrect (a unique run id prefix is enough)."""
    run_id, _, step = target.partition("/")
    wanted = Mark(run_id, step or None, label, comment, marked_by or getpass.getuser(), SystemClock().now())
    mark = run_async(_mark(settings_from(config_path, only=HISTORY_KEYS), wanted))
    what = f"step {mark.step} of run {mark.run_id[:12]}" if mark.step else f"run {mark.run_id[:12]}"
    Output().line(f"marked {what} {mark.label} (by {mark.marked_by})")
    return 0


async def _mark(settings: Settings, wanted: Mark) -> Mark:
    """Store `wanted`, its run id resolved from the prefix given."""
    runs = await open_runs(settings)
    try:
        mark = replace(wanted, run_id=await runs.resolve_run_id(wanted.run_id))
        await FeedbackRepository(runs.database).mark(mark)
        return mark
    finally:
        await runs.database.dispose()
