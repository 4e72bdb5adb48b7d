"""Calibration: each bucket's reliability, ECE and Brier, and which signal predicts people's marks."""

from __future__ import annotations

from dataclasses import asdict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from vectorstep.store.calibration import CalibrationRepository
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
