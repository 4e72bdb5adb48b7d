"""Approvals: what waits for a person, and deciding it (the decision records who decided)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Request

from vectorstep.domain.approvals import TIMEOUT, ApprovalStatus
from vectorstep.web.auth import Principal
from vectorstep.web.deps import api_allowed, service_of

router = APIRouter(tags=["approvals"])
Reader = Annotated[Principal, Depends(api_allowed("read"))]
Decider = Annotated[Principal, Depends(api_allowed("decide"))]


@router.get("/approvals")
async def list_approvals(
    request: Request,
    principal: Reader,
    status: Literal["pending", "approved", "rejected", "all"] = "pending",
    limit: int = 100,
) -> dict[str, Any]:
    """Newest first, of the caller's teams."""
    wanted = None if status == "all" else ApprovalStatus(status)
    found = await service_of(request).approvals.list_approvals(
        status=wanted, limit=max(1, min(limit, 500)), teams=principal.scope
    )
    return {"approvals": [approval.as_json() for approval in found]}


@router.post("/approvals/{approval_id}/approve")
async def approve(request: Request, approval_id: str, principal: Decider) -> dict[str, Any]:
    """Approve; the waiting run resumes in the background."""
    return await _decide(request, approval_id, True, principal)


@router.post("/approvals/{approval_id}/reject")
async def reject(request: Request, approval_id: str, principal: Decider) -> dict[str, Any]:
    """Reject; the waiting run resumes and the step is settled as rejected."""
    return await _decide(request, approval_id, False, principal)


async def _decide(request: Request, approval_id: str, approve: bool, principal: Principal) -> dict[str, Any]:
    service = service_of(request)
    waiting = await service.approvals.get_approval(approval_id)
    principal.require_team(waiting.team, f"approval {waiting.id}")
    approval, changed = await service.decide(waiting.id, approve, principal.name)
    if changed and approval.decided_by == TIMEOUT:
        raise HTTPException(
            409,
            detail=f"approval {approval.id} had expired; its timeout decision ({approval.status.value}) was applied",
        )
    if not changed:
        raise HTTPException(
            409,
            detail=f"approval {approval.id} was already {approval.status.value} by {approval.decided_by}",
        )
    return approval.as_json()
