"""`executor: pipeline` checked across the project: the child exists, no cycle, nesting within its limit."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from vectorstep.errors import Problem
from vectorstep.spec.base import did_you_mean
from vectorstep.spec.executor_config import PipelineConfig
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.pipelines import LoadedPipeline
from vectorstep.spec.source import KeyPath, format_key_path
from vectorstep.spec.steps import TrustedWorkSpec

Works = Callable[[PipelineSpec], Iterator[tuple[KeyPath, TrustedWorkSpec]]]


def pipeline_calls(loaded: LoadedPipeline, works: Works) -> Iterator[tuple[KeyPath, PipelineConfig]]:
    for path, work in works(loaded.spec):
        if isinstance(work.executor_config, PipelineConfig):
            yield (*path, "executor_config", "pipeline"), work.executor_config


def sub_pipeline_problems(
    loaded: LoadedPipeline, pipelines: Mapping[str, LoadedPipeline], works: Works, max_depth: int
) -> list[Problem]:
    """Each child this pipeline names exists; following children never comes back to a pipeline on
    the way (A → B → A), and never nests deeper than `max_depth` runs below this one."""
    problems: list[Problem] = []
    for key, config in pipeline_calls(loaded, works):
        location = loaded.source.locate(key)
        where = (location.file, location.line, format_key_path(key))
        if config.pipeline not in pipelines:
            known = ", ".join(sorted(pipelines)) or "none"
            hint = did_you_mean(config.pipeline, sorted(pipelines))
            problems.append(Problem(*where, f"no pipeline {config.pipeline!r}{hint} (pipelines: {known})"))
            continue
        chain = _longest_or_cycle(config.pipeline, pipelines, works, [loaded.spec.name], max_depth)
        if chain is not None:
            problems.append(Problem(*where, chain))
    return problems


def _longest_or_cycle(
    name: str, pipelines: Mapping[str, LoadedPipeline], works: Works, chain: list[str], max_depth: int
) -> str | None:
    """What is wrong below `chain` when it continues with `name`: a cycle or too deep a nesting."""
    path = [*chain, name]
    if name in chain:
        return f"sub-pipelines call each other in a cycle: {' → '.join(path)}"
    if len(path) - 1 > max_depth:
        return f"sub-pipelines nest {len(path) - 1} deep ({' → '.join(path)}); limits.max_pipeline_depth is {max_depth}"
    loaded = pipelines.get(name)
    if loaded is None:
        return None  # reported where that pipeline is named
    for _, config in pipeline_calls(loaded, works):
        found = _longest_or_cycle(config.pipeline, pipelines, works, path, max_depth)
        if found is not None:
            return found
    return None
