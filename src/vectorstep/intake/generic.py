"""The generic JSON payload `{pipeline, event, summary, idempotency_key, data}` → NormalisedContext."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from vectorstep.domain.context import NormalisedContext
from vectorstep.errors import PayloadError

_STRING_FIELDS = ("pipeline", "event", "summary", "idempotency_key", "severity", "team")


def normalise_generic(payload: Any, received_at: datetime, *, team: str | None = None) -> NormalisedContext:
    if not isinstance(payload, dict):
        raise PayloadError("a generic payload is a JSON object like {pipeline, event, summary, idempotency_key, data}")
    for key in _STRING_FIELDS:
        if payload.get(key) is not None and not isinstance(payload[key], str):
            raise PayloadError(f"`{key}` must be a string, got {type(payload[key]).__name__}")
    data = payload.get("data") or {}
    if not isinstance(data, dict):
        raise PayloadError(f"`data` must be an object, got {type(data).__name__}")
    labels = data.get("labels") or {}
    if not isinstance(labels, dict):
        raise PayloadError("`data.labels` must be an object of strings")
    fingerprint = (
        payload.get("idempotency_key")
        or hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()[:16]
    )
    return NormalisedContext(
        source="generic",
        received_at=received_at,
        pipeline=payload.get("pipeline"),
        severity=payload.get("severity") or _optional_str(data.get("severity")),
        labels={str(key): str(value) for key, value in labels.items()},
        summary=payload.get("summary") or "",
        fingerprint=fingerprint,
        team=team or payload.get("team"),
        raw=payload,
        metadata={
            "event": payload.get("event"),
            **{key: value for key, value in data.items() if key != "labels"},
        },
    )


def manual_context(
    received_at: datetime,
    *,
    summary: str = "",
    team: str | None = None,
    pipeline: str | None = None,
    severity: str | None = None,
    labels: Mapping[str, str] | None = None,
    metadata: Mapping[str, Any] | None = None,
) -> NormalisedContext:
    """The context of a run started by hand (CLI, UI or API) rather than by an event."""
    return NormalisedContext(
        source="manual",
        received_at=received_at,
        pipeline=pipeline,
        severity=severity,
        labels=dict(labels or {}),
        summary=summary,
        team=team,
        metadata=dict(metadata or {}),
    )


def _optional_str(value: Any) -> str | None:
    return None if value is None else str(value)
