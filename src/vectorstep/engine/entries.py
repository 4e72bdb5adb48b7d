"""What the runner needs to know of an entry of `steps:`, and the words it logs about a step."""

from __future__ import annotations

from typing import NamedTuple

from vectorstep.domain.records import StepRecord
from vectorstep.domain.status import StepStatus
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.steps import FanOutItem, ParallelItem, PipelineItem


class Entry(NamedTuple):
    name: str
    kind: str  # the executor, or `parallel` / `fan_out`
    confidence_threshold: float


def entry(item: PipelineItem) -> Entry:
    if isinstance(item, ParallelItem):
        return Entry(item.parallel.name, "parallel", item.parallel.confidence_threshold)
    if isinstance(item, FanOutItem):
        return Entry(item.fan_out.name, "fan_out", item.fan_out.confidence_threshold)
    return Entry(item.name, item.executor, item.confidence_threshold)


def why(record: StepRecord, threshold: float) -> str:
    """Why a step ended the run, in one line."""
    if record.status is StepStatus.STOPPED:
        reason = (record.output or {}).get("proceed_reason")
        return f"step {record.name} said not to proceed" + (f": {reason}" if reason else "")
    if record.combined_trust is None:
        return f"step {record.name} {record.status.value}" + (f": {record.error}" if record.error else "")
    checks = (record.trust_report or {}).get("deterministic_checks") or []
    # A check nobody was asked (another one had already failed) is not a reason of its own.
    failed = [check["name"] for check in checks if not check["passed"] and not check["detail"].startswith("not asked")]
    failed_text = f" (check {', '.join(failed)} failed)" if failed else ""
    return (
        f"step {record.name} {record.status.value}: combined_trust {record.combined_trust:g} "
        f"is below its confidence_threshold {threshold:g}{failed_text}"
    )


def step_summary(record: StepRecord) -> str:
    parts = [f"step {record.name} {record.status.value}"]
    if record.confidence is not None and record.combined_trust is not None:
        parts.append(f"S={record.confidence:g} combined_trust={record.combined_trust:g} gate={record.gate_outcome}")
    if record.error:
        parts.append(f"{record.error_kind}: {record.error}")
    return "; ".join(parts)


def step_index(pipeline: PipelineSpec, step: str) -> int:
    """The entry of `steps:` that holds `step` (a step, or a branch `group/branch` of a group)."""
    group = step.split("/", 1)[0]
    return next(index for index, item in enumerate(pipeline.steps) if entry(item).name in (step, group))
