"""Replays over HTTP: start one for a step, follow it, read its report, list a pipeline's replays."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from vectorstep.dispatch.replay import ReplayRequest, candidate_of
from vectorstep.domain.records import RunRecord
from vectorstep.errors import NotFoundError
from vectorstep.store.replay import REPLAY_SOURCE, REPORT_EVENT
from vectorstep.web.auth import Principal
from vectorstep.web.deps import api_allowed, service_of, visible_pipeline
from vectorstep.web.service import Service

router = APIRouter(tags=["replays"])
Reader = Annotated[Principal, Depends(api_allowed("read"))]
Runner = Annotated[Principal, Depends(api_allowed("run"))]
MAX_PROMPT_CHARS = 200_000


class ReplayBody(BaseModel):
    candidate_model: str | None = Field(default=None, max_length=200)
    candidate_agent: str | None = Field(default=None, max_length=200)
    candidate_prompt: str | None = Field(default=None, max_length=MAX_PROMPT_CHARS)  # the template's text
    mode: Literal["rendered", "rerender"] | None = None
    k: int = 20
    wait: bool = False  # answer when the report is stored, instead of at once with 202


def replay_document(run: RunRecord) -> dict[str, Any] | None:
    """The report a stored replay run holds in its last log entry."""
    for entry in reversed(run.log):
        if entry.event == REPORT_EVENT and entry.data is not None:
            return dict(entry.data)
    return None


async def start_replay(service: Service, request: ReplayRequest) -> tuple[str, Any]:
    prepared = await service.replays.prepare(request)
    return service.replays.start(prepared)


@router.post("/pipelines/{name}/steps/{step:path}/replay", status_code=202, response_model=None)
async def replay_step(
    request: Request, name: str, step: str, body: ReplayBody, principal: Runner
) -> dict[str, Any] | JSONResponse:
    """Replay the step's newest marked production executions with a candidate model, agent or prompt.

    Answers 202 with the replay's run id at once (follow `GET /api/replays/{run_id}`), or, with
    `wait: true`, 200 with the report once it is stored. Refused with 400 and the reason when the
    step has no marked history, its agent is not in `replay.safe_agents`, or the candidate is unknown.
    """
    service = service_of(request)
    visible_pipeline(service, principal, name)
    candidate = candidate_of(body.candidate_model, body.candidate_agent, body.candidate_prompt)
    run_id, task = await start_replay(service, ReplayRequest(name, step, candidate, body.mode, body.k))
    if body.wait:
        outcome = await task
        if outcome is None:
            progress = service.replays.running.get(run_id)
            return JSONResponse({"run_id": run_id, "status": "failed", "error": progress and progress.error}, 500)
        return JSONResponse(outcome.document, status_code=200)
    progress = service.replays.running[run_id]
    return {"run_id": run_id, "status": "running", "done": progress.done, "total": progress.total}


@router.get("/replays/{run_id}", response_model=None)
async def get_replay(request: Request, run_id: str, principal: Reader) -> dict[str, Any] | JSONResponse:
    """The replay's report once stored (200); while this process still answers its samples, 202 with progress."""
    service = service_of(request)
    progress = service.replays.running.get(run_id)
    if progress is not None:
        principal.require_team(progress.team, f"replay {run_id}")
        status = "failed" if progress.error else "running"
        body = {"run_id": run_id, "status": status, "done": progress.done, "total": progress.total}
        return JSONResponse(body | {"error": progress.error}, status_code=500 if progress.error else 202)
    run = await service.runs.get_run(await service.runs.resolve_run_id(run_id), with_log=True)
    principal.require_team(run.team, f"replay {run_id}")
    document = replay_document(run) if run.source == REPLAY_SOURCE else None
    if document is None:
        raise NotFoundError(f"run {run_id} is not a replay")
    return document


@router.get("/pipelines/{name}/replays")
async def list_replays(request: Request, name: str, principal: Reader, limit: int = 20) -> dict[str, Any]:
    """The pipeline's stored replays, newest first, each with its headline figures."""
    service = service_of(request)
    visible_pipeline(service, principal, name)
    reports = await service.replays.store.reports(name, teams=principal.scope, limit=max(1, min(limit, 200)))
    return {"replays": [summary_of(report) for report in reports]}


def summary_of(document: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "run_id": document["run_id"],
        "started_at": document.get("started_at"),
        "step": document["step"],
        "candidate": document["candidate"],
        "mode": document["mode"],
        "samples": len(document["samples"]),
        "totals": document["totals"],
    }
