"""What a run tells the outside world about itself: `notifications:` and `on_failure.webhook`.

The stage decides (SYSTEM.md §11.2): in `testing` nothing leaves the process — every channel is
the log and failure webhooks are logged, not sent. A channel that fails is logged; it never fails
the run.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import httpx

from vectorstep.carriage import Uncarriable, checked_headers, checked_url
from vectorstep.domain.records import StepRecord
from vectorstep.domain.status import StepStatus
from vectorstep.engine.context import RunState
from vectorstep.engine.entries import why
from vectorstep.errors import ConfigError, TemplateError
from vectorstep.executors.http import target
from vectorstep.notify.channels import ChannelError, LogChannel, Message
from vectorstep.notify.routing import build_channel, channel_settings
from vectorstep.spec.pipeline import NotificationTargetSpec
from vectorstep.spec.service import NotificationChannelsSpec
from vectorstep.spec.steps import HttpCallSpec, PipelineItem, StepSpec
from vectorstep.templating import render_prompt, render_value

log = logging.getLogger(__name__)
DEFAULT_TEMPLATE = "{{ pipeline_name }}: step {{ step_name }} {{ status }} — {{ escalation_reason }}"
RunLog = Callable[[str, str], Awaitable[None]]  # (level, message) into the run log


class Outbound:
    def __init__(self, channels: NotificationChannelsSpec, http: httpx.AsyncClient) -> None:
        self._channels = channels
        self._http = http

    async def after_step(
        self, state: RunState, item: PipelineItem, record: StepRecord, *, threshold: float, say: RunLog
    ) -> None:
        context = escalation_context(state, record, threshold)
        if isinstance(item, StepSpec) and record.status is StepStatus.FAILED and item.on_failure.webhook:
            await self._failure_webhook(state, item.on_failure.webhook, context, say)
        action = _action(item, record)
        if action is not None:
            await self.notify(state, action, context, say)

    async def notify(self, state: RunState, action: str, context: Mapping[str, Any], say: RunLog) -> None:
        for spec in state.pipeline.notifications.get(action, []):
            await self._deliver(state, action, spec, context, say)

    async def _deliver(
        self, state: RunState, action: str, spec: NotificationTargetSpec, context: Mapping[str, Any], say: RunLog
    ) -> None:
        text, warnings = render_prompt(spec.template or DEFAULT_TEMPLATE, context)
        message = Message(
            title=f"[{state.pipeline.name}] {action}: step {context.get('step_name')} {context.get('status')}",
            text=text,
            data={"action": action, "run_id": state.run_id, "pipeline": state.pipeline.name, "stage": state.stage},
            titled=not spec.template,
        )
        if state.stage == "testing":  # nothing leaves the process while a pipeline is being tried out
            await LogChannel().send(message)
            await say("info", f"notification {action} → {spec.channel}: logged, not sent (stage testing): {text}")
            return
        try:
            settings = channel_settings(
                spec.channel, getattr(self._channels, spec.channel, None), spec.config, "notifications"
            )
            await build_channel(spec.channel, settings, self._http).send(message)
        except (ChannelError, ConfigError) as error:
            await say("warning", f"notification {action} → {spec.channel} failed: {error}")
            return
        await say(
            "info", f"notification {action} → {spec.channel} sent" + (f" ({'; '.join(warnings)})" if warnings else "")
        )

    async def _failure_webhook(
        self, state: RunState, webhook: HttpCallSpec, context: Mapping[str, Any], say: RunLog
    ) -> None:
        try:
            url = str(render_value(webhook.url, context))
            headers = {key: str(render_value(value, context)) for key, value in webhook.headers.items()}
            payload = render_value(webhook.payload, context)
        except TemplateError as error:
            await say("warning", f"on_failure webhook cannot be rendered: {error}")
            return
        if state.stage == "testing":
            await say("info", f"on_failure webhook not sent (stage testing): would {webhook.method} to {target(url)}")
            return
        try:
            response = await self._http.request(
                webhook.method,
                checked_url(url),
                headers=checked_headers(headers),
                json=payload,
                timeout=webhook.timeout_seconds,
            )
        except Uncarriable as refused:
            await say("warning", f"on_failure webhook cannot be sent: {refused}")
            return
        except UnicodeError:
            await say("warning", f"on_failure webhook to {target(url)} cannot be sent: its body holds a lone surrogate")
            return
        except httpx.HTTPError as error:
            await say("warning", f"on_failure webhook to {target(url)} failed: {type(error).__name__}")
            return
        level = "info" if 200 <= response.status_code < 300 else "warning"
        await say(level, f"on_failure webhook {webhook.method} {target(url)} answered {response.status_code}")


def _action(item: PipelineItem, record: StepRecord) -> str | None:
    """Which `notifications:` action a step's outcome triggers, if any."""
    if record.status in (StepStatus.ESCALATED, StepStatus.FAILED):  # SYSTEM.md §11.3: escalated or failed
        return "escalate"
    if record.status is StepStatus.ABORTED:
        return getattr(getattr(item, "parallel", getattr(item, "fan_out", item)), "on_abort", "notify")
    if record.status is StepStatus.STOPPED:
        return "stopped"
    return None


def escalation_context(state: RunState, record: StepRecord, threshold: float) -> dict[str, Any]:
    report = record.trust_report or {}
    failed = [check["name"] for check in report.get("deterministic_checks") or [] if not check.get("passed")]
    return {
        **state.step_context(record.name),
        "step_name": record.name,
        "status": record.status.value,
        "escalation_reason": why(record, threshold),
        "confidence": record.confidence,
        "confidence_threshold": threshold,
        "combined_trust": record.combined_trust,
        "grounding_score": record.grounding_score,
        "failed_checks": failed,
        "step_summary": (record.output or {}).get("summary", record.error or ""),
        "error": record.error,
    }
