"""Fakes we and our users test pipelines with: a fake clock, payload factories, a project on disk."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML


class FakeClock:
    """Time that moves only when slept through or advanced: retries and backoff without waiting."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
        self._monotonic = 0.0
        self.sleeps: list[float] = []

    def now(self) -> datetime:
        return self._now

    def monotonic(self) -> float:
        return self._monotonic

    def advance(self, seconds: float) -> None:
        self._now += timedelta(seconds=seconds)
        self._monotonic += seconds

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(seconds)
        await asyncio.sleep(0)


def alertmanager_payload(
    *,
    service: str = "checkout",
    severity: str = "critical",
    alertname: str = "HighErrorRate",
    summary: str = "5xx rate above 2% on checkout",
    status: str = "firing",
    fingerprint: str = "a1b2c3d4e5f60718",
    extra_labels: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """An Alertmanager webhook body with one alert."""
    labels = {"alertname": alertname, "service": service, "severity": severity, **(extra_labels or {})}
    return {
        "version": "4",
        "groupKey": f'{{}}:{{alertname="{alertname}"}}',
        "status": status,
        "receiver": "vectorstep",
        "groupLabels": {"alertname": alertname},
        "commonLabels": labels,
        "commonAnnotations": {"summary": summary},
        "externalURL": "http://alertmanager.example:9093",
        "alerts": [
            {
                "status": status,
                "labels": labels,
                "annotations": {"summary": summary},
                "startsAt": "2026-01-01T11:58:00Z",
                "endsAt": "0001-01-01T00:00:00Z",
                "generatorURL": "http://prometheus.example:9090/graph",
                "fingerprint": fingerprint,
            }
        ],
    }


def generic_payload(
    *, pipeline: str | None = None, event: str = "manual", summary: str = "", data: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    payload: dict[str, Any] = {"event": event, "summary": summary, "data": dict(data or {})}
    if pipeline is not None:
        payload["pipeline"] = pipeline
    return payload


class ProjectDir:
    """Writes a VectorStep project (vectorstep.yaml, pipelines, steps, agents) into a folder."""

    def __init__(self, root: Path) -> None:
        self.root = root
        for folder in ("pipelines", "steps", "agents"):
            (root / folder).mkdir(parents=True, exist_ok=True)

    @property
    def config(self) -> Path:
        return self.root / "vectorstep.yaml"

    def settings(self, data: Mapping[str, Any]) -> Path:
        return self._yaml(self.config, data)

    def pipeline(self, name: str, data: Mapping[str, Any] | str) -> Path:
        return self._yaml(self.root / "pipelines" / f"{name}.yaml", data)

    def library_step(self, name: str, data: Mapping[str, Any] | str) -> Path:
        return self._yaml(self.root / "steps" / f"{name}.yaml", data)

    def agent(self, name: str, data: Mapping[str, Any] | str, instructions: str = "") -> Path:
        folder = self.root / "agents" / name
        folder.mkdir(parents=True, exist_ok=True)
        if instructions:
            (folder / "instructions.md").write_text(instructions, encoding="utf-8")
        return self._yaml(folder / "agent.yaml", data)

    def scripted_agent(self, name: str, *turns: Mapping[str, Any], tools: list[Any] | None = None) -> Path:
        data: dict[str, Any] = {"model": "scripted", "script": list(turns)}
        if tools:
            data["tools"] = tools
        return self.agent(name, data)

    def payload(self, name: str, data: Any) -> Path:
        path = self.root / f"{name}.json"
        path.write_text(json.dumps(data, indent=2), encoding="utf-8")
        return path

    @staticmethod
    def _yaml(path: Path, data: Mapping[str, Any] | str) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            path.write_text(data, encoding="utf-8")
        else:
            with path.open("w", encoding="utf-8") as handle:
                YAML(typ="safe", pure=True).dump(json.loads(json.dumps(data)), handle)
        return path


def answer(confidence: float, summary: str = "done", **fields: Any) -> dict[str, Any]:
    """A script turn that answers with an LLMOutput."""
    return {"answer": {"confidence": confidence, "summary": summary, "next_step_context": "", **fields}}
