"""The normalised context of a trigger (SYSTEM.md §12): what every pipeline sees of its input."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

Source = Literal["alertmanager", "generic", "grafana", "manual", "cron"]


@dataclass(frozen=True)
class NormalisedContext:
    source: str
    received_at: datetime
    pipeline: str | None = None
    severity: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    summary: str = ""
    fingerprint: str | None = None
    team: str | None = None
    raw: Any = None
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "pipeline": self.pipeline,
            "severity": self.severity,
            "labels": dict(self.labels),
            "summary": self.summary,
            "fingerprint": self.fingerprint,
            "team": self.team,
            "raw": self.raw,
            "metadata": dict(self.metadata),
            "received_at": self.received_at.isoformat(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NormalisedContext:
        return cls(
            source=str(data.get("source", "manual")),
            received_at=datetime.fromisoformat(str(data["received_at"])),
            pipeline=data.get("pipeline"),
            severity=data.get("severity"),
            labels=dict(data.get("labels") or {}),
            summary=str(data.get("summary") or ""),
            fingerprint=data.get("fingerprint"),
            team=data.get("team"),
            raw=data.get("raw"),
            metadata=dict(data.get("metadata") or {}),
        )
