"""Sending a rendered HTTP request for the webhook and notify executors."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from vectorstep.carriage import Uncarriable, checked_headers, checked_url
from vectorstep.errors import ExecutorError, ExecutorTimeout
from vectorstep.telemetry import inject

RESPONSE_BODY_MAX_CHARS = 20_000


@dataclass(frozen=True)
class HttpResult:
    status_code: int
    body: Any  # JSON when it parses, else text
    text: str
    headers: Mapping[str, str]


IDEMPOTENCY_HEADER = "Idempotency-Key"


def idempotency_key(run_id: str, step: str, attempt: int) -> str:
    """The same for a request sent again for the same run, step and attempt — after a crash and a
    resume, for one — so that a receiver can drop the duplicate."""
    return hashlib.sha256(f"{run_id}:{step}:{attempt}".encode()).hexdigest()[:32]


def target(url: str) -> str:
    """Scheme and host only: webhook URLs often carry secrets in their path or query."""
    try:
        parts = urlsplit(url)
        port = f":{parts.port}" if parts.port else ""
    except ValueError:  # an agent's value made the URL unreadable ("[", a port of letters)
        return "an unreadable URL"
    return f"{parts.scheme}://{parts.hostname or ''}{port}/…"


async def send(
    client: httpx.AsyncClient,
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    timeout_seconds: float,
    json_body: Any = None,
    content: str | None = None,
) -> HttpResult:
    carried = dict(headers)
    inject(carried)  # the step's trace context, when tracing is on (W3C `traceparent`)
    try:
        response = await client.request(
            method,
            checked_url(url),
            headers=checked_headers(carried),
            json=json_body if content is None else None,
            content=content,
            timeout=timeout_seconds,
        )
    except Uncarriable as refused:
        raise ExecutorError(f"{method} request cannot be sent: {refused}") from None
    except UnicodeError:
        raise ExecutorError(f"{method} {target(url)} cannot be sent: the body holds a lone surrogate") from None
    except httpx.TimeoutException:
        raise ExecutorTimeout(f"{method} {target(url)} timed out after {timeout_seconds:g}s") from None
    except httpx.HTTPError as error:
        raise ExecutorError(f"{method} {target(url)} failed: {type(error).__name__}: {error}") from None
    text = response.text[:RESPONSE_BODY_MAX_CHARS]
    try:
        body: Any = json.loads(text) if text else None
    except ValueError:
        body = text
    return HttpResult(status_code=response.status_code, body=body, text=text, headers=dict(response.headers))
