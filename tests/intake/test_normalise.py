"""Payloads → NormalisedContext: Alertmanager's most severe alert, common labels, generic JSON."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from vectorstep.errors import PayloadError
from vectorstep.intake.alertmanager import normalise_alertmanager
from vectorstep.intake.generic import normalise_generic
from vectorstep.testing import alertmanager_payload

NOW = datetime(2026, 5, 1, 8, 0, tzinfo=UTC)


def alert(name: str, severity: str, status: str = "firing", fingerprint: str = "fp") -> dict[str, object]:
    return {
        "status": status,
        "labels": {"alertname": name, "severity": severity, "service": name.lower()},
        "annotations": {"summary": f"{name} summary"},
        "fingerprint": fingerprint,
    }


def test_the_most_severe_firing_alert_is_the_context() -> None:
    payload = {
        "status": "firing",
        "receiver": "vs",
        "alerts": [
            alert("Warn", "warning", fingerprint="w"),
            alert("Crit", "critical", status="resolved", fingerprint="r"),
            alert("Page", "critical", fingerprint="p"),
            alert("Info", "info", fingerprint="i"),
        ],
    }
    context = normalise_alertmanager(payload, NOW)
    assert context.labels["alertname"] == "Page" and context.severity == "critical"
    assert context.summary == "Page summary" and context.fingerprint == "p:firing"
    assert context.metadata["alert_count"] == 4 and context.metadata["firing_count"] == 3
    assert context.source == "alertmanager" and context.raw == payload


def test_common_labels_strategy_and_label_driven_pipeline_and_team() -> None:
    payload = alertmanager_payload(extra_labels={"pipeline": "disk", "team": "storage"})
    payload["commonLabels"] = {"cluster": "eu-1"}
    common = normalise_alertmanager(payload, NOW, strategy="common_labels")
    assert common.labels == {"cluster": "eu-1"} and common.pipeline is None
    chosen = normalise_alertmanager(payload, NOW)
    assert chosen.pipeline == "disk" and chosen.team == "storage"
    assert normalise_alertmanager(payload, NOW, team="sre").team == "sre"  # the token's team wins


def test_without_a_fingerprint_the_labels_make_one() -> None:
    payload = alertmanager_payload()
    del payload["alerts"][0]["fingerprint"]
    first = normalise_alertmanager(payload, NOW).fingerprint
    payload["alerts"][0]["labels"] = dict(reversed(list(payload["alerts"][0]["labels"].items())))
    assert first == normalise_alertmanager(payload, NOW).fingerprint  # label order does not matter


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ([], "JSON object"),
        ({"alerts": []}, "non-empty `alerts`"),
        ({"alerts": [{"labels": ["x"]}]}, "alerts[0] needs a `labels` mapping"),
        ({"alerts": [{"labels": {}}], "commonLabels": "x"}, None),
    ],
)
def test_malformed_alertmanager_payloads_say_what_is_wrong(payload: object, message: str | None) -> None:
    if message is None:
        normalise_alertmanager(payload, NOW)  # only the chosen alert's labels matter by default
        return
    with pytest.raises(PayloadError, match=message.replace("[", r"\[").replace("]", r"\]")):
        normalise_alertmanager(payload, NOW)


def test_generic_payloads() -> None:
    context = normalise_generic(
        {
            "pipeline": "backup-check",
            "event": "backup_failed",
            "summary": "nightly backup failed",
            "idempotency_key": "2026-05-01",
            "severity": "warning",
            "data": {"labels": {"db": "orders", "shard": 3}, "duration_s": 812},
        },
        NOW,
    )
    assert context.pipeline == "backup-check" and context.fingerprint == "2026-05-01"
    assert context.labels == {"db": "orders", "shard": "3"}
    assert context.metadata == {"event": "backup_failed", "duration_s": 812}
    assert context.severity == "warning" and context.source == "generic"
    other = normalise_generic({"event": "x", "data": {"a": 1}}, NOW)
    assert other.fingerprint == normalise_generic({"event": "x", "data": {"a": 1}}, NOW).fingerprint
    with pytest.raises(PayloadError, match="`data` must be an object"):
        normalise_generic({"event": "x", "data": [1]}, NOW)
    with pytest.raises(PayloadError, match="`summary` must be a string"):
        normalise_generic({"summary": 3}, NOW)
