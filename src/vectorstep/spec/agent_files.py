"""Loading agent folders (`agents/<name>/agent.yaml` + `instructions.md`) and their version hash."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from vectorstep.errors import ConfigError, Problem
from vectorstep.spec.agent import AgentSpec
from vectorstep.spec.base import validate_document
from vectorstep.spec.source import KeyPath, SourceMap, display_path, format_key_path, load_document

INSTRUCTION_FILES = ("instructions.md", "soul.md")


@dataclass(frozen=True)
class AgentDefinition:
    """An agent as loaded from its folder: settings, instructions and the version they hash to."""

    name: str
    spec: AgentSpec
    instructions: str
    folder: Path
    version: str
    locations: SourceMap | None = field(default=None, compare=False, repr=False)

    @property
    def file(self) -> str:
        return display_path(self.folder / "agent.yaml")

    @property
    def definition(self) -> str:
        """The text of this version (what version history keeps and diffs)."""
        return definition_text(self.spec, self.instructions, self.name)

    def problem(self, key_path: KeyPath, message: str) -> Problem:
        line = self.locations.locate(key_path).line if self.locations is not None else None
        return Problem(self.file, line, format_key_path(key_path), message)


def normalise_instructions(text: str) -> str:
    """Trailing spaces per line and leading/trailing blank lines do not make a new version."""
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines)


def _hashed_settings(spec: AgentSpec, name: str) -> dict[str, object]:
    """The settings the version hashes: the name is the folder's whether or not `name:` is written;
    a description changes nothing."""
    settings = spec.model_dump(mode="json", exclude={"description"})
    settings["name"] = name
    return settings


def agent_version(spec: AgentSpec, instructions: str, name: str) -> str:
    """First 12 hex characters of SHA-256 over the canonical JSON of the settings and instructions."""
    settings = _hashed_settings(spec, name)
    settings["instructions"] = normalise_instructions(instructions)
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def definition_text(spec: AgentSpec, instructions: str, name: str) -> str:
    """What the version hashes, laid out for reading and diffing: the settings as indented canonical
    JSON, then the instructions (normalised)."""
    settings = json.dumps(_hashed_settings(spec, name), sort_keys=True, indent=2, ensure_ascii=False)
    return f"# settings (agent.yaml, as hashed)\n{settings}\n\n# instructions\n{normalise_instructions(instructions)}\n"


def load_agent(folder: Path, *, environ: Mapping[str, str] | None = None) -> AgentDefinition:
    agent_file = folder / "agent.yaml"
    document = load_document(agent_file, environ=environ)
    spec = validate_document(AgentSpec, document)
    name = spec.name or folder.name
    if spec.name is not None and spec.name != folder.name:
        raise ConfigError.single(
            display_path(agent_file),
            f"agent name {spec.name!r} differs from its folder {folder.name!r}; "
            "rename one of them (pipelines refer to agents by folder name)",
            line=1,
            key_path="name",
        )
    present = [folder / file for file in INSTRUCTION_FILES if (folder / file).is_file()]
    if len(present) > 1:
        raise ConfigError.single(
            display_path(folder),
            "has both instructions.md and soul.md (the same thing under two names); keep one",
        )
    try:
        instructions = present[0].read_text(encoding="utf-8") if present else ""
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError.single(display_path(present[0]), f"cannot read file: {error}") from None
    return AgentDefinition(
        name=name,
        spec=spec,
        instructions=normalise_instructions(instructions),
        folder=folder,
        version=agent_version(spec, instructions, name),
        locations=document.source,
    )


def load_agents(
    agents_dir: Path, *, environ: Mapping[str, str] | None = None
) -> tuple[dict[str, AgentDefinition], list[Problem]]:
    """Every agent folder under `agents_dir`; broken ones are reported, the rest still load."""
    agents: dict[str, AgentDefinition] = {}
    problems: list[Problem] = []
    if not agents_dir.is_dir():
        return agents, problems
    for folder in sorted(path for path in agents_dir.iterdir() if (path / "agent.yaml").is_file()):
        try:
            agent = load_agent(folder, environ=environ)
        except ConfigError as error:
            problems.extend(error.problems)
            continue
        agents[agent.name] = agent
    return agents, problems
