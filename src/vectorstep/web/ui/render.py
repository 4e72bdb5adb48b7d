"""Rendering pages: one autoescaping Jinja2 environment, the filters pages use, and the shared layout data."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from vectorstep.trust.explain import score_text
from vectorstep.web.auth import csrf_token

TEMPLATES = Jinja2Templates(directory=Path(__file__).parent / "templates")
ASSET_VERSION = "5"  # bumped when app.css or app.js changes


def _when(value: datetime | None) -> str:
    return "—" if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def _ago(value: datetime | None) -> str:
    if value is None:
        return "—"
    seconds = (datetime.now(UTC) - value).total_seconds()
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit} ago"
    return f"{max(0, int(seconds))}s ago"


def _took(started: datetime | None, finished: datetime | None) -> str:
    if started is None or finished is None:
        return "—"
    return _ms((finished - started).total_seconds() * 1000)


def _ms(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f} ms" if value < 1000 else f"{value / 1000:.1f} s"


def _cost(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)


TEMPLATES.env.filters.update(when=_when, ago=_ago, took=_took, ms=_ms, cost=_cost, pretty=_pretty, score=score_text)
TEMPLATES.env.globals.update(asset_version=ASSET_VERSION)


def page(request: Request, template: str, status_code: int = 200, **values: Any) -> HTMLResponse:
    principal = getattr(request.state, "principal", None)
    values.setdefault("pending_approvals", getattr(request.state, "pending_approvals", 0))
    context = {"principal": principal, "csrf": csrf_token(request), **values}
    return TEMPLATES.TemplateResponse(request, template, context, status_code=status_code)


def error_page(request: Request, status: int, detail: str) -> HTMLResponse:
    return page(request, "error.html", status_code=status, status=status, detail=detail)
