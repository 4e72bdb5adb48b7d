"""The `webhook` check: call a URL and evaluate `expect` on the response; a non-2xx is not an error."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

import httpx

from vectorstep.carriage import Uncarriable, checked_headers, checked_url
from vectorstep.domain.signals import CheckResult
from vectorstep.errors import TemplateError
from vectorstep.executors.http import IDEMPOTENCY_HEADER, target
from vectorstep.spec.trust_blocks import WebhookCheckSpec
from vectorstep.telemetry import inject
from vectorstep.templating import evaluate, render_strict, render_value

BODY_CAP_CHARS = 64 * 1024


async def run_webhook_check(
    spec: WebhookCheckSpec, context: Mapping[str, Any], client: httpx.AsyncClient, idempotency: str | None = None
) -> CheckResult:
    """`idempotency`: sent as `Idempotency-Key` unless the check sets that header itself."""
    started = time.monotonic()

    def result(passed: bool, detail: str) -> CheckResult:
        return CheckResult(spec.name, "webhook", passed, detail, round((time.monotonic() - started) * 1000, 3))

    response = await _call(spec, context, client, idempotency)
    if isinstance(response, str):
        return result(False, response)
    text = response.text[:BODY_CAP_CHARS]
    try:
        body: Any = json.loads(text) if text else None
    except ValueError:
        body = text
    scope = {
        **context,
        "response": {"status_code": response.status_code, "body": body, "headers": dict(response.headers)},
    }
    try:
        held = bool(evaluate(spec.expect, scope))
    except TemplateError as error:
        return result(False, f"expect cannot be evaluated: {error} (status {response.status_code})")
    return result(held, f"`{spec.expect}` {'held' if held else 'did not hold'}: status {response.status_code}")


async def _call(
    spec: WebhookCheckSpec, context: Mapping[str, Any], client: httpx.AsyncClient, idempotency: str | None
) -> httpx.Response | str:
    """The response, or why there is none (a value the request cannot carry fails the check, closed)."""
    try:
        url = render_strict(spec.url, context)
        headers = {key: render_strict(value, context) for key, value in spec.headers.items()}
        if idempotency is not None:
            headers.setdefault(IDEMPOTENCY_HEADER, idempotency)
        inject(headers)  # the step's trace context, when tracing is on
        payload = render_value(spec.payload, context)
    except TemplateError as error:
        return f"request cannot be rendered: {error}"
    try:
        return await client.request(
            spec.method, checked_url(url), headers=checked_headers(headers), json=payload, timeout=spec.timeout_seconds
        )
    except Uncarriable as refused:
        return f"request cannot be sent: {refused}"
    except UnicodeError:
        return f"{spec.method} {target(url)} cannot be sent: the body holds a lone surrogate"
    except httpx.TimeoutException:
        return f"{spec.method} {target(url)} timed out after {spec.timeout_seconds:g}s"
    except httpx.HTTPError as error:
        return f"{spec.method} {target(url)} failed: {type(error).__name__}: {error}"
