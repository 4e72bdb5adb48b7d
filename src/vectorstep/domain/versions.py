"""Version history (docs/service.md#version-history): a step's prompt templates and an agent's versions,
each with its text, when it was seen, which steps and runs used it and how well calibrated it was.

Pure: finding a version by a prefix of its hash, the unified diff of two versions' texts, and each
version's calibration summary — measured by `calibration_report.bucket_report`, never worked out here.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from vectorstep.domain.calibration import Estimator
from vectorstep.domain.calibration_report import LabelledStep, bucket_report
from vectorstep.errors import NotFoundError, PayloadError

Kind = Literal["prompt", "agent"]
NOT_RECORDED = "text not recorded (this version ran before VectorStep kept version texts)"
KIND_NAMES: dict[str, str] = {"prompt": "prompt template", "agent": "agent version"}


@dataclass(frozen=True)
class VersionCalibration:
    """A version's marked production history, pooled over its buckets (models, the other half of the key)."""

    n: int  # labelled steps
    accuracy: float  # the mean label
    accuracy_low: float  # its Wilson interval
    accuracy_high: float
    predicted: float  # the mean predicted trust (after the verifier)
    validated_bins: int
    bins: int
    ece: float | None

    def as_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class StepUse:
    """A step that ran the version, and how many runs of it did (of the teams in view)."""

    pipeline: str
    step: str
    runs: int

    def as_json(self) -> dict[str, Any]:
        return {"pipeline": self.pipeline, "step": self.step, "runs": self.runs}


@dataclass(frozen=True)
class RunUse:
    run_id: str
    pipeline: str
    step: str
    status: str
    stage: str
    started_at: datetime
    combined_trust: float | None

    def as_json(self) -> dict[str, Any]:
        return {**self.__dict__, "started_at": self.started_at.isoformat()}


@dataclass(frozen=True)
class Version:
    kind: Kind
    hash: str
    subject: str  # `pipeline/step` for a prompt template, the agent's name for an agent version
    text: str | None  # None: it ran before texts were kept
    first_seen: datetime
    last_seen: datetime
    runs: int
    steps: tuple[StepUse, ...] = ()
    recent_runs: tuple[RunUse, ...] = ()
    calibration: VersionCalibration | None = None  # None: no marked production history

    @property
    def short(self) -> str:
        return self.hash[:12]

    def as_json(self, *, with_text: bool = True) -> dict[str, Any]:
        found = {
            "kind": self.kind,
            "hash": self.hash,
            "subject": self.subject,
            "text_recorded": self.text is not None,
            "first_seen": self.first_seen.isoformat(),
            "last_seen": self.last_seen.isoformat(),
            "runs": self.runs,
            "steps": [use.as_json() for use in self.steps],
            "recent_runs": [run.as_json() for run in self.recent_runs],
            "calibration": self.calibration.as_json() if self.calibration is not None else None,
        }
        if with_text:
            found["text"] = self.text
        return found


@dataclass(frozen=True)
class StepVersions:
    """A step's history: its prompt templates, and the versions of the agents it ran with."""

    pipeline: str
    step: str
    prompts: tuple[Version, ...]
    agents: tuple[Version, ...]

    @property
    def subject(self) -> str:
        return f"{self.pipeline}/{self.step}"

    def as_json(self) -> dict[str, Any]:
        return {
            "pipeline": self.pipeline,
            "step": self.step,
            "prompt_versions": [version.as_json() for version in self.prompts],
            "agent_versions": [version.as_json() for version in self.agents],
        }


def version_calibration(
    labelled: Sequence[LabelledStep], *, bin_width: float, n_min: int, estimator: Estimator, confidence: float
) -> VersionCalibration | None:
    """The summary of a version's labelled steps: overall accuracy and prediction (one bin of width 1),
    and how many bins of the configured width hold enough marks to be validated."""
    if not labelled:
        return None
    measured = bucket_report(labelled, bin_width=bin_width, n_min=n_min, estimator=estimator, confidence=confidence)
    (whole,) = bucket_report(labelled, bin_width=1.0, n_min=n_min, estimator=estimator, confidence=confidence).bins
    return VersionCalibration(
        n=measured.n,
        accuracy=whole.accuracy,
        accuracy_low=whole.accuracy_low,
        accuracy_high=whole.accuracy_high,
        predicted=whole.predicted,
        validated_bins=sum(1 for row in measured.bins if row.validated),
        bins=len(measured.bins),
        ece=measured.ece.value,
    )


def find_version(given: str, versions: Sequence[Version], subject: str) -> Version:
    """The version whose hash starts with `given` (as lists show it, or any unique prefix).

    Raises NotFoundError (no such version, with the closest ones) or PayloadError (several match).
    """
    wanted = given.strip().lower()
    if not wanted:
        raise PayloadError("a version is a hash or a prefix of one; got nothing")
    found = [version for version in versions if version.hash.lower().startswith(wanted)]
    if len(found) == 1:
        return found[0]
    if found:
        listed = ", ".join(f"{version.short} ({KIND_NAMES[version.kind]})" for version in found[:10])
        raise PayloadError(f"{given!r} matches {len(found)} versions of {subject}: {listed}; give more of the hash")
    close = difflib.get_close_matches(wanted, [version.short for version in versions], n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    known = ", ".join(version.short for version in versions[:20]) or "none recorded yet"
    raise NotFoundError(f"no version {given!r} of {subject}{hint}; its versions: {known}")


@dataclass(frozen=True)
class VersionDiff:
    a: Version
    b: Version
    diff: str | None  # the unified diff; "" when the texts are the same; None when a text is missing
    reason: str | None = None  # why there is no diff

    def as_json(self) -> dict[str, Any]:
        return {
            "a": self.a.as_json(with_text=False),
            "b": self.b.as_json(with_text=False),
            "diff": self.diff,
            "reason": self.reason,
        }

    def lines(self) -> list[tuple[str, str]]:
        """(kind, line) for a page: kind is `add`, `remove`, `hunk`, `file` or `same`."""
        return [(_line_kind(line), line) for line in (self.diff or "").splitlines()]


def diff_versions(a: Version, b: Version) -> VersionDiff:
    """The unified diff from `a` to `b` (two versions of one kind)."""
    if a.kind != b.kind:
        raise PayloadError(
            f"{a.short} is a {KIND_NAMES[a.kind]} and {b.short} a {KIND_NAMES[b.kind]}: compare two of a kind"
        )
    missing = [version.short for version in (a, b) if version.text is None]
    if a.text is None or b.text is None:
        return VersionDiff(a, b, None, f"{' and '.join(missing)}: {NOT_RECORDED}; there is nothing to compare")
    # Line by line, whatever ends the lines: a final newline alone is no difference worth a hunk.
    lines = difflib.unified_diff(
        a.text.splitlines(),
        b.text.splitlines(),
        fromfile=f"{a.subject} {a.short}",
        tofile=f"{b.subject} {b.short}",
        lineterm="",
    )
    return VersionDiff(a, b, "".join(f"{line}\n" for line in lines))


def _line_kind(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "file"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "add"
    if line.startswith("-"):
        return "remove"
    return "same"
