"""Sub-pipeline runs: starting a step's child run, or finding the one an earlier pass of it started.

A child's id follows from its parent, step, loop iteration and attempt, so a parent that continues
after waiting (or after a restart) finds the child it started instead of starting a second one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.records import RunRecord
from vectorstep.errors import ExecutorError, NotFoundError, TemplateError
from vectorstep.executors.base import StepCall
from vectorstep.spec.executor_config import PipelineConfig
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.templating import render_value

_CHILD_IDS = uuid.UUID("6f0c7f7e-5b1e-4d5a-9a51-1c0de0c41d00")
_MERGED = ("labels", "metadata")  # merged key by key; every other field is replaced whole
_REPLACED = ("severity", "summary", "team", "fingerprint", "raw")


class RunLookup(Protocol):
    async def get_run(self, run_id: str, *, with_log: bool = False) -> RunRecord: ...


class StartChild(Protocol):
    async def __call__(
        self, pipeline: PipelineSpec, context: NormalisedContext, *, run_id: str, parent: tuple[str, str]
    ) -> RunRecord: ...


class Children:
    """Implements `executors.pipeline.ChildRuns` over the runner (`start`) and the run store (`runs`)."""

    def __init__(self, pipelines: Callable[[str], PipelineSpec | None], runs: RunLookup | None) -> None:
        self._pipelines = pipelines
        self._runs = runs
        self.start: StartChild | None = None  # the runner's, once it exists

    async def run_child(self, call: StepCall, config: PipelineConfig) -> RunRecord:
        run_id = child_run_id(call)
        if self._runs is not None:
            try:
                return await self._runs.get_run(run_id)
            except NotFoundError:
                pass
        pipeline = self._pipelines(config.pipeline)
        if pipeline is None:
            raise ExecutorError(f"no pipeline {config.pipeline!r} is loaded (executor_config.pipeline)")
        if call.stage == "testing" and pipeline.stage != "testing":
            pipeline = pipeline.model_copy(update={"stage": "testing"})  # a test never acts through its child
        if self.start is None:
            raise ExecutorError("sub-pipelines cannot run here (no runner)")
        context = child_context(call, config)
        return await self.start(pipeline, context, run_id=run_id, parent=(call.run_id, call.step))


def child_run_id(call: StepCall) -> str:
    loop = call.context.get("loop")
    iteration = loop.get("iteration", 1) if isinstance(loop, Mapping) else 1
    return uuid.uuid5(_CHILD_IDS, f"{call.run_id}/{call.step}/{iteration}/{call.attempt}").hex


def child_context(call: StepCall, config: PipelineConfig) -> NormalisedContext:
    """The parent's context with `executor_config.context` rendered over it."""
    parent = NormalisedContext.from_dict(call.context.get("context") or {"received_at": "1970-01-01T00:00:00+00:00"})
    try:
        overrides = render_value(config.context, call.context)
    except TemplateError as error:
        raise ExecutorError(f"executor_config.context: {error}") from None
    changes: dict[str, Any] = {"pipeline": None}
    for key, value in overrides.items():
        if key in _MERGED:
            if not isinstance(value, Mapping):
                raise ExecutorError(f"executor_config.context.{key} must be a mapping, got {type(value).__name__}")
            changes[key] = {**getattr(parent, key), **{str(name): item for name, item in value.items()}}
        elif key in _REPLACED:
            changes[key] = value if key == "raw" or value is None else str(value)
        else:  # any other name: a field of the child's `metadata`, where its templates find it
            changes["metadata"] = {**changes.get("metadata", parent.metadata), key: value}
    if "labels" in changes:
        changes["labels"] = {name: str(item) for name, item in changes["labels"].items()}
    return replace(parent, **changes)
