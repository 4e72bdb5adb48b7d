"""Runs: list with filters, one run's record (as `vectorstep run --json`), and people's marks on it."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from vectorstep.domain.status import RunStatus
from vectorstep.store.feedback import Mark
from vectorstep.store.runs import RunFilter
from vectorstep.web.auth import Principal
from vectorstep.web.deps import api_allowed, service_of

router = APIRouter(tags=["runs"])
Reader = Annotated[Principal, Depends(api_allowed("read"))]
Marker = Annotated[Principal, Depends(api_allowed("mark"))]
Label = Literal["correct", "partial", "incorrect"]


class FeedbackBody(BaseModel):
    label: Label
    comment: str | None = Field(default=None, max_length=4000)


@router.get("/runs")
async def list_runs(
    request: Request,
    principal: Reader,
    status: RunStatus | None = None,
    pipeline: str | None = None,
    team: str | None = None,
    stage: Literal["testing", "production"] | None = None,
    since: Annotated[datetime | None, Query(description="started at or after (ISO 8601)")] = None,
    until: Annotated[datetime | None, Query(description="started before (ISO 8601)")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> dict[str, Any]:
    """Newest first, of the caller's teams. `next_offset` is null on the last page."""
    where = RunFilter(
        status=status.value if status else None,
        pipeline=pipeline,
        team=team,
        stage=stage,
        since=since,
        until=until,
        teams=principal.scope,
    )
    runs = await service_of(request).runs.list_runs(where, limit=limit + 1, offset=offset)
    return {
        "runs": [run.as_json() | {"steps": None} for run in runs[:limit]],
        "limit": limit,
        "offset": offset,
        "next_offset": offset + limit if len(runs) > limit else None,
    }


@router.get("/runs/{run_id}")
async def get_run(request: Request, run_id: str, principal: Reader) -> dict[str, Any]:
    """The run record of `vectorstep run --json`, with its trigger context, log, approvals and marks.

    A unique prefix of the id is enough.
    """
    service = service_of(request)
    found = await service.runs.resolve_run_id(run_id)
    run = await service.runs.get_run(found, with_log=True)
    principal.require_team(run.team, f"run {found}")
    approvals = await service.approvals.for_run(found)
    marks = await service.feedback.marks(found)
    return run.as_json() | {
        "context": dict(run.context),
        "log": [
            {
                "ts": entry.ts.isoformat(),
                "level": entry.level,
                "event": entry.event,
                "step": entry.step,
                "message": entry.message,
            }
            for entry in run.log
        ],
        "approvals": [approval.as_json() for approval in approvals],
        "feedback": [mark.as_json() for mark in marks],
    }


@router.post("/runs/{run_id}/feedback", status_code=201)
async def mark_run(request: Request, run_id: str, body: FeedbackBody, principal: Marker) -> dict[str, Any]:
    """Mark the whole run correct, partial or incorrect (calibration reads these marks)."""
    return await _mark(request, run_id, None, body, principal)


@router.post("/runs/{run_id}/steps/{step_name}/feedback", status_code=201)
async def mark_step(
    request: Request,
    run_id: str,
    step_name: str,
    body: FeedbackBody,
    principal: Marker,
) -> dict[str, Any]:
    """Mark one step's outcome correct, partial or incorrect."""
    return await _mark(request, run_id, step_name, body, principal)


async def _mark(
    request: Request, run_id: str, step: str | None, body: FeedbackBody, principal: Principal
) -> dict[str, Any]:
    service = service_of(request)
    found = await service.runs.resolve_run_id(run_id)
    principal.require_team((await service.runs.get_run(found)).team, f"run {found}")
    mark = Mark(found, step, body.label, body.comment, principal.name, service.clock.now())
    await service.mark(mark)
    return mark.as_json()
