"""The approval desk: the one way `executor: human` steps and `human` checks ask a person.

An approval is a database row, so it survives a restart and can be decided from any process:
the CLI, the API or the UI. Waiting is polling the row — nothing is held open in between. The
stage decides the rest: in `testing` no external channel is used and a timeout approves; in
`production` the team's channel is used and a timeout rejects.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from datetime import datetime, timedelta
from typing import Any, Protocol

import httpx

from vectorstep.clock import Clock
from vectorstep.domain.approvals import TIMEOUT, Approval, ApprovalRequest, ApprovalStatus
from vectorstep.errors import ConfigError
from vectorstep.notify.channels import ChannelError, Message
from vectorstep.notify.routing import build_channel, channel_settings
from vectorstep.spec.service import ApprovalRouteSpec, HumanApprovalSpec

log = logging.getLogger(__name__)
POLL_SECONDS = 0.5

# Shown while a run waits; returns when the person at the terminal has answered (or never).
Decide = Callable[[bool, str], Coroutine[Any, Any, None]]  # (approve, who)
Interaction = Callable[[Approval, Decide], Awaitable[None]]


class ApprovalStore(Protocol):
    async def create_approval(
        self, request: ApprovalRequest, *, approval_id: str, channel: str, created_at: datetime, expires_at: datetime
    ) -> tuple[Approval, bool]:
        """The approval for (run, step, check), created if it does not exist; True when created now."""
        ...

    async def get_approval(self, approval_id: str) -> Approval: ...

    async def decide_approval(
        self, approval_id: str, status: ApprovalStatus, by: str, at: datetime
    ) -> tuple[Approval, bool]:
        """Decide a pending approval; False (and the existing decision) when it was already decided."""
        ...


class ApprovalDesk:
    def __init__(
        self,
        store: ApprovalStore,
        routes: HumanApprovalSpec,
        http: httpx.AsyncClient,
        clock: Clock,
        *,
        public_url: str | None = None,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self._store = store
        self._routes = routes
        self._http = http
        self._clock = clock
        self._public_url = public_url.rstrip("/") if public_url else None
        self._poll = poll_seconds

    async def ask(self, request: ApprovalRequest) -> Approval:
        route = self._route(request.team)
        channel = route.channel if request.stage == "production" else "log"
        now = self._clock.now()
        approval, created = await self._store.create_approval(
            request,
            approval_id=uuid.uuid4().hex,
            channel=channel,
            created_at=now,
            expires_at=now + timedelta(seconds=request.timeout_seconds),
        )
        if created:
            await self._announce(approval, route)
        return approval

    async def wait(self, approval: Approval, interaction: Interaction | None = None) -> Approval:
        """Until someone decides, or the clock does (testing approves, production rejects)."""
        if interaction is not None and approval.status is ApprovalStatus.PENDING:
            await interaction(approval, lambda approve, by: self._decide_quietly(approval.id, approve, by))
        while True:
            current = await self._store.get_approval(approval.id)
            if current.status is not ApprovalStatus.PENDING:
                return current
            now = self._clock.now()
            if now >= current.expires_at:
                decided, _ = await self._store.decide_approval(current.id, current.timeout_decision, TIMEOUT, now)
                return decided
            await self._clock.sleep(min(self._poll, (current.expires_at - now).total_seconds()))

    async def decide(self, approval_id: str, approve: bool, by: str) -> tuple[Approval, bool]:
        status = ApprovalStatus.APPROVED if approve else ApprovalStatus.REJECTED
        approval = await self._store.get_approval(approval_id)
        now = self._clock.now()
        if approval.status is ApprovalStatus.PENDING and now >= approval.expires_at:
            return await self._store.decide_approval(approval_id, approval.timeout_decision, TIMEOUT, now)
        return await self._store.decide_approval(approval_id, status, by, now)

    async def settle(self, approval: Approval) -> Approval:
        """Apply the timeout decision to an approval that expired while nobody was waiting for it."""
        if approval.status is ApprovalStatus.PENDING and self._clock.now() >= approval.expires_at:
            decided, _ = await self._store.decide_approval(
                approval.id, approval.timeout_decision, TIMEOUT, self._clock.now()
            )
            return decided
        return approval

    async def _decide_quietly(self, approval_id: str, approve: bool, by: str) -> None:
        await self.decide(approval_id, approve, by)

    def _route(self, team: str | None) -> ApprovalRouteSpec:
        return self._routes.teams.get(team or "", self._routes.default)

    async def _announce(self, approval: Approval, route: ApprovalRouteSpec) -> None:
        message = self.message(approval)
        log.info("approval %s needed: %s", approval.id, message.text.replace("\n", " / "))
        if approval.channel == "log":
            return
        try:
            settings = channel_settings(approval.channel, getattr(route, approval.channel), {}, "human_approval")
            await build_channel(approval.channel, settings, self._http).send(message)
        except (ChannelError, ConfigError) as error:
            log.warning(
                "approval %s: the %s channel failed (%s); it can still be decided with "
                "`vectorstep approvals approve %s` (or reject)",
                approval.id,
                approval.channel,
                error,
                approval.id,
            )

    def message(self, approval: Approval) -> Message:
        links: dict[str, str] = {}
        if self._public_url:
            links = {
                "view and decide": f"{self._public_url}/ui/approvals/{approval.id}",
                "approve (POST)": f"{self._public_url}/api/approvals/{approval.id}/approve",
                "reject (POST)": f"{self._public_url}/api/approvals/{approval.id}/reject",
            }
        what = f"check {approval.check!r} of step {approval.step!r}" if approval.check else f"step {approval.step!r}"
        text = (
            f"{approval.message}\n\n{approval.pipeline}: {what} (run {approval.run_id[:12]}, stage {approval.stage}).\n"
            f"Decide before {approval.expires_at:%Y-%m-%d %H:%M:%S} UTC with "
            f"`vectorstep approvals approve {approval.id}` or `... reject {approval.id}`."
        )
        return Message(
            title=f"Approval needed: {approval.pipeline} / {approval.step}",
            text=text,
            links=links,
            data={"approval": approval.as_json(), "decide": links},
        )
