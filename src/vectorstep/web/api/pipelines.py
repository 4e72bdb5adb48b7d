"""Pipelines: what is loaded, one pipeline's configuration, validating a file, reloading, and manual runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from vectorstep.engine.preflight import preflight
from vectorstep.engine.services import EXECUTOR_CAPABILITIES
from vectorstep.errors import ConfigError, Problem
from vectorstep.intake.generic import manual_context
from vectorstep.spec.pipelines import LoadedPipeline, load_pipeline
from vectorstep.spec.project import check_references, check_sub_pipelines
from vectorstep.spec.source import EnvironmentNames
from vectorstep.store.runs import RunFilter
from vectorstep.web.auth import Principal
from vectorstep.web.deps import api_allowed, service_of, visible_pipeline, visible_pipelines
from vectorstep.web.errors import problem_json
from vectorstep.web.redact import redacted
from vectorstep.web.service import Service

router = APIRouter(tags=["pipelines"])
Reader = Annotated[Principal, Depends(api_allowed("read"))]
Runner = Annotated[Principal, Depends(api_allowed("run"))]
Configurer = Annotated[Principal, Depends(api_allowed("configure"))]
Reloader = Annotated[Principal, Depends(api_allowed("reload"))]


class ManualRunBody(BaseModel):
    summary: str = ""
    severity: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    data: dict[str, Any] = Field(default_factory=dict)


def pipeline_summary(service: Service, loaded: LoadedPipeline) -> dict[str, Any]:
    spec = loaded.spec
    return {
        "name": spec.name,
        "description": spec.description,
        "stage": spec.stage,
        "team": spec.team,
        "file": loaded.file,
        "priority": spec.priority,
        "schedule": spec.schedule.cron if spec.schedule else None,
        "steps": len(spec.steps),
        "problems": [problem_json(problem) for problem in service.blocked.get(spec.name, [])],
    }


@router.get("/pipelines")
async def list_pipelines(request: Request, principal: Reader) -> dict[str, Any]:
    """The pipelines the caller sees; load problems (which name files and keys) for admins only."""
    service = service_of(request)
    problems = service.project.problems if principal.may("configure") else []
    return {
        "pipelines": [pipeline_summary(service, item) for item in visible_pipelines(service, principal)],
        "problems": [problem_json(problem) for problem in problems],
    }


@router.get("/pipelines/{name}")
async def get_pipeline(request: Request, name: str, principal: Reader) -> dict[str, Any]:
    """The pipeline, its problems and its ten latest runs (of the caller's teams); for admins, also
    its configuration as loaded (defaults filled in, secrets masked) as `spec` (else null)."""
    service = service_of(request)
    loaded = visible_pipeline(service, principal, name)
    recent = await service.runs.list_runs(RunFilter(pipeline=name, teams=principal.scope), limit=10)
    spec = loaded.spec.model_dump(mode="json", by_alias=True, exclude_none=True)
    return pipeline_summary(service, loaded) | {
        "spec": redacted(spec) if principal.may("configure") else None,
        "recent_runs": [run.as_json() | {"steps": None} for run in recent],
    }


@router.post("/pipelines/validate", responses={422: {"description": "the file has problems (listed)"}})
async def validate_pipeline(
    request: Request,
    _: Configurer,
    body: Annotated[str, Body(media_type="application/yaml", description="a pipeline file (YAML)")],
    filename: str = "pipeline.yaml",
) -> JSONResponse:
    """Check a pipeline file against the loaded project (step library, agents, settings) without saving it."""
    service = service_of(request)
    problems: list[Problem]
    try:
        # Parsing is bounded (docs/security.md) and runs off the event loop: other requests go on meanwhile.
        loaded = await asyncio.to_thread(
            load_pipeline, Path(Path(filename).name), service.project.library, environ=EnvironmentNames(), text=body
        )
    except ConfigError as error:
        problems, name = list(error.problems), None
    else:
        settings = service.settings
        problems = check_references(loaded, service.project.agents, settings)
        pipelines = {**service.project.pipelines, loaded.spec.name: loaded}
        problems += check_sub_pipelines(loaded, pipelines, settings)
        problems += preflight(loaded, EXECUTOR_CAPABILITIES, settings.spec.notifications)
        name = loaded.spec.name
    body_json = {"valid": not problems, "pipeline": name, "problems": [problem_json(p) for p in problems]}
    return JSONResponse(body_json, status_code=422 if problems else 200)


@router.post("/pipelines/reload")
async def reload_pipelines(request: Request, _: Reloader) -> dict[str, Any]:
    """Read pipelines, steps and agents again; runs in flight finish on what they started with."""
    service = service_of(request)
    problems = await service.reload(announce=True)
    return {
        "pipelines": sorted(service.project.pipelines),
        "problems": [problem_json(problem) for problem in problems],
    }


@router.post("/pipelines/{name}/run", status_code=202)
async def run_pipeline(
    request: Request,
    name: str,
    principal: Runner,
    body: ManualRunBody | None = None,
) -> dict[str, Any]:
    """Start a run by hand (any stage). 202 with the run id; 429 when too many runs are in flight."""
    service = service_of(request)
    loaded = visible_pipeline(service, principal, name)
    given = body or ManualRunBody()
    context = manual_context(
        service.clock.now(),
        pipeline=name,
        severity=given.severity,
        labels=given.labels,
        summary=given.summary,
        team=principal.team,
        metadata={**given.data, "started_by": principal.name},
    )
    outcome = await service.accept(loaded, context, gated=False)
    if outcome.status == "overloaded":
        raise HTTPException(429, detail="too many runs are in flight (concurrency.max_runs); retry later")
    return {"status": outcome.status, "run_id": outcome.run_id, "pipeline": name}
