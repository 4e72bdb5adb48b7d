"""Artifacts: the named texts a step's answer held, stored beside the step (docs/service.md#artifacts)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response

from vectorstep.web.artifact_access import download, step_artifacts
from vectorstep.web.auth import Principal
from vectorstep.web.deps import api_allowed, service_of

router = APIRouter(tags=["runs"])
Reader = Annotated[Principal, Depends(api_allowed("read"))]


@router.get("/runs/{run_id}/steps/{step:path}/artifacts")
async def list_artifacts(request: Request, run_id: str, step: str, principal: Reader) -> dict[str, Any]:
    """The step's artifacts by name: size (bytes the agent wrote) and whether it was stored truncated."""
    found, listed = await step_artifacts(service_of(request), principal, run_id, step)
    return {"run_id": found, "step": step, "artifacts": [artifact.as_json() for artifact in listed]}


@router.get(
    "/runs/{run_id}/steps/{step:path}/artifacts/{name}",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}, "description": "the artifact's text, as an attachment"}},
)
async def get_artifact(request: Request, run_id: str, step: str, name: str, principal: Reader) -> Response:
    """The artifact's text (`text/plain; charset=utf-8`, `Content-Disposition: attachment`)."""
    return await download(service_of(request), principal, run_id, step, name)
