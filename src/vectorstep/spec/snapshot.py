"""The pipeline a run started with, as stored with the run: secrets as their `${VAR}` references.

A run that waits for a person is resumed from this snapshot, possibly by another process after a
restart. Storing the values a `${VAR}` put in would keep secrets in the database in clear; storing
them masked would break the resumed run. So each secret is written as the reference it came from
and read from the environment again on resume.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from vectorstep.domain.secrets import SECRETS
from vectorstep.errors import ConfigError, Problem
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.source import expand_env

# Snapshots written before secrets were kept as references lack this key and are read as they are.
REFERENCES = "x-vectorstep-secrets-as-references"


def spec_snapshot(spec: PipelineSpec) -> dict[str, Any]:
    data: dict[str, Any] = _each_string(spec.model_dump(mode="json", by_alias=True), SECRETS.as_references)
    data[REFERENCES] = True
    return data


def spec_from_snapshot(snapshot: Mapping[str, Any], environ: Mapping[str, str] | None = None) -> PipelineSpec:
    data = dict(snapshot)
    if not data.pop(REFERENCES, False):
        return PipelineSpec.model_validate(data)
    missing: list[str] = []

    def restore(text: str) -> str:
        expanded, unset = expand_env(text, os.environ if environ is None else environ)
        missing.extend(unset)
        return expanded

    restored = _each_string(data, restore)
    if missing:
        names = ", ".join(f"${{{name}}}" for name in dict.fromkeys(missing))
        raise ConfigError([Problem("run snapshot", None, "", f"the run cannot be resumed: {names} is not set")])
    return PipelineSpec.model_validate(restored)


def _each_string(value: Any, change: Any) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: _each_string(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_each_string(item, change) for item in value]
    return value
