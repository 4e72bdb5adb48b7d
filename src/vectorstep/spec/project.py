"""A whole project: settings, pipelines, the step library and agents, checked against each other."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from vectorstep.errors import ConfigError, Problem
from vectorstep.spec.agent_files import AgentDefinition, load_agents
from vectorstep.spec.base import did_you_mean
from vectorstep.spec.executor_config import GatewayConfig
from vectorstep.spec.model_names import ignores_thinking, model_problem
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.pipelines import (
    LibraryStep,
    LoadedPipeline,
    load_pipeline,
    load_pipelines,
    load_step_library,
)
from vectorstep.spec.settings import Settings
from vectorstep.spec.shell_lint import interpolation_hazards
from vectorstep.spec.source import KeyPath, format_key_path
from vectorstep.spec.steps import FanOutItem, ParallelItem, TrustedWorkSpec
from vectorstep.spec.sub_pipelines import sub_pipeline_problems
from vectorstep.spec.trust_blocks import ShellCheckSpec


@dataclass(frozen=True)
class Project:
    settings: Settings
    pipelines: Mapping[str, LoadedPipeline]
    library: Mapping[str, LibraryStep]
    agents: Mapping[str, AgentDefinition]
    problems: tuple[Problem, ...]
    warnings: tuple[Problem, ...] = ()  # worth saying, but nothing stops running

    def pipeline(self, name_or_path: str) -> LoadedPipeline:
        """A pipeline by name, or by the path of its file."""
        found = self.pipelines.get(name_or_path)
        if found is not None:
            return found
        wanted = Path(name_or_path).resolve()
        for loaded in self.pipelines.values():
            if loaded.path.resolve() == wanted:
                return loaded
        broken = [problem for problem in self.problems if Path(problem.file).resolve() == wanted]
        if broken:
            raise ConfigError(broken)
        if Path(name_or_path).is_file():
            return load_pipeline(Path(name_or_path), self.library)
        hint = did_you_mean(name_or_path, sorted(self.pipelines))
        known = ", ".join(sorted(self.pipelines)) or "none"
        raise ConfigError.single(
            name_or_path,
            f"no such pipeline{hint}; pipelines in {self.settings.pipelines_dir}: {known}",
        )

    def problems_for(self, loaded: LoadedPipeline) -> list[Problem]:
        """What stops this pipeline from running: bad references, and broken files of agents it uses."""
        problems = check_references(loaded, self.agents, self.settings)
        problems += check_sub_pipelines(loaded, self.pipelines, self.settings)
        used = {config.agent for _, config in _gateway_configs(loaded.spec)}
        for problem in self.problems:
            if any(_inside(problem.file, self.settings.agents_dir / agent) for agent in used):
                problems.append(problem)
        return problems


def _inside(file: str, folder: Path) -> bool:
    try:
        Path(file).resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def load_project(settings: Settings, *, environ: Mapping[str, str] | None = None) -> Project:
    """Load everything the settings point at; problems are collected, not raised."""
    library, library_problems = load_step_library(settings.steps_dir, environ=environ)
    pipelines, pipeline_problems = load_pipelines(settings.pipelines_dir, library, environ=environ)
    problems = [*library_problems, *pipeline_problems]
    if settings.spec.gateway.mode == "embedded":
        agents, agent_problems = load_agents(settings.agents_dir, environ=environ)
        problems += [*agent_problems, *check_agents(agents, settings)]
    else:
        agents = {}  # a remote gateway runs its own agents; it answers `unknown_agent` for one it lacks
    for loaded in pipelines.values():
        problems.extend(check_references(loaded, agents, settings))
        problems.extend(check_sub_pipelines(loaded, pipelines, settings))
    warnings = [*agent_warnings(agents), *(found for loaded in pipelines.values() for found in shell_warnings(loaded))]
    warnings += catch_all_warnings(list(pipelines.values()))
    return Project(settings, pipelines, library, agents, tuple(problems), tuple(warnings))


def agent_warnings(agents: Mapping[str, AgentDefinition]) -> list[Problem]:
    found = []
    for agent in agents.values():
        if agent.spec.thinking_level is not None and agent.spec.thinking_level != "off":
            ignored = [m for m in (agent.spec.model, *agent.spec.model_fallbacks) if ignores_thinking(m)]
            if ignored:
                found.append(
                    agent.problem(
                        ("thinking_level",),
                        f"warning: thinking_level is not sent to {', '.join(ignored)} (an OpenAI-compatible "
                        "server whose reasoning settings VectorStep does not know); it runs without it",
                    )
                )
    return found


def check_agents(agents: Mapping[str, AgentDefinition], settings: Settings) -> list[Problem]:
    problems: list[Problem] = []
    configured = {*settings.spec.mcp_servers, *settings.spec.python_tools}
    servers = sorted(configured)
    for agent in agents.values():
        models: list[tuple[KeyPath, str]] = [(("model",), agent.spec.model)]
        models += [(("model_fallbacks", index), model) for index, model in enumerate(agent.spec.model_fallbacks)]
        for key, model in models:
            problem = model_problem(model, settings.spec.providers)
            if problem is not None:
                problems.append(agent.problem(key, problem))
        for index, server in enumerate(agent.spec.tool_grants()):
            if server not in configured:
                problems.append(
                    agent.problem(
                        ("tools", _tool_entry(agent, server, index)),
                        f"tool server {server!r} is not configured in mcp_servers or python_tools"
                        f"{did_you_mean(server, servers)}"
                        f" (configured: {', '.join(servers) or 'none'})",
                    )
                )
    for index, name in enumerate(settings.spec.replay.safe_agents):
        if name not in agents:
            problems.append(
                settings.problem(
                    ("replay", "safe_agents", index), f"no agent {name!r}{did_you_mean(name, sorted(agents))}"
                )
            )
    return problems


def _tool_entry(agent: AgentDefinition, server: str, fallback: int) -> int:
    """The index in `tools:` that names `server`, for the error's line."""
    for index, entry in enumerate(agent.spec.tools):
        if entry == server or (isinstance(entry, dict) and server in entry):
            return index
    return fallback


def check_references(
    loaded: LoadedPipeline, agents: Mapping[str, AgentDefinition], settings: Settings
) -> list[Problem]:
    """Agents named by steps, verifiers and judges exist (on the embedded runtime), and an OpenClaw
    gateway is configured when something runs on one."""
    problems = _openclaw_problems(loaded, settings)
    if settings.spec.gateway.mode != "embedded":
        return problems  # a remote gateway has its own agents; it answers `unknown_agent` when asked
    for path, config in _gateway_configs(loaded.spec):
        if config.agent not in agents:
            location = loaded.source.locate((*path, "agent"))
            problems.append(
                Problem(
                    location.file,
                    location.line,
                    format_key_path((*path, "agent")),
                    f"no agent {config.agent!r} in {settings.agents_dir}{did_you_mean(config.agent, sorted(agents))}",
                )
            )
    return problems


def check_sub_pipelines(
    loaded: LoadedPipeline, pipelines: Mapping[str, LoadedPipeline], settings: Settings
) -> list[Problem]:
    return sub_pipeline_problems(loaded, pipelines, _works, settings.spec.limits.max_pipeline_depth)


def _openclaw_problems(loaded: LoadedPipeline, settings: Settings) -> list[Problem]:
    if settings.spec.executors.openclaw.url:
        return []
    problems = []
    for path, work in _works(loaded.spec):
        blocks: list[tuple[KeyPath, str | None]] = [(path, work.executor)]
        if work.verifier is not None:
            blocks.append(((*path, "verifier"), work.verifier.executor))
        if work.grounding is not None:
            blocks.append(((*path, "grounding"), work.grounding.executor))
        for block, executor in blocks:
            if executor == "openclaw":
                key = (*block, "executor")
                location = loaded.source.locate(key)
                message = f"executor 'openclaw' needs `executors.openclaw.url` in the settings ({settings.source})"
                problems.append(Problem(location.file, location.line, format_key_path(key), message))
    return problems


def _works(spec: PipelineSpec) -> Iterator[tuple[KeyPath, TrustedWorkSpec]]:
    """Every step of the pipeline, in parallel groups and fan-outs too, with its key path."""
    for index, item in enumerate(spec.steps):
        path: KeyPath = ("steps", index)
        if isinstance(item, ParallelItem):
            for position, branch in enumerate(item.parallel.steps):
                yield (*path, "parallel", "steps", position), branch
        elif isinstance(item, FanOutItem):
            yield (*path, "fan_out"), item.fan_out
        else:
            yield path, item


def _gateway_configs(spec: PipelineSpec) -> Iterator[tuple[KeyPath, GatewayConfig]]:
    for path, work in _works(spec):
        yield from _configs_of(work, path)


def catch_all_warnings(pipelines: list[LoadedPipeline]) -> list[Problem]:
    """A `match: {}` takes every event: pipelines tried after it (by priority, then file) never match."""
    ordered = sorted(pipelines, key=lambda loaded: (-loaded.spec.priority, loaded.path.name))
    for position, loaded in enumerate(ordered):
        if loaded.spec.trigger.match == {}:
            shadowed = [later.spec.name for later in ordered[position + 1 :] if later.spec.trigger.match is not None]
            if not shadowed:
                return []
            location = loaded.source.locate(("trigger", "match"))
            message = (
                "warning: `match: {}` takes every event, so pipelines tried after it (by priority, then file "
                f"name) never match one: {', '.join(shadowed)}"
            )
            return [Problem(location.file, location.line, "trigger.match", message)]
    return []


def shell_warnings(loaded: LoadedPipeline) -> list[Problem]:
    """`run:` commands that put a `{{ }}` where its value would be read as shell syntax."""
    warnings: list[Problem] = []
    for path, work in _works(loaded.spec):
        for index, check in enumerate(work.deterministic_checks):
            if isinstance(check, ShellCheckSpec) and check.run is not None:
                key = (*path, "deterministic_checks", index, "run")
                location = loaded.source.locate(key)
                warnings.extend(
                    Problem(location.file, location.line, format_key_path(key), hazard)
                    for hazard in interpolation_hazards(check.run)
                )
    return warnings


def _configs_of(work: TrustedWorkSpec, path: KeyPath) -> Iterator[tuple[KeyPath, GatewayConfig]]:
    if isinstance(work.executor_config, GatewayConfig):
        yield (*path, "executor_config"), work.executor_config
    if work.verifier is not None and isinstance(work.verifier.executor_config, GatewayConfig):
        yield (*path, "verifier", "executor_config"), work.verifier.executor_config
    if work.grounding is not None and isinstance(work.grounding.executor_config, GatewayConfig):
        yield (*path, "grounding", "executor_config"), work.grounding.executor_config
