"""Calibration pages: per bucket, a reliability diagram, ECE and Brier, and which signal predicts the marks; and
the marking queue that feeds them: agent steps nobody has marked yet, oldest first."""

from __future__ import annotations

from dataclasses import asdict
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response
from markupsafe import Markup

from vectorstep.store.calibration import CalibrationRepository
from vectorstep.web.deps import service_of
from vectorstep.web.ui.marking_view import marking_queue
from vectorstep.web.ui.pages import Reader
from vectorstep.web.ui.reliability import reliability_svg
from vectorstep.web.ui.render import page

router = APIRouter(prefix="/ui", include_in_schema=False)
SIGNAL_NAMES = {
    "self_reported": "S — self-report",
    "verifier": "V — verifier",
    "grounding": "G — grounding",
    "combined_trust": "Combined trust",
}


@router.get("/calibration", response_class=HTMLResponse)
async def calibration_page(
    request: Request, principal: Reader, pipeline: str = "", step: str = "", agent: str = ""
) -> Response:
    service = service_of(request)
    settings = service.settings.spec.calibration
    found = await CalibrationRepository(service.database).reports(
        settings, pipeline=pipeline or None, step=step or None, agent=agent or None, teams=principal.scope
    )
    buckets = [
        {
            "bucket": asdict(bucket),
            "report": report,
            "diagram": Markup(reliability_svg(report, f"Reliability of {bucket.step} ({bucket.executor_agent})")),  # noqa: S704 - built from numbers and escaped text only
        }
        for bucket, report in found
    ]
    return page(
        request,
        "calibration.html",
        buckets=buckets,
        settings=settings,
        filters={"pipeline": pipeline, "step": step, "agent": agent},
        signal_names=SIGNAL_NAMES,
    )


@router.get("/marking", response_class=HTMLResponse)
async def marking_page(
    request: Request, principal: Reader, pipeline: str = "", team: str = "", stage: str = "production"
) -> Response:
    queue = await marking_queue(request, principal.scope, pipeline=pipeline, team=team, stage=stage)
    filters = {"pipeline": pipeline, "team": team, "stage": stage}
    return page(
        request,
        "marking.html",
        queue=queue,
        filters=filters,
        back="/ui/marking?" + urlencode(filters),  # every filter, blank ones too: where the queue returns
    )
