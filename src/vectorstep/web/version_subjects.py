"""Whose version history a request asks for — a pipeline's step, or an agent — found for the caller (with
a did-you-mean when there is no such thing), with its history and the versions loaded right now."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from vectorstep.domain.versions import Version, VersionDiff, diff_versions, find_version
from vectorstep.engine.primary import prompt_hash
from vectorstep.errors import NotFoundError
from vectorstep.spec.base import did_you_mean
from vectorstep.spec.executor_config import GatewayConfig
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.steps import FanOutItem, ParallelItem, TrustedWorkSpec
from vectorstep.store.versions import VersionRepository
from vectorstep.web.auth import Principal
from vectorstep.web.deps import visible_pipeline
from vectorstep.web.service import Service


@dataclass(frozen=True)
class History:
    """One subject's versions, and which of them the loaded project would run now."""

    kind: str  # "step" or "agent"
    pipeline: str | None
    name: str  # the step (`triage`, `checks/db`) or the agent
    prompts: tuple[Version, ...]
    agents: tuple[Version, ...]
    current: frozenset[str]  # hashes of the loaded versions

    @property
    def subject(self) -> str:
        return f"{self.pipeline}/{self.name}" if self.pipeline is not None else self.name

    @property
    def versions(self) -> list[Version]:
        return [*self.prompts, *self.agents]

    def as_json(self) -> dict[str, Any]:
        def listed(versions: tuple[Version, ...]) -> list[dict[str, Any]]:
            return [version.as_json() | {"current": version.hash in self.current} for version in versions]

        if self.kind == "agent":
            return {"agent": self.name, "versions": listed(self.agents)}
        return {
            "pipeline": self.pipeline,
            "step": self.name,
            "prompt_versions": listed(self.prompts),
            "agent_versions": listed(self.agents),
        }

    def diff(self, a: str, b: str) -> VersionDiff:
        """Versions `a` and `b` (hash prefixes) compared; NotFoundError / PayloadError name the candidates."""
        return diff_versions(find_version(a, self.versions, self.subject), find_version(b, self.versions, self.subject))


def step_addresses(spec: PipelineSpec) -> dict[str, TrustedWorkSpec]:
    """Each place of the pipeline that runs a prompt, by the name its steps are recorded under.

    A fan-out's items are recorded one by one (`per-pod/0`, `per-pod/1`, …): its first stands for it.
    """
    found: dict[str, TrustedWorkSpec] = {}
    for item in spec.steps:
        if isinstance(item, ParallelItem):
            found.update({f"{item.parallel.name}/{branch.name}": branch for branch in item.parallel.steps})
        elif isinstance(item, FanOutItem):
            found[f"{item.fan_out.name}/0"] = item.fan_out
        else:
            found[item.name] = item
    return found


async def step_history(service: Service, principal: Principal, pipeline: str, step: str) -> History:
    loaded = visible_pipeline(service, principal, pipeline)  # 404 with a did-you-mean, or 403
    addresses = step_addresses(loaded.spec)
    versions = VersionRepository(service.database)
    recorded = [name.split("/", 1)[1] for name in (await versions.subjects())[0] if name.startswith(f"{pipeline}/")]
    work = addresses.get(step) or addresses.get(re.sub(r"/\d+$", "/0", step))
    if work is None and step not in recorded:
        known = sorted({*addresses, *recorded})
        raise NotFoundError(
            f"pipeline {pipeline} has no step {step!r}{did_you_mean(step, known)}; its steps: {', '.join(known)}"
        )
    found = await versions.of_step(pipeline, step, service.settings.spec.calibration, principal.scope)
    current = set()
    if work is not None:
        current.add(prompt_hash(work.prompt_template))
        config = work.executor_config
        agent = service.project.agents.get(config.agent) if isinstance(config, GatewayConfig) else None
        if agent is not None:
            current.add(agent.version)
    return History("step", pipeline, step, found.prompts, found.agents, frozenset(current))


async def agent_history(service: Service, principal: Principal, agent: str) -> History:
    versions = VersionRepository(service.database)
    known = sorted({*service.project.agents, *(await versions.subjects())[1]})
    if agent not in known:
        raise NotFoundError(f"no agent {agent!r}{did_you_mean(agent, known)}; agents: {', '.join(known) or 'none'}")
    found = await versions.agent_versions(agent, service.settings.spec.calibration, principal.scope)
    loaded = service.project.agents.get(agent)
    current = frozenset({loaded.version} if loaded is not None else ())
    return History("agent", None, agent, (), tuple(found), current)
