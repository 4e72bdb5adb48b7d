"""Calibration: each bucket's reliability, ECE and Brier, which signal predicts people's marks, and the queue of
steps left to mark."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request

from vectorstep.store.calibration import CalibrationRepository
from vectorstep.store.marking import MarkingRepository, QueueFilter
from vectorstep.web.auth import Principal
from vectorstep.web.deps import api_allowed, service_of

router = APIRouter(tags=["calibration"])
Reader = Annotated[Principal, Depends(api_allowed("read"))]


@router.get("/calibration")
async def calibration(
    request: Request,
    principal: Reader,
    pipeline: str | None = None,
    step: str | None = None,
    agent: str | None = None,
) -> dict[str, Any]:
    """Each bucket of marked production history the caller's teams see (as `vectorstep calibration show --json`)."""
    service = service_of(request)
    found = await CalibrationRepository(service.database).reports(
        service.settings.spec.calibration, pipeline=pipeline, step=step, agent=agent, teams=principal.scope
    )
    return {"buckets": [{"bucket": asdict(bucket), "report": asdict(report)} for bucket, report in found]}


@router.get("/marking")
async def marking(
    request: Request,
    principal: Reader,
    pipeline: str | None = None,
    team: str | None = None,
    stage: Literal["testing", "production"] | None = "production",
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> dict[str, Any]:
    """The marking queue: agent steps nobody has marked yet (neither the step nor its run), oldest first,
    with how much of the history in scope is marked."""
    where = QueueFilter(stage=stage, pipeline=pipeline, team=team, teams=principal.scope)
    queue = await MarkingRepository(service_of(request).database).queue(where, limit=limit)
    return {
        "steps": [{**asdict(step), "finished_at": step.finished_at.isoformat()} for step in queue.steps],
        "unmarked": queue.unmarked,
        "total": queue.total,
        "coverage": queue.coverage,
    }
