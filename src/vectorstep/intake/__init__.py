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
# What the run row keeps of an event in columns of their own (SYSTEM.md §14): longer is refused, not cut.
MAX_TEAM_CHARS = 100
MAX_FINGERPRINT_CHARS = 190  # the dedup key is `pipeline:fingerprint`
Strategy = Literal["most_severe", "common_labels"]


def normalise(
    source: str, payload: Any, received_at: datetime, *, team: str | None = None, strategy: Strategy = "most_severe"
) -> NormalisedContext:
    """Raises PayloadError (the reason, for a 400) when the payload is not what `source` sends."""
    if source == "alertmanager":
        context = normalise_alertmanager(payload, received_at, strategy=strategy, team=team)
    elif source == "grafana":
        context = normalise_grafana(payload, received_at, team=team)
    elif source == "generic":
        context = normalise_generic(payload, received_at, team=team)
    else:
        raise PayloadError(f"unknown source {source!r}; expected one of: {', '.join(SOURCES)}")
    _within_columns(context)
    return context


def _within_columns(context: NormalisedContext) -> None:
    for name, value, most in (
        ("team", context.team, MAX_TEAM_CHARS),
        ("fingerprint (or idempotency_key)", context.fingerprint, MAX_FINGERPRINT_CHARS),
    ):
        if value is not None and len(value) > most:
            raise PayloadError(f"the event's {name} is {len(value):,} characters; at most {most} are accepted")
