"""A pipeline's promotion readiness: per step and tier, is its own testing record good enough for production?"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from vectorstep.readiness import pipeline_readiness
from vectorstep.web.auth import Principal
from vectorstep.web.deps import api_allowed, service_of, visible_pipeline

router = APIRouter(tags=["pipelines"])
Reader = Annotated[Principal, Depends(api_allowed("read"))]


@router.get("/pipelines/{name}/readiness")
async def get_readiness(request: Request, name: str, principal: Reader) -> dict[str, Any]:
    """The verdict (`ready`, `building`, `not_ready`, `no_data` or `not_configured`) for the pipeline, each step
    and each tier, with reasons, rules and figures — as `vectorstep readiness NAME --json`. A token limited to
    teams is judged on its teams' runs only (`evidence.teams`). Advisory: it never stops a run."""
    service = service_of(request)
    loaded = visible_pipeline(service, principal, name)
    report = await pipeline_readiness(
        loaded, service.project.agents, service.database, now=service.clock.now(), teams=principal.scope
    )
    return report.as_json()
