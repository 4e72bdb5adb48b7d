"""`executor: webhook`: send the rendered prompt to a URL; a non-2xx answer is an executor error."""

from __future__ import annotations

import time

import httpx

from vectorstep.domain.execution import ExecutionResult, ExecutorCapabilities
from vectorstep.domain.llm_output import LLMOutput
from vectorstep.errors import ExecutorError
from vectorstep.executors.base import StepCall
from vectorstep.executors.http import IDEMPOTENCY_HEADER, idempotency_key, send, target
from vectorstep.spec.executor_config import WebhookConfig
from vectorstep.templating import render_strict


class WebhookExecutor:
    capabilities = ExecutorCapabilities()

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def execute(self, call: StepCall) -> ExecutionResult:
        config = call.config
        if not isinstance(config, WebhookConfig):
            raise ExecutorError(f"the webhook executor got a {type(config).__name__}")
        url = render_strict(config.url, call.context)
        headers = {"Content-Type": config.content_type}
        headers.update({key: render_strict(value, call.context) for key, value in config.headers.items()})
        headers.setdefault(IDEMPOTENCY_HEADER, idempotency_key(call.run_id, call.step, call.attempt))
        started = time.monotonic()
        result = await send(
            self._client,
            method=config.method,
            url=url,
            headers=headers,
            timeout_seconds=call.timeout_seconds or config.timeout_seconds,
            content=call.prompt,
        )
        if not 200 <= result.status_code < 300:
            raise ExecutorError(f"{config.method} {target(url)} answered {result.status_code}: {result.text[:300]}")
        output = LLMOutput(
            confidence=1.0,
            summary=f"{config.method} {target(url)} answered {result.status_code}",
            next_step_context=result.text[:2000],
            status_code=result.status_code,
            response=result.body,
        )
        return ExecutionResult(
            output=output,
            prompt=call.prompt,
            response_text=result.text,
            duration_ms=round((time.monotonic() - started) * 1000, 3),
        )
