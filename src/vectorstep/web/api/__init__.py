"""The REST API under `/api` (OpenAPI at /api/openapi.json): every route needs a Bearer token when tokens are set."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from vectorstep.web.api import approvals, artifacts, calibration, pipelines, readiness, replays, runs, versions
from vectorstep.web.deps import api_principal

router = APIRouter(prefix="/api", dependencies=[Depends(api_principal)])
router.include_router(runs.router)
router.include_router(artifacts.router)
router.include_router(approvals.router)
router.include_router(pipelines.router)
router.include_router(readiness.router)
router.include_router(calibration.router)
router.include_router(replays.router)
router.include_router(versions.router)
