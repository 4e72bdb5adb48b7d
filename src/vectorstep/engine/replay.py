"""A candidate answering one recorded execution again, through the step's own evaluation (§7).

`rendered` sends the recorded prompt verbatim; `rerender` renders the candidate's (or the step's)
template against the context the recorded run had: its alert and its earlier steps' outputs. A
human check is never asked in a replay (nobody should be paged for a shadow answer): it is left
out, and the sample says so.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.replay import Candidate, CandidateResult, RecordedExecution, ReplayMode
from vectorstep.domain.status import StepStatus
from vectorstep.engine.context import RunState
from vectorstep.engine.step import StepEnvironment, StepEvaluation, StepPlan, evaluate_step
from vectorstep.errors import PayloadError
from vectorstep.spec.executor_config import GatewayConfig, OpenClawConfig
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.steps import TrustedWorkSpec
from vectorstep.spec.trust_blocks import HumanCheckSpec

# The recorded prompt reaches the template as a value, so nothing in it is taken for template syntax.
_RECORDED_PROMPT = "vectorstep_replay_recorded_prompt"


@dataclass(frozen=True)
class ReplayTarget:
    """The step being replayed, as configured now, and what replaces part of it."""

    pipeline: PipelineSpec
    plan: StepPlan
    candidate: Candidate
    mode: ReplayMode


def candidate_work(work: TrustedWorkSpec, candidate: Candidate, mode: ReplayMode) -> TrustedWorkSpec:
    """The step's work with the candidate in place, human checks left out, and the recorded prompt if rendered."""
    changes: dict[str, Any] = {
        "deterministic_checks": [check for check in work.deterministic_checks if not isinstance(check, HumanCheckSpec)]
    }
    config = work.executor_config
    if candidate.kind in ("model", "agent") and isinstance(config, GatewayConfig | OpenClawConfig):
        changes["executor_config"] = config.model_copy(update={candidate.kind: candidate.value})
    if candidate.kind == "prompt":
        changes["prompt_template"] = candidate.value
    if mode == "rendered":
        changes["prompt_template"] = "{{ " + _RECORDED_PROMPT + " }}"
    return work.model_copy(update=changes)


def left_out_checks(work: TrustedWorkSpec) -> list[str]:
    return [check.name for check in work.deterministic_checks if isinstance(check, HumanCheckSpec)]


def sample_context(target: ReplayTarget, sample: RecordedExecution, run_id: str) -> dict[str, Any]:
    """The template context the recorded run's step had (with the replay's run id and stage)."""
    try:
        context = NormalisedContext.from_dict(sample.context)
    except (KeyError, TypeError, ValueError) as error:
        raise PayloadError(f"the recorded run's context cannot be read back: {error}") from None
    state = RunState(run_id, target.pipeline, "testing", context)
    for name, output in sample.outputs.items():
        state.record_output(name, output)
    scope = state.step_context(target.plan.name)
    if target.mode == "rendered":
        scope[_RECORDED_PROMPT] = sample.prompt or ""
    return scope


def unreplayable(target: ReplayTarget, sample: RecordedExecution) -> str | None:
    """Why this sample cannot be answered again, if it cannot."""
    if target.mode == "rendered" and not sample.prompt:
        return "the recorded execution has no prompt (its prompt was not stored)"
    if target.mode == "rerender" and not sample.context:
        return "the recorded run has no stored context to render the template against"
    return None


async def replay_sample(
    target: ReplayTarget, sample: RecordedExecution, plan: StepPlan, env: StepEnvironment, *, recorded_as: str
) -> tuple[CandidateResult, StepEvaluation | None]:
    """The candidate's answer to one sample. `plan` keeps the step's name, which its checks' templates
    use (`steps.<name>`); the replay run records the answer as `recorded_as`."""
    why = unreplayable(target, sample)
    if why is None:
        try:
            context = sample_context(target, sample, env.run_id)
        except PayloadError as error:
            why = str(error)
    if why is not None:
        return CandidateResult(status="unreplayable", error=why, step_name=recorded_as), None
    evaluation = await evaluate_step(plan, context, env)
    record = evaluation.record
    answered = record.output is not None and record.status is not StepStatus.FAILED
    result = CandidateResult(
        status=record.status.value,
        output=record.output if answered else None,
        self_reported=record.confidence,
        grounding=record.grounding_score,
        combined_trust=record.combined_trust,
        deterministic_passed=record.deterministic_passed,
        cost=record.cost,
        duration_ms=record.duration_ms,
        error=record.error,
        step_name=recorded_as,
    )
    evaluation.record = replace(record, name=recorded_as)
    return result, evaluation
