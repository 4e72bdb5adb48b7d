"""Asking a person from inside a run: the run is marked waiting while the desk waits."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from vectorstep.approvals.desk import ApprovalDesk, Interaction
from vectorstep.domain.approvals import Approval, ApprovalRequest, ApprovalStatus


class RunParked(Exception):
    """Raised in the service when a run must wait (for a person): it is put aside, not polled."""


@dataclass(frozen=True)
class HumanGate:
    desk: ApprovalDesk
    waiting: Callable[[Approval], Awaitable[None]]  # the run is now `waiting` on this approval
    resumed: Callable[[Approval], Awaitable[None]]  # ... and `running` again
    interaction: Interaction | None = None
    park: bool = False  # the service parks waiting runs (no worker held); the CLI waits for the answer

    async def decision(self, request: ApprovalRequest) -> Approval:
        approval = await self.desk.ask(request)
        if approval.status is ApprovalStatus.PENDING:
            await self.waiting(approval)
            if self.park:
                raise RunParked(f"waiting for approval {approval.id}")
            approval = await self.desk.wait(approval, self.interaction)
            await self.resumed(approval)
        return approval
