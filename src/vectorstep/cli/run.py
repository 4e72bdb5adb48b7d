"""`vectorstep run`: run a pipeline in this process against a payload file."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click
from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError

from vectorstep.cli.common import config_option, open_runs, reports_errors, run_async, settings_from
from vectorstep.cli.completion import pipeline_names
from vectorstep.cli.interactive import ask_at_terminal
from vectorstep.cli.output import Output
from vectorstep.cli.progress import Progress
from vectorstep.cli.show import print_run
from vectorstep.clock import SystemClock
from vectorstep.domain.bounded_json import UnboundedJSON, check_bounds, parse_bounded_json
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.events import RunObserver
from vectorstep.domain.records import ResumePoint, RunRecord
from vectorstep.domain.status import exit_code
from vectorstep.engine.preflight import preflight, settings_problems
from vectorstep.engine.services import EXECUTOR_CAPABILITIES, Engine
from vectorstep.errors import ConfigError, PayloadError
from vectorstep.intake.alertmanager import normalise_alertmanager
from vectorstep.intake.generic import manual_context, normalise_generic
from vectorstep.spec.pipelines import LoadedPipeline
from vectorstep.spec.project import Project, load_project
from vectorstep.spec.settings import Settings
from vectorstep.store.approvals import ApprovalRepository
from vectorstep.store.calibration import CalibrationRepository
from vectorstep.store.runs import RunRepository
from vectorstep.store.writer import StoreWriter, keep_leases
from vectorstep.telemetry import configure as configure_tracing


@click.command("run")
@click.argument("pipeline", shell_complete=pipeline_names)
@click.option("--payload", "payload_path", type=click.Path(path_type=Path, dir_okay=False), help="JSON payload file.")
@click.option(
    "--source",
    type=click.Choice(["alertmanager", "generic"]),
    default=None,
    help="How to read the payload (default: alertmanager when it has an `alerts` list, else generic).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the run record as JSON.")
@config_option
@reports_errors
def run_command(
    pipeline: str, payload_path: Path | None, source: str | None, as_json: bool, config_path: Path | None
) -> int:
    """Run PIPELINE (a name from the pipelines dir, or a file) in this process and record it."""
    settings = settings_from(config_path)
    project = load_project(settings)
    loaded = runnable_pipeline(project, pipeline)
    context = read_context(payload_path, source)
    record = run_async(execute(settings, project, loaded, context))
    out = Output()
    if as_json:
        out.json(record.as_json())
    else:
        print_run(record, out)
    return exit_code(record.status)


def runnable_pipeline(project: Project, name_or_path: str) -> LoadedPipeline:
    loaded = project.pipeline(name_or_path)
    problems = project.problems_for(loaded) + settings_problems(project.settings)
    problems += preflight(loaded, EXECUTOR_CAPABILITIES, project.settings.spec.notifications)
    if problems:
        raise ConfigError(problems)
    return loaded


async def execute(
    settings: Settings, project: Project, loaded: LoadedPipeline, context: NormalisedContext
) -> RunRecord:
    async with session(settings, project) as active:
        return await active.run(loaded, context)


@dataclass
class Session:
    """One engine (and one set of tool servers) for the runs of a command, with its store and progress."""

    engine: Engine
    runs: RunRepository
    approvals: ApprovalRepository
    owner: str
    progress: Progress

    async def run(self, loaded: LoadedPipeline, context: NormalisedContext) -> RunRecord:
        record = await self.engine.run(loaded.spec, context, on_trace=self.progress.trace)
        return await self._with_children(record)

    async def _with_children(self, record: RunRecord) -> RunRecord:
        """The sub-pipeline runs it started, as recorded (they are runs of their own)."""
        if not any(step.executor == "pipeline" for step in record.steps):
            return record
        return replace(record, children=(await self.runs.get_run(record.run_id)).children)

    async def resume(self, point: ResumePoint) -> RunRecord:
        return await self._with_children(await self.engine.resume(point, on_trace=self.progress.trace))


@asynccontextmanager
async def session(settings: Settings, project: Project) -> AsyncIterator[Session]:
    runs = await open_runs(settings)
    approvals = ApprovalRepository(runs.database)
    owner = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    progress_out = Output(stderr=True)
    progress = Progress(progress_out, show_tools=progress_out.is_terminal)
    observers: list[RunObserver] = [StoreWriter(runs, owner)]
    if configure_tracing(settings.spec.telemetry):
        from vectorstep.telemetry_spans import TraceObserver  # noqa: PLC0415 - only when tracing

        observers.append(TraceObserver())
    # Progress goes to stderr with --json too: the record is stdout's alone, and someone waiting on a
    # person needs the approval id while the run waits.
    observers.append(progress)
    interactive = sys.stdin.isatty() and progress_out.is_terminal
    renewing = asyncio.create_task(keep_leases(runs, owner, SystemClock()))
    try:
        async with Engine(
            project,
            observers=observers,
            approvals=approvals,
            interaction=ask_at_terminal if interactive else None,
            calibration=CalibrationRepository(runs.database),
            runs=runs,
        ) as engine:
            yield Session(engine, runs, approvals, owner, progress)
    finally:
        renewing.cancel()
        await runs.database.dispose()


def read_context(payload_path: Path | None, source: str | None) -> NormalisedContext:
    received_at = SystemClock().now()
    if payload_path is None:
        return manual_context(received_at)
    payload = read_payload(payload_path)
    if source is None:
        source = "alertmanager" if isinstance(payload, dict) and isinstance(payload.get("alerts"), list) else "generic"
    try:
        if source == "alertmanager":
            return normalise_alertmanager(payload, received_at)
        return normalise_generic(payload, received_at)
    except PayloadError as error:
        raise PayloadError(f"{payload_path}: {error}") from None


def read_payload(path: Path) -> Any:
    """A payload file, JSON or YAML, read within the bounds a webhook body is read within."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise PayloadError(f"{path}: cannot read payload: {error.strerror or error}") from None
    try:
        if path.suffix not in (".yaml", ".yml"):
            return parse_bounded_json(data, "the payload")
        value = YAML(typ="safe").load(data.decode("utf-8"))
        check_bounds(value, "the payload")
        return value
    except UnboundedJSON as error:
        raise PayloadError(f"{path}:{error.line}: {error}" if error.line else f"{path}: {error}") from None
    except UnicodeDecodeError:
        raise PayloadError(f"{path}: the payload is not UTF-8 text") from None
    except MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise PayloadError(f"{where}: invalid YAML: {error.problem or error.context or error}") from None
    except YAMLError as error:
        raise PayloadError(f"{path}: invalid YAML: {error}") from None
    except RecursionError:
        raise PayloadError(f"{path}: invalid YAML: values are nested too deeply") from None
