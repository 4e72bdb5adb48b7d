"""One pipeline's promotion readiness, as `vectorstep readiness`, the API and the pipeline page show it.

The steps to judge and their tiers come from the spec, each step's configuration now (the hash of its
prompt template, its agent's version) from the project as loaded, the evidence from the store, and
the verdicts from trust/readiness.py. Advisory: nothing here gates a run.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from vectorstep.domain.readiness import CurrentConfig
from vectorstep.engine.primary import prompt_hash
from vectorstep.spec.agent_files import AgentDefinition
from vectorstep.spec.pipelines import LoadedPipeline
from vectorstep.spec.readiness_subjects import AGENT_EXECUTORS, ReadinessSubject, readiness_subjects
from vectorstep.store.database import Database
from vectorstep.store.readiness import ReadinessRepository
from vectorstep.trust.readiness import PipelineReadiness, judge_pipeline, judge_step


async def pipeline_readiness(
    loaded: LoadedPipeline,
    agents: Mapping[str, AgentDefinition],
    database: Database,
    *,
    now: datetime,
    teams: tuple[str, ...] | None = None,
) -> PipelineReadiness:
    """Judge `loaded` on its own testing runs (of `teams` only, when given)."""
    spec = loaded.spec
    subjects = readiness_subjects(spec)
    evidence = await ReadinessRepository(database).executions(
        spec.name, [(subject.name, subject.fan_out) for subject in subjects], teams=teams
    )
    steps = [
        judge_step(subject, evidence.get(subject.name, []), current_config(subject, agents), now)
        for subject in subjects
    ]
    return judge_pipeline(spec.name, spec.stage, steps, now, teams)


def current_config(subject: ReadinessSubject, agents: Mapping[str, AgentDefinition]) -> CurrentConfig:
    """The step's prompt hash, and its agent's version when this process loads that agent (an embedded
    gateway's); a remote gateway's or OpenClaw's agent version is known only from what its runs recorded."""
    hashed = prompt_hash(subject.prompt_template)
    if subject.executor not in AGENT_EXECUTORS:
        return CurrentConfig(hashed, None)  # no agent: executions record no agent version
    agent = agents.get(subject.agent or "") if subject.executor == "gateway" else None
    if agent is None:
        return CurrentConfig(hashed, None, "unknown")
    return CurrentConfig(hashed, agent.version)
