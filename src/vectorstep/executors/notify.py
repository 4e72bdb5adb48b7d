"""`executor: notify`: post a rendered payload; in `testing` it is logged, not sent."""

from __future__ import annotations

import logging
import time

import httpx

from vectorstep.domain.execution import ExecutionResult, ExecutorCapabilities
from vectorstep.domain.llm_output import LLMOutput
from vectorstep.errors import ExecutorError
from vectorstep.executors.base import StepCall
from vectorstep.executors.http import IDEMPOTENCY_HEADER, idempotency_key, send, target
from vectorstep.spec.executor_config import NotifyConfig
from vectorstep.templating import render_strict, render_value

log = logging.getLogger(__name__)


class NotifyExecutor:
    capabilities = ExecutorCapabilities()

    def __init__(self, client: httpx.AsyncClient) -> None:
        self._client = client

    async def execute(self, call: StepCall) -> ExecutionResult:
        config = call.config
        if not isinstance(config, NotifyConfig):
            raise ExecutorError(f"the notify executor got a {type(config).__name__}")
        url = render_strict(config.url, call.context)
        payload = render_value(config.payload, call.context)
        started = time.monotonic()
        if call.stage == "testing":
            log.info("notify step %s (stage testing): not sent to %s", call.step, target(url))
            output = LLMOutput(
                confidence=1.0,
                summary=f"not sent (stage testing): would {config.method} to {target(url)}",
                next_step_context="",
                sent=False,
                payload=payload,
            )
            return ExecutionResult(output=output, prompt=call.prompt, response_text="", duration_ms=0.0)
        headers = {key: render_strict(value, call.context) for key, value in config.headers.items()}
        headers.setdefault(IDEMPOTENCY_HEADER, idempotency_key(call.run_id, call.step, call.attempt))
        result = await send(
            self._client,
            method=config.method,
            url=url,
            headers=headers,
            timeout_seconds=call.timeout_seconds or config.timeout_seconds,
            json_body=payload,
        )
        if not 200 <= result.status_code < 300:
            raise ExecutorError(f"{config.method} {target(url)} answered {result.status_code}: {result.text[:300]}")
        output = LLMOutput(
            confidence=1.0,
            summary=f"sent: {config.method} {target(url)} answered {result.status_code}",
            next_step_context="",
            sent=True,
            status_code=result.status_code,
            payload=payload,
        )
        return ExecutionResult(
            output=output,
            prompt=call.prompt,
            response_text=result.text,
            duration_ms=round((time.monotonic() - started) * 1000, 3),
        )
