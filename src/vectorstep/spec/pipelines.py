"""Loading pipeline files and the step library (`use:`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vectorstep.errors import ConfigError, Problem
from vectorstep.spec.base import did_you_mean, validate_data, validate_document
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.source import Document, KeyPath, SourceMap, display_path, format_key_path, load_document
from vectorstep.spec.steps import StepSpec

YAML_SUFFIXES = (".yaml", ".yml")


@dataclass(frozen=True)
class LibraryStep:
    name: str
    data: dict[str, Any]
    source: SourceMap


@dataclass(frozen=True)
class LoadedPipeline:
    spec: PipelineSpec
    path: Path
    source: SourceMap = field(repr=False, compare=False)

    @property
    def file(self) -> str:
        return display_path(self.path)


def yaml_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(path for path in folder.iterdir() if path.suffix in YAML_SUFFIXES and path.is_file())


def load_step_library(
    steps_dir: Path, *, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, LibraryStep], list[Problem]]:
    """`steps/<name>.yaml`: each file one complete step, validated on its own."""
    library: dict[str, LibraryStep] = {}
    problems: list[Problem] = []
    for path in yaml_files(steps_dir):
        try:
            library[path.stem] = load_library_step(path, environ=environ)
        except ConfigError as error:
            problems.extend(error.problems)
    return library, problems


def load_library_step(path: Path, *, environ: Mapping[str, str] | None = None) -> LibraryStep:
    document = load_document(path, environ=environ)
    if not isinstance(document.data, dict):
        raise ConfigError.single(display_path(path), "a library step file holds one step (a mapping)")
    data = {"name": path.stem, **document.data}
    validate_data(StepSpec, data, document.source)
    return LibraryStep(name=path.stem, data=data, source=document.source)


def load_pipeline(
    path: Path,
    library: Mapping[str, LibraryStep],
    *,
    environ: Mapping[str, str] | None = None,
    text: str | None = None,
) -> LoadedPipeline:
    document = load_document(path, environ=environ, text=text)
    if not isinstance(document.data, dict):
        raise ConfigError.single(display_path(path), "a pipeline file holds a mapping with `name` and `steps`")
    data = _expand_library_steps(document, library)
    spec = validate_document(PipelineSpec, Document(data=data, source=document.source, path=path))
    return LoadedPipeline(spec=spec, path=path, source=document.source)


def load_pipelines(
    pipelines_dir: Path,
    library: Mapping[str, LibraryStep],
    *,
    environ: Mapping[str, str] | None = None,
) -> tuple[dict[str, LoadedPipeline], list[Problem]]:
    """Every pipeline file in the folder; a broken file is reported and the others still load."""
    pipelines: dict[str, LoadedPipeline] = {}
    problems: list[Problem] = []
    for path in yaml_files(pipelines_dir):
        try:
            loaded = load_pipeline(path, library, environ=environ)
        except ConfigError as error:
            problems.extend(error.problems)
            continue
        existing = pipelines.get(loaded.spec.name)
        if existing is not None:
            problems.append(
                Problem(
                    file=loaded.file,
                    line=loaded.source.locate(("name",)).line,
                    key_path="name",
                    message=f"pipeline name {loaded.spec.name!r} is already used by {existing.file}",
                )
            )
            continue
        pipelines[loaded.spec.name] = loaded
    return pipelines, problems


def _expand_library_steps(document: Document, library: Mapping[str, LibraryStep]) -> dict[str, Any]:
    data: dict[str, Any] = dict(document.data)
    steps = data.get("steps")
    if not isinstance(steps, list):
        return data
    problems: list[Problem] = []
    expanded: list[Any] = []
    for index, item in enumerate(steps):
        path: KeyPath = ("steps", index)
        if isinstance(item, dict) and isinstance(item.get("parallel"), dict):
            group = dict(item["parallel"])
            branches = group.get("steps")
            if isinstance(branches, list):
                group["steps"] = [
                    _use(branch, (*path, "parallel", "steps", position), library, document.source, problems)
                    for position, branch in enumerate(branches)
                ]
            expanded.append({**item, "parallel": group})
        else:
            expanded.append(_use(item, path, library, document.source, problems))
    if problems:
        raise ConfigError(problems)
    data["steps"] = expanded
    return data


def _use(
    item: Any, path: KeyPath, library: Mapping[str, LibraryStep], source: SourceMap, problems: list[Problem]
) -> Any:
    """Merge a `use:` step with its library step: local keys win, `executor_config` merges key by key."""
    if not isinstance(item, dict) or "use" not in item:
        return item
    name = item["use"]
    found = library.get(name) if isinstance(name, str) else None
    if found is None:
        location = source.locate((*path, "use"))
        problems.append(
            Problem(
                file=location.file,
                line=location.line,
                key_path=format_key_path((*path, "use")),
                message=f"no step {name!r} in the step library{did_you_mean(str(name), sorted(library))}"
                + (f"; the library has: {', '.join(sorted(library))}" if library else "; the library is empty"),
            )
        )
        return item
    local = {key: value for key, value in item.items() if key != "use"}
    merged = {**found.data, **local}
    library_config = found.data.get("executor_config")
    local_config = local.get("executor_config")
    if isinstance(library_config, dict) and isinstance(local_config, dict):
        merged["executor_config"] = {**library_config, **local_config}
    source.graft(path, found.source)
    return merged
