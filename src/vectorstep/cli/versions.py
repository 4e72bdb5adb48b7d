"""`vectorstep versions`: a step's prompt versions (and its agents'), or an agent's, and the diff of two."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from vectorstep.cli.common import HISTORY_KEYS, config_option, open_runs, reports_errors, run_async, settings_from
from vectorstep.cli.output import Output
from vectorstep.domain.versions import Version, VersionDiff, diff_versions, find_version
from vectorstep.errors import NotFoundError, PayloadError
from vectorstep.spec.base import did_you_mean
from vectorstep.spec.settings import Settings
from vectorstep.store.versions import VersionRepository

DIFF_STYLES = {"add": "green", "remove": "red", "hunk": "cyan", "file": "bold"}


@click.command("versions")
@click.argument("subject", required=False, metavar="[PIPELINE/STEP]")
@click.option("--agent", help="The versions of this agent (instead of a step's).")
@click.option("--diff", nargs=2, metavar="A B", help="The unified diff from version A to version B (hash prefixes).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@config_option
@reports_errors
def versions_command(
    subject: str | None, agent: str | None, diff: tuple[str, str] | None, as_json: bool, config_path: Path | None
) -> int:
    """Version history: each prompt template a step ran with (and the versions of its agents), or each
    version of an agent — when it was first and last seen, the runs that used it and how well its
    marked production steps were calibrated. `--diff A B` compares two versions' texts."""
    if (subject is None) == (agent is None):
        raise PayloadError("give a step as PIPELINE/STEP, or --agent NAME (one of them)")
    settings = settings_from(config_path, only=HISTORY_KEYS)
    found = run_async(_history(settings, subject, agent))
    out = Output()
    if diff is not None:
        return _print_diff(out, found, diff, as_json)
    if as_json:
        out.json(found["json"])
    elif subject is not None:
        _print_step(out, found)
    else:
        _print_versions(out, f"{agent}: {_count(found['versions'], 'version')}", found["versions"])
    return 0


async def _history(settings: Settings, subject: str | None, agent: str | None) -> dict[str, Any]:
    runs = await open_runs(settings)
    try:
        versions = VersionRepository(runs.database)
        steps, agents = await versions.subjects()
        calibration = settings.spec.calibration
        if agent is not None:
            if agent not in agents:
                known = ", ".join(agents) or "none yet"
                raise NotFoundError(
                    f"no recorded versions of agent {agent!r}{did_you_mean(agent, agents)}; agents: {known}"
                )
            found = await versions.agent_versions(agent, calibration)
            return {"subject": agent, "versions": found, "json": {"agent": agent, "versions": _json(found)}}
        pipeline, step = _split(subject or "")
        if f"{pipeline}/{step}" not in steps:
            raise NotFoundError(_unknown_step(f"{pipeline}/{step}", steps))
        history = await versions.of_step(pipeline, step, calibration)
        every = [*history.prompts, *history.agents]
        return {"subject": history.subject, "history": history, "versions": every, "json": history.as_json()}
    finally:
        await runs.database.dispose()


def _split(subject: str) -> tuple[str, str]:
    pipeline, _, step = subject.partition("/")
    if not pipeline or not step:
        raise PayloadError(f"give the step as PIPELINE/STEP (for example incident/triage), not {subject!r}")
    return pipeline, step


def _unknown_step(wanted: str, steps: list[str]) -> str:
    pipelines = sorted({name.split("/", 1)[0] for name in steps})
    pipeline = wanted.split("/", 1)[0]
    if pipeline not in pipelines:
        known = ", ".join(pipelines) or "none yet"
        return f"no recorded versions of pipeline {pipeline!r}{did_you_mean(pipeline, pipelines)}; pipelines: {known}"
    own = [name for name in steps if name.startswith(f"{pipeline}/")]
    return f"no recorded versions of step {wanted!r}{did_you_mean(wanted, own)}; its steps: {', '.join(own)}"


def _json(versions: list[Version]) -> list[dict[str, Any]]:
    return [version.as_json() for version in versions]


def _print_step(out: Output, found: dict[str, Any]) -> None:
    history = found["history"]
    _print_versions(out, f"{history.subject}: {_count(history.prompts, 'prompt version')}", history.prompts)
    if history.agents:
        out.line()
        _print_versions(out, f"agent versions it ran with: {len(history.agents)}", history.agents, with_agent=True)
    pair = next((versions for versions in (history.prompts, history.agents) if len(versions) > 1), None)
    if pair is not None:  # the two newest of a kind
        out.line()
        out.line(f"compare two: vectorstep versions {history.subject} --diff {pair[-2].short[:8]} {pair[-1].short[:8]}")


def _print_versions(out: Output, title: str, versions: Any, *, with_agent: bool = False) -> None:
    out.line(title, style="bold")
    if not versions:
        return
    headers = ["version", "first seen (UTC)", "last seen (UTC)", "runs", "marked", "right", "says", "validated bins"]
    rows = []
    for version in versions:
        calibration = version.calibration
        row = [
            version.short,
            version.first_seen.strftime("%Y-%m-%d %H:%M:%S"),
            version.last_seen.strftime("%Y-%m-%d %H:%M:%S"),
            str(version.runs),
            str(calibration.n) if calibration else "0",
            f"{calibration.accuracy:.0%} ({calibration.accuracy_low:.0%}–{calibration.accuracy_high:.0%})"
            if calibration
            else "—",
            f"{calibration.predicted:.2f}" if calibration else "—",
            f"{calibration.validated_bins} of {calibration.bins}" if calibration else "—",
            "recorded" if version.text is not None else "not recorded",
        ]
        rows.append([version.subject, *row] if with_agent else row)
    out.table(["agent", *headers, "text"] if with_agent else [*headers, "text"], rows)
    if not with_agent and versions[0].kind == "agent":
        for version in versions:
            used = ", ".join(f"{use.pipeline}/{use.step} ({use.runs})" for use in version.steps) or "no runs in view"
            out.line(f"  {version.short} ran in: {used}")


def _count(versions: Any, noun: str) -> str:
    return f"{len(versions)} {noun}{'' if len(versions) == 1 else 's'}"


def _print_diff(out: Output, found: dict[str, Any], given: tuple[str, str], as_json: bool) -> int:
    versions, subject = found["versions"], found["subject"]
    compared: VersionDiff = diff_versions(
        find_version(given[0], versions, subject), find_version(given[1], versions, subject)
    )
    if as_json:
        out.json(compared.as_json())
        return 0 if compared.diff is not None else 1
    if compared.diff is None:
        Output(stderr=True).line(f"error: {compared.reason}", style="red")
        return 1
    if not compared.diff:
        same = "have the same text" if compared.a.text == compared.b.text else "differ only in how their lines end"
        out.line(f"{compared.a.short} and {compared.b.short} {same}")
        return 0
    for kind, line in compared.lines():
        out.line(line, style=DIFF_STYLES.get(kind))
    return 0
