"""`vectorstep validate PATH...`: check files or folders without running anything."""

from __future__ import annotations

from pathlib import Path

import click

from vectorstep.cli.common import reports_errors
from vectorstep.cli.output import Output
from vectorstep.domain.status import EXIT_INVALID_INPUT
from vectorstep.engine.preflight import preflight, settings_problems
from vectorstep.engine.services import EXECUTOR_CAPABILITIES
from vectorstep.errors import ConfigError, Problem
from vectorstep.spec.agent_files import load_agent
from vectorstep.spec.pipelines import load_library_step, load_pipeline, yaml_files
from vectorstep.spec.project import (
    check_agents,
    check_references,
    check_sub_pipelines,
    load_project,
    shell_warnings,
)
from vectorstep.spec.settings import CONFIG_FILE, Settings, find_config, load_settings

PROJECT_FOLDERS = ("pipelines", "steps", "agents")


@click.command("validate")
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path, exists=True))
@click.option("--config", "config_path", type=click.Path(path_type=Path, dir_okay=False), default=None)
@reports_errors
def validate_command(paths: tuple[Path, ...], config_path: Path | None) -> int:
    """Check pipelines, library steps, agents or whole projects: `file:line: message` per problem."""
    problems: list[Problem] = []
    checked = 0
    for path in paths:
        found, count = _validate(path, config_path)
        problems.extend(found)
        checked += count
    out = Output()
    for problem in problems:
        out.line(str(problem), style="red")
    if problems:
        Output(stderr=True).line(f"{len(problems)} problem(s) in {checked} file(s)", style="red")
        return EXIT_INVALID_INPUT
    if not checked:
        Output(stderr=True).line(
            "nothing to validate: no pipeline, step, agent or vectorstep.yaml in " + ", ".join(map(str, paths)),
            style="yellow",
        )
        return EXIT_INVALID_INPUT
    out.line(f"ok: {checked} file(s) valid", style="green")
    return 0


def _validate(path: Path, config_path: Path | None) -> tuple[list[Problem], int]:
    if path.is_dir() and (path / CONFIG_FILE).is_file():
        return _project(load_settings(path / CONFIG_FILE))
    if path.is_dir() and config_path is None and any((path / folder).is_dir() for folder in PROJECT_FOLDERS):
        # A project on the embedded defaults: its pipelines, steps and agents in their usual folders.
        return _project(load_settings(None, base_dir=path))
    settings = load_settings(find_config(config_path))
    if path.is_dir() and path.resolve() == settings.base_dir:
        return _project(settings)
    files = yaml_files(path) if path.is_dir() else [path]
    problems: list[Problem] = []
    project = load_project(settings)
    for file in files:
        try:
            if file.name == CONFIG_FILE:
                load_settings(file)
            elif file.name == "agent.yaml":
                agent = load_agent(file.parent)
                problems.extend(check_agents({agent.name: agent}, settings))
            elif file.parent.resolve() == settings.steps_dir:
                load_library_step(file)
            else:
                loaded = load_pipeline(file, project.library)
                for warning in shell_warnings(loaded):
                    Output(stderr=True).line(str(warning), style="yellow")
                problems.extend(check_references(loaded, project.agents, settings))
                pipelines = {**project.pipelines, loaded.spec.name: loaded}
                problems.extend(check_sub_pipelines(loaded, pipelines, settings))
                problems.extend(preflight(loaded, EXECUTOR_CAPABILITIES, settings.spec.notifications))
        except ConfigError as error:
            problems.extend(error.problems)
    return problems, len(files)


def _project(settings: Settings) -> tuple[list[Problem], int]:
    project = load_project(settings)
    for warning in project.warnings:
        Output(stderr=True).line(str(warning), style="yellow")
    problems = [*project.problems, *settings_problems(settings)]
    for loaded in project.pipelines.values():
        problems.extend(preflight(loaded, EXECUTOR_CAPABILITIES, settings.spec.notifications))
    # The embedded defaults are no file: a folder with nothing in it has nothing to validate. Files
    # that did not load count too: "1 problem in 0 files" would say the problem is nowhere.
    files = 1 if settings.config_path is not None else 0
    agents = settings.agents_dir.glob("*/agent.yaml") if settings.agents_dir.is_dir() else []
    count = files + len(yaml_files(settings.pipelines_dir)) + len(yaml_files(settings.steps_dir)) + len(list(agents))
    return problems, count
