"""Alertmanager's webhook payload → NormalisedContext: the most severe alert, or the common labels."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from vectorstep.domain.context import NormalisedContext
from vectorstep.errors import PayloadError

SEVERITY_RANK = {
    "critical": 50,
    "page": 50,
    "high": 40,
    "error": 40,
    "major": 40,
    "warning": 30,
    "warn": 30,
    "medium": 30,
    "minor": 20,
    "low": 10,
    "info": 10,
    "none": 0,
}


def normalise_alertmanager(
    payload: Any,
    received_at: datetime,
    *,
    strategy: Literal["most_severe", "common_labels"] = "most_severe",
    team: str | None = None,
) -> NormalisedContext:
    alerts = _alerts(payload)
    chosen = max(enumerate(alerts), key=lambda pair: _rank(pair[1], pair[0]))[1]
    if strategy == "common_labels":
        labels = _string_map(payload.get("commonLabels") or {}, "commonLabels")
        annotations = _string_map(payload.get("commonAnnotations") or {}, "commonAnnotations")
    else:
        labels = _string_map(chosen["labels"], "alerts[].labels")
        annotations = _string_map(chosen.get("annotations") or {}, "alerts[].annotations")
    status = str(chosen.get("status") or payload.get("status") or "firing")
    fingerprint = chosen.get("fingerprint") or _labels_fingerprint(labels)
    return NormalisedContext(
        source="alertmanager",
        received_at=received_at,
        pipeline=labels.get("pipeline"),
        severity=labels.get("severity"),
        labels=labels,
        summary=annotations.get("summary") or annotations.get("description") or labels.get("alertname", ""),
        fingerprint=f"{fingerprint}:{status}",
        team=team or labels.get("team"),
        raw=payload,
        metadata={
            "status": status,
            "receiver": payload.get("receiver"),
            "group_key": payload.get("groupKey"),
            "external_url": payload.get("externalURL"),
            "alert_count": len(alerts),
            "firing_count": sum(1 for alert in alerts if alert.get("status", "firing") == "firing"),
            "annotations": annotations,
            "starts_at": chosen.get("startsAt"),
            "generator_url": chosen.get("generatorURL"),
            "group_labels": payload.get("groupLabels") or {},
        },
    )


def _alerts(payload: Any) -> list[dict[str, Any]]:
    if not isinstance(payload, dict):
        raise PayloadError("an Alertmanager payload is a JSON object with an `alerts` list")
    alerts = payload.get("alerts")
    if not isinstance(alerts, list) or not alerts:
        raise PayloadError("an Alertmanager payload needs a non-empty `alerts` list")
    for index, alert in enumerate(alerts):
        if not isinstance(alert, dict) or not isinstance(alert.get("labels"), dict):
            raise PayloadError(f"alerts[{index}] needs a `labels` mapping")
    return alerts


def _rank(alert: Mapping[str, Any], position: int) -> tuple[int, int, int]:
    firing = 1 if alert.get("status", "firing") == "firing" else 0
    severity = SEVERITY_RANK.get(str(alert["labels"].get("severity", "")).lower(), 5)
    return firing, severity, -position  # ties: the first alert in the payload


def _string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise PayloadError(f"`{where}` must be a mapping of strings")
    return {str(key): "" if item is None else str(item) for key, item in value.items()}


def _labels_fingerprint(labels: Mapping[str, str]) -> str:
    canonical = json.dumps(dict(sorted(labels.items())), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]
