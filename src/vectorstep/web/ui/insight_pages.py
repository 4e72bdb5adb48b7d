"""Insights pages: the whole history, or one pipeline, step, agent, model, tool or team, over a period."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from vectorstep.errors import NotFoundError
from vectorstep.spec.pipeline import BudgetSpec
from vectorstep.store.insights import DIMENSIONS, Dimension, InsightRepository
from vectorstep.web.auth import Principal
from vectorstep.web.deps import service_of
from vectorstep.web.ui.insight_view import DEFAULT_PERIOD, PERIODS, breakdown_of, insight_view, period_of
from vectorstep.web.ui.pages import Reader
from vectorstep.web.ui.render import page

router = APIRouter(prefix="/ui", include_in_schema=False)
TITLES = {"pipeline": "Pipeline", "step": "Step", "agent": "Agent", "model": "Model", "tool": "Tool", "team": "Team"}


@router.get("/insights", response_class=HTMLResponse)
async def insights_page(request: Request, principal: Reader, period: str = DEFAULT_PERIOD, by: str = "") -> Response:
    return await _page(request, principal, None, None, period, by)


@router.get("/insights/{dimension}/{name:path}", response_class=HTMLResponse)
async def insight_page(
    request: Request, principal: Reader, dimension: str, name: str, period: str = DEFAULT_PERIOD, by: str = ""
) -> Response:
    if dimension not in DIMENSIONS:
        raise NotFoundError(f"no insights by {dimension!r}; there are insights by: {', '.join(DIMENSIONS)}")
    chosen: Dimension = dimension
    if chosen == "team":
        principal.require_team(name, f"team {name}")
    return await _page(request, principal, chosen, name, period, by)


async def _page(
    request: Request, principal: Principal, dimension: Dimension | None, name: str | None, period_name: str, by: str
) -> Response:
    service = service_of(request)
    period = period_of(period_name, service.clock.now())
    breakdown = breakdown_of(by, dimension)
    found = await InsightRepository(service.database).insights(
        period.where(dimension, name, principal.scope), breakdown
    )
    budget: BudgetSpec | None = None
    if dimension == "pipeline" and name is not None and name in service.project.pipelines:
        budget = service.project.pipelines[name].spec.budget
    here = "/ui/insights" if dimension is None else f"/ui/insights/{dimension}/{quote(name or '', safe='')}"
    return page(
        request,
        "insights.html",
        view=insight_view(found, period, budget),
        dimension=dimension,
        dimension_title=TITLES.get(dimension or "", ""),
        name=name,
        period=period,
        periods=list(PERIODS),
        breakdown=breakdown,
        breakdowns=[other for other in DIMENSIONS if other != dimension],
        here=here,
        pending_hours=found.pending_hours,
        link=lambda value: f"/ui/insights/{breakdown}/{quote(value, safe='')}?period={period.name}",
    )
