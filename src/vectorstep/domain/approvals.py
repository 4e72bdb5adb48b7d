"""Human approvals: one decision by a person, for an `executor: human` step or a `human` check."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class ApprovalStatus(StrEnum):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"


TIMEOUT = "timeout"  # decided_by when the clock decided: testing approves, production rejects


@dataclass(frozen=True)
class ApprovalRequest:
    run_id: str
    pipeline: str
    step: str
    check: str | None  # None for `executor: human`
    message: str
    team: str | None
    stage: str
    timeout_seconds: float
    checkpoint: Mapping[str, Any] | None = None  # what the step had done, to resume after a restart


@dataclass(frozen=True)
class Approval:
    id: str
    run_id: str
    pipeline: str
    step: str
    check: str | None
    message: str
    team: str | None
    stage: str
    channel: str
    status: ApprovalStatus
    created_at: datetime
    expires_at: datetime
    decided_at: datetime | None = None
    decided_by: str | None = None
    checkpoint: Mapping[str, Any] | None = None

    @property
    def approved(self) -> bool:
        return self.status is ApprovalStatus.APPROVED

    @property
    def timeout_decision(self) -> ApprovalStatus:
        """What the clock decides: a testing pipeline never waits on nobody; production fails closed."""
        return ApprovalStatus.APPROVED if self.stage == "testing" else ApprovalStatus.REJECTED

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "pipeline": self.pipeline,
            "step": self.step,
            "check": self.check,
            "message": self.message,
            "team": self.team,
            "stage": self.stage,
            "channel": self.channel,
            "status": self.status.value,
            "created_at": self.created_at.isoformat(),
            "expires_at": self.expires_at.isoformat(),
            "decided_at": self.decided_at.isoformat() if self.decided_at else None,
            "decided_by": self.decided_by,
        }
