"""Grafana's alerting webhook → NormalisedContext (its payload is Alertmanager-shaped, with extras)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from vectorstep.domain.context import NormalisedContext
from vectorstep.errors import PayloadError
from vectorstep.intake.alertmanager import normalise_alertmanager


def normalise_grafana(payload: Any, received_at: datetime, *, team: str | None = None) -> NormalisedContext:
    if not isinstance(payload, dict):
        raise PayloadError("a Grafana payload is a JSON object with an `alerts` list")
    context = normalise_alertmanager(payload, received_at, team=team)
    alerts = payload.get("alerts") or []
    chosen: dict[str, Any] = next((alert for alert in alerts if alert.get("labels") == dict(context.labels)), {})
    extras = {
        key: value
        for key, value in {
            "org_id": payload.get("orgId"),
            "title": payload.get("title"),
            "state": payload.get("state"),
            "dashboard_url": chosen.get("dashboardURL"),
            "panel_url": chosen.get("panelURL"),
            "silence_url": chosen.get("silenceURL"),
            "values": chosen.get("values"),
        }.items()
        if value is not None
    }
    summary = context.summary or str(payload.get("title") or payload.get("message") or "")
    return NormalisedContext(
        **{**context.__dict__, "source": "grafana", "summary": summary, "metadata": {**context.metadata, **extras}}
    )
