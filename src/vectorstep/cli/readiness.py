"""`vectorstep readiness PIPELINE`: is its own testing record good enough for `stage: production`? A CI gate."""

from __future__ import annotations

from pathlib import Path

import click

from vectorstep.cli.common import HISTORY_KEYS, config_option, open_runs, reports_errors, run_async, settings_from
from vectorstep.cli.completion import pipeline_names
from vectorstep.cli.output import Output
from vectorstep.clock import SystemClock
from vectorstep.readiness import pipeline_readiness
from vectorstep.spec.pipelines import LoadedPipeline
from vectorstep.spec.project import Project, load_project
from vectorstep.spec.readiness import EVIDENCE_LIMIT
from vectorstep.spec.settings import Settings
from vectorstep.trust.readiness import WORDS, PipelineReadiness

# What judging needs of the settings: the database, where pipelines and agents are, and whether agents
# run here (their versions known) — not a notification channel's token, which a CI job may not have.
READINESS_KEYS = (*HISTORY_KEYS, "pipelines_dir", "steps_dir", "agents_dir", "gateway")
EXIT_READY, EXIT_NOT_READY = 0, 1


@click.command("readiness")
@click.argument("pipeline", shell_complete=pipeline_names)
@click.option("--json", "as_json", is_flag=True, help="Print JSON (the same as GET /api/pipelines/NAME/readiness).")
@click.option("--explain", is_flag=True, help="Also print each tier's rule, with its numbers.")
@config_option
@reports_errors
def readiness_command(pipeline: str, as_json: bool, explain: bool, config_path: Path | None) -> int:
    """Whether PIPELINE's own testing runs show it ready to act in production, per step and tier.

    Exits 0 only when it is ready; 1 when it is building, not ready, has no data or has no readiness
    tiers; 2 for a mistake (an unknown pipeline, a broken file). Advisory: it never stops a run."""
    settings = settings_from(config_path, only=READINESS_KEYS)
    project = load_project(settings)
    loaded = project.pipeline(pipeline)
    report = run_async(_judge(settings, project, loaded))
    out = Output()
    if as_json:
        out.json(report.as_json())
    else:
        print_readiness(report, out, explain=explain)
    return EXIT_READY if report.verdict == "ready" else EXIT_NOT_READY


async def _judge(settings: Settings, project: Project, loaded: LoadedPipeline) -> PipelineReadiness:
    runs = await open_runs(settings)
    try:
        return await pipeline_readiness(loaded, project.agents, runs.database, now=SystemClock().now())
    finally:
        await runs.database.dispose()


def print_readiness(report: PipelineReadiness, out: Output, *, explain: bool = False) -> None:
    style = {"ready": "bold green", "not_ready": "bold red"}.get(report.verdict, "bold yellow")
    out.line(f"{report.pipeline} ({report.stage}): {WORDS[report.verdict].upper()} — {report.reason}", style=style)
    rows: list[tuple[str, str, str, str]] = []
    for step in report.steps:
        if not step.tiers:
            rows.append((step.step, "—", WORDS[step.verdict], step.reason))
        for position, tier in enumerate(step.tiers):
            rows.append((step.step if position == 0 else "", tier.tier, WORDS[tier.verdict], tier.reason))
    out.table(["step", "tier", "verdict", "why"], rows)
    if explain:
        for step in report.steps:
            for tier in step.tiers:
                out.line(f"  {step.step} · {tier.tier} (from the {tier.origin}): {tier.rule}")
    out.line(
        f"Judged on this pipeline's own testing runs (replays excluded), the {EVIDENCE_LIMIT:,} most recent "
        "executions of each step. Advisory: it never stops a run.",
        style="dim",
    )
