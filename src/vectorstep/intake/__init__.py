"""Turning what arrives (Alertmanager, generic JSON, Grafana) into a NormalisedContext."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from vectorstep.domain.context import NormalisedContext
from vectorstep.errors import PayloadError
from vectorstep.intake.alertmanager import normalise_alertmanager
from vectorstep.intake.generic import normalise_generic
from vectorstep.intake.grafana import normalise_grafana

SOURCES = ("alertmanager", "generic", "grafana")
Strategy = Literal["most_severe", "common_labels"]


def normalise(
    source: str, payload: Any, received_at: datetime, *, team: str | None = None, strategy: Strategy = "most_severe"
) -> NormalisedContext:
    """Raises PayloadError (the reason, for a 400) when the payload is not what `source` sends."""
    if source == "alertmanager":
        return normalise_alertmanager(payload, received_at, strategy=strategy, team=team)
    if source == "grafana":
        return normalise_grafana(payload, received_at, team=team)
    if source == "generic":
        return normalise_generic(payload, received_at, team=team)
    raise PayloadError(f"unknown source {source!r}; expected one of: {', '.join(SOURCES)}")
