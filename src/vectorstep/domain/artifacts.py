"""An answer's `artifacts: {name: text}` (SYSTEM.md §5.1), kept apart from the step's output.

Pure: it reads what the agent wrote and returns what to store, the references that take the texts'
place in the step's output (what later steps, the record and the UI carry), and a warning for each
artifact it could not keep as written. An agent's answer is hostile input: a name that is not a
safe file name, a value that is not text, text holding NUL, one artifact too many — each is left
out with a warning; an artifact over the size limit is kept truncated, with a line saying so. None
of it ever fails the step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# A name is a file name on every system and a single URL segment: no separators, no leading dot.
SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
NAME_RULE = "1–100 letters, digits, '.', '_' or '-', starting with a letter or digit"
SHOWN_NAME_CHARS = 60  # of a rejected name, in its warning: a hostile name may be megabytes long
DEFAULT_MAX_BYTES = 1_048_576
DEFAULT_MAX_PER_STEP = 20


@dataclass(frozen=True)
class ArtifactLimits:
    max_bytes: int = DEFAULT_MAX_BYTES  # of one artifact, as UTF-8; beyond it, the text is kept truncated
    max_per_step: int = DEFAULT_MAX_PER_STEP  # beyond it, artifacts are left out


@dataclass(frozen=True)
class Artifact:
    name: str
    content: str  # as stored and served: truncated (with its marker line) when `truncated`
    size: int  # the bytes (UTF-8) of the text the agent wrote
    truncated: bool = False

    def reference(self) -> dict[str, Any]:
        """What takes the text's place in the step's output."""
        return {"artifact": self.name, "size": self.size, "truncated": self.truncated}


@dataclass(frozen=True)
class TakenArtifacts:
    artifacts: tuple[Artifact, ...]
    output: dict[str, Any]  # the step's output with `artifacts` holding references
    warnings: tuple[str, ...]


def take_artifacts(output: Mapping[str, Any], limits: ArtifactLimits) -> TakenArtifacts:
    """Split the artifacts out of a step's output (as `LLMOutput.as_context()` gives it)."""
    given = output.get("artifacts")
    if given is None:
        return TakenArtifacts((), dict(output), ())
    kept: list[Artifact] = []
    warnings: list[str] = []
    if not isinstance(given, Mapping):
        warnings.append(f"artifacts not stored: the answer's `artifacts` is {_kind(given)}, not an object")
        given = {}
    for name, value in given.items():
        problem = _problem(name, value)
        if problem is not None:
            warnings.append(f"artifact {_shown(name)} not stored: {problem}")
        elif len(kept) >= limits.max_per_step:
            warnings.append(
                f"artifact {_shown(name)} not stored: the answer holds more than "
                f"limits.max_artifacts_per_step ({limits.max_per_step}) artifacts"
            )
        else:
            artifact = _within(name, value, limits.max_bytes)
            if artifact.truncated:
                warnings.append(
                    f"artifact {_shown(name)} is {artifact.size:,} bytes, over limits.max_artifact_bytes "
                    f"({limits.max_bytes:,}): stored truncated"
                )
            kept.append(artifact)
    references = {artifact.name: artifact.reference() for artifact in kept}
    return TakenArtifacts(tuple(kept), {**output, "artifacts": references}, tuple(warnings))


def is_safe_name(name: object) -> bool:
    return isinstance(name, str) and SAFE_NAME.fullmatch(name) is not None


def _problem(name: object, value: object) -> str | None:
    if not is_safe_name(name):
        return f"its name is not a safe file name ({NAME_RULE})"
    if not isinstance(value, str):
        return f"its value is {_kind(value)}, not text"
    if "\x00" in value:
        return "its text holds a NUL character (artifacts are text, not binary data)"
    return None


def _within(name: str, text: str, max_bytes: int) -> Artifact:
    encoded = text.encode("utf-8", "backslashreplace")  # a lone surrogate counts as its escape
    if len(encoded) <= max_bytes:
        return Artifact(name, text, len(encoded))
    kept = encoded[:max_bytes].decode("utf-8", "ignore")  # never half a character
    marker = (
        f"\n[… truncated by VectorStep: the artifact was {len(encoded):,} bytes; "
        f"limits.max_artifact_bytes keeps {max_bytes:,}]\n"
    )
    return Artifact(name, kept + marker, len(encoded), truncated=True)


def _shown(name: object) -> str:
    text = str(name)
    return repr(text if len(text) <= SHOWN_NAME_CHARS else text[:SHOWN_NAME_CHARS] + "…")


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def references_of(output: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The stored artifacts a step's recorded output refers to (older records held the texts: none)."""
    found = (output or {}).get("artifacts")
    if not isinstance(found, Mapping):
        return []
    return [
        dict(reference)
        for name, reference in found.items()
        if isinstance(reference, Mapping) and reference.get("artifact") == name and is_safe_name(name)
    ]
