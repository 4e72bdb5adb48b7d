"""Version history: a step's prompt versions and its agents' versions, an agent's versions, and the
unified diff of two (SYSTEM.md §14 `step_prompt_versions`, `agent_versions`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request

from vectorstep.web.auth import Principal
from vectorstep.web.deps import api_allowed, service_of
from vectorstep.web.version_subjects import agent_history, step_history

router = APIRouter(tags=["versions"])
Reader = Annotated[Principal, Depends(api_allowed("read"))]
VersionA = Annotated[str, Query(min_length=1, max_length=64, description="a version: its hash or a unique prefix")]
VersionB = Annotated[str, Query(min_length=1, max_length=64, description="the version to compare it with")]


@router.get("/pipelines/{name}/steps/{step:path}/versions")
async def step_versions(request: Request, name: str, step: str, principal: Reader) -> dict[str, Any]:
    """Each prompt template the step ran with and each version of the agents it ran with, oldest first:
    text (null when it ran before texts were kept), first and last seen, runs, the newest runs that
    used it, and its calibration (production marks; null without any). `current`: what runs now."""
    history = await step_history(service_of(request), principal, name, step)
    return history.as_json()


@router.get("/pipelines/{name}/steps/{step:path}/versions/diff")
async def step_versions_diff(
    request: Request, name: str, step: str, principal: Reader, a: VersionA, b: VersionB
) -> dict[str, Any]:
    """The unified diff from version `a` to `b` of this step (two prompt templates, or two agent
    versions). `diff` is null, with the `reason`, when a text was not recorded."""
    history = await step_history(service_of(request), principal, name, step)
    return history.diff(a, b).as_json()


@router.get("/agents/{name}/versions")
async def agent_versions(request: Request, name: str, principal: Reader) -> dict[str, Any]:
    """Each version of the agent, oldest first, with the steps that ran it and its calibration."""
    history = await agent_history(service_of(request), principal, name)
    return history.as_json()


@router.get("/agents/{name}/versions/diff")
async def agent_versions_diff(
    request: Request, name: str, principal: Reader, a: VersionA, b: VersionB
) -> dict[str, Any]:
    """The unified diff from version `a` to `b` of the agent (settings as hashed, then instructions)."""
    history = await agent_history(service_of(request), principal, name)
    return history.diff(a, b).as_json()
