"""What promotion readiness reads of one step: its recent testing executions, as plain values, newest first."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

# Where an execution's label comes from (SYSTEM.md §10): a mark on the step, else a failed
# deterministic check (0), else a mark on its run. Marks are people's; a failed check's 0 is not.
LabelSource = Literal["step_mark", "failed_check", "run_mark"]
# How the current agent version is known: from the agent as loaded now, from the newest execution
# with the current prompt (when only the agent's gateway knows it), or not at all.
VersionSource = Literal["loaded", "recorded", "unknown"]


@dataclass(frozen=True)
class Execution:
    """One finished execution of a step in a testing run."""

    run_id: str
    status: str
    finished_at: datetime
    trust: float | None  # combined_trust (else effective_confidence): the figure its gate compared
    predicted: float | None  # effective_confidence (S after the verifier): what calibration bins by
    label: float | None = None  # 1 correct, 0.5 partial, 0 incorrect; None: not labelled
    label_source: LabelSource | None = None
    prompt_hash: str | None = None
    agent_version: str | None = None

    @property
    def marked_by_a_person(self) -> bool:
        return self.label_source in ("step_mark", "run_mark")


@dataclass(frozen=True)
class CurrentConfig:
    """The step's prompt template and agent version as configured now: executions with both are "current"."""

    prompt_hash: str
    agent_version: str | None
    version_source: VersionSource = "loaded"

    def resolved(self, executions: Sequence[Execution]) -> CurrentConfig:
        """With an agent version this process cannot compute (a remote gateway's, OpenClaw's), the one the
        newest execution with the current prompt recorded."""
        if self.version_source != "unknown":
            return self
        for execution in executions:
            if execution.prompt_hash == self.prompt_hash:
                return replace(self, agent_version=execution.agent_version, version_source="recorded")
        return self

    def matches(self, execution: Execution) -> bool:
        if self.version_source == "unknown":
            return False  # no execution with this prompt: none can be current
        return execution.prompt_hash == self.prompt_hash and execution.agent_version == self.agent_version
