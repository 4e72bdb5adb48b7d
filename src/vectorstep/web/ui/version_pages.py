"""Version history pages — per step and per agent: every version with its calibration and the runs that used
it, and the unified diff of any two — and the download of a step's artifacts (never shown as a page)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from vectorstep.domain.versions import VersionDiff
from vectorstep.errors import NotFoundError, PayloadError
from vectorstep.web.artifact_access import download
from vectorstep.web.deps import service_of
from vectorstep.web.ui.pages import Reader
from vectorstep.web.ui.render import page
from vectorstep.web.version_subjects import History, agent_history, step_history

router = APIRouter(prefix="/ui", include_in_schema=False)


@router.get("/pipelines/{name}/steps/{step:path}/versions", response_class=HTMLResponse)
async def step_versions_page(
    request: Request, name: str, step: str, principal: Reader, a: str = "", b: str = ""
) -> Response:
    history = await step_history(service_of(request), principal, name, step)
    return _page(request, history, a, b)


@router.get("/agents/{name}/versions", response_class=HTMLResponse)
async def agent_versions_page(request: Request, name: str, principal: Reader, a: str = "", b: str = "") -> Response:
    history = await agent_history(service_of(request), principal, name)
    return _page(request, history, a, b)


@router.get("/runs/{run_id}/steps/{step:path}/artifacts/{name}")
async def artifact_download(request: Request, run_id: str, step: str, name: str, principal: Reader) -> Response:
    return await download(service_of(request), principal, run_id, step, name)


def _page(request: Request, history: History, a: str, b: str) -> Response:
    compared: VersionDiff | None = None
    problem = None
    if a and b:
        try:
            compared = history.diff(a, b)
        except (NotFoundError, PayloadError) as error:  # a stale or hand-edited link: said on the page
            problem = str(error)
    first, last = _default_pair(history)
    return page(
        request,
        "versions.html",
        history=history,
        compared=compared,
        problem=problem,
        chosen={"a": a or first, "b": b or last},
        settings=service_of(request).settings.spec.calibration,
    )


def _default_pair(history: History) -> tuple[str, str]:
    """The form starts on the two newest versions of the first kind that has two."""
    for versions in (history.prompts, history.agents):
        if len(versions) >= 2:
            return versions[-2].hash, versions[-1].hash
    every = history.versions
    return (every[0].hash, every[0].hash) if every else ("", "")
