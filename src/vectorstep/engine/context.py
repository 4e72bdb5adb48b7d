"""The template context of a step (SYSTEM.md §4)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vectorstep.domain.context import NormalisedContext
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.templating import NamedMapping


def template_name(step_name: str) -> str:
    """`first-line-triage` is `steps.first_line_triage` in templates."""
    return step_name.replace("-", "_")


@dataclass
class RunState:
    """What a run has produced so far, as templates see it."""

    run_id: str
    pipeline: PipelineSpec
    stage: str
    context: NormalisedContext
    outputs: dict[str, Mapping[str, Any]] = field(default_factory=dict)

    def step_context(self, step_name: str, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
        normalised = self.context.as_dict()
        scope: dict[str, Any] = {}
        for path in self.pipeline.context_template.include:
            _include(scope, path, normalised)
        scope.update(self.pipeline.vars)
        scope.update(
            {
                "pipeline_run_id": self.run_id,
                "pipeline_name": self.pipeline.name,
                "current_step": step_name,
                "stage": self.stage,
                "_testing": self.stage == "testing",
                "team": self.context.team,
                "context": NamedMapping("context", normalised),
                "labels": NamedMapping("labels", normalised["labels"]),
                "steps": NamedMapping(
                    "steps",
                    {name: NamedMapping(f"steps.{name}", output) for name, output in self.outputs.items()},
                ),
            }
        )
        if extra:
            scope.update(extra)
        return scope

    def record_output(self, step_name: str, output: Mapping[str, Any]) -> None:
        """`steps.first_line_triage` and, as written, `steps['first-line-triage']` / `steps['group/0']`."""
        self.outputs[template_name(step_name)] = output
        self.outputs[step_name] = output


def _include(scope: dict[str, Any], path: str, normalised: Mapping[str, Any]) -> None:
    """Lift `labels.service` to `service` (its leaf) and make `labels` (its head) a top-level name."""
    parts = path.split(".")
    value: Any = normalised
    for part in parts:
        if not isinstance(value, Mapping) or part not in value:
            return  # left undefined: a prompt using it records a warning
        value = value[part]
    scope[parts[-1]] = value
    head = normalised.get(parts[0])
    if len(parts) > 1 and isinstance(head, Mapping):
        scope[parts[0]] = NamedMapping(parts[0], head)
