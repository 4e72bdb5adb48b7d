"""Replay a step's candidate on its marked history (`vectorstep replay`, the API and the UI share this).

The batch is stored as one `testing` run with `source: replay` that never notifies anyone: a step
per sample (`sample-01`, ...) holding the candidate's answer and trust, and a `replay_report` log
entry holding the report. It is written in one transaction once every sample is answered.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.records import LogEntry, RunRecord, StepRecord
from vectorstep.domain.replay import (
    Candidate,
    CandidateResult,
    RecordedExecution,
    ReplayMode,
    ReplayReport,
    Sample,
    replay_report,
    report_json,
)
from vectorstep.domain.status import RunStatus
from vectorstep.engine.primary import prompt_hash
from vectorstep.engine.replay import ReplayTarget, candidate_work, left_out_checks, replay_sample
from vectorstep.engine.services import Engine
from vectorstep.engine.step import StepEnvironment, StepPlan
from vectorstep.errors import NotFoundError, RequestRefused
from vectorstep.spec.base import did_you_mean
from vectorstep.spec.executor_config import GatewayConfig, OpenClawConfig
from vectorstep.spec.model_names import model_problem
from vectorstep.spec.project import Project
from vectorstep.spec.steps import FanOutItem, ParallelItem
from vectorstep.store.replay import REPLAY_SOURCE, REPORT_EVENT, CurrentConfig, MarkedHistory, ReplayRepository

SOURCE = REPLAY_SOURCE
AGENT_EXECUTORS = ("gateway", "openclaw")


@dataclass(frozen=True)
class ReplayRequest:
    pipeline: str
    step: str
    candidate: Candidate
    mode: ReplayMode | None = None  # None: `rerender` for a candidate prompt, else `rendered`
    k: int = 20


@dataclass(frozen=True)
class PreparedReplay:
    target: ReplayTarget
    history: MarkedHistory
    team: str | None


@dataclass(frozen=True)
class ReplayOutcome:
    run_id: str
    report: ReplayReport
    document: dict[str, Any]  # what `--json`, the API and the run page show


def new_replay_id() -> str:
    return f"replay-{uuid.uuid4().hex[:20]}"


def candidate_of(
    model: str | None, agent: str | None, prompt: str | None, *, prompt_label: str = "the candidate prompt"
) -> Candidate:
    """Exactly one of a model, an agent or a prompt template's text."""
    given = [
        name
        for name, value in (("a model", model), ("an agent", agent), ("a prompt", prompt))
        if value is not None and value != ""
    ]
    if len(given) != 1:
        got = f" (got {' and '.join(given)})" if given else ""
        raise RequestRefused(f"give exactly one candidate: a model, an agent or a prompt{got}")
    if model:
        return Candidate("model", model, model)
    if agent:
        return Candidate("agent", agent, agent)
    assert prompt is not None
    if not prompt.strip():
        raise RequestRefused(f"{prompt_label} is empty")
    return Candidate("prompt", prompt, prompt_label)


def split_address(address: str) -> tuple[str, str]:
    """`incident/investigate` (or `incident/checks/db` for a branch) → (pipeline, step)."""
    pipeline, slash, step = address.partition("/")
    if not slash or not pipeline or not step:
        raise RequestRefused(f"expected <pipeline>/<step>, got {address!r}")
    return pipeline, step


def step_plans(project: Project, pipeline: str) -> dict[str, StepPlan]:
    """The pipeline's sequential steps and branches by address (a fan-out's items are not replayed)."""
    loaded = project.pipelines.get(pipeline)
    if loaded is None:
        raise NotFoundError(f"no pipeline {pipeline!r}{did_you_mean(pipeline, sorted(project.pipelines))}")
    plans: dict[str, StepPlan] = {}
    for index, item in enumerate(loaded.spec.steps):
        if isinstance(item, ParallelItem):
            group = item.parallel
            for branch in group.steps:
                name = f"{group.name}/{branch.name}"
                plans[name] = StepPlan.of_branch(
                    name, index, branch, (group.confidence_threshold, group.on_low_confidence)
                )
        elif not isinstance(item, FanOutItem):
            plans[item.name] = StepPlan.of_step(item, index)
    return plans


def replayable_steps(project: Project, pipeline: str) -> list[str]:
    return [address for address, plan in step_plans(project, pipeline).items() if plan.work.executor in AGENT_EXECUTORS]


def _plan(project: Project, pipeline: str, step: str) -> StepPlan:
    plans = step_plans(project, pipeline)
    plan = plans.get(step)
    if plan is None:
        raise NotFoundError(
            f"pipeline {pipeline!r} has no step {step!r} that can be replayed{did_you_mean(step, sorted(plans))}"
            f" (steps: {', '.join(plans) or 'none'}; a fan-out's items are not replayed)"
        )
    if plan.work.executor not in AGENT_EXECUTORS:
        raise RequestRefused(f"step {step!r} runs `executor: {plan.work.executor}`: only agent steps are replayed")
    return plan


def _agent_of(plan: StepPlan) -> str:
    config = plan.work.executor_config
    assert isinstance(config, GatewayConfig | OpenClawConfig)
    return config.agent


def _check_candidate(project: Project, plan: StepPlan, candidate: Candidate) -> None:
    """Refuse what cannot or may not be replayed, saying why."""
    settings = project.settings.spec
    agent = candidate.value if candidate.kind == "agent" else _agent_of(plan)
    embedded = settings.gateway.mode == "embedded" and plan.work.executor == "gateway"
    if candidate.kind == "agent" and embedded and agent not in project.agents:
        raise NotFoundError(f"no agent {agent!r}{did_you_mean(agent, sorted(project.agents))}")
    if agent not in settings.replay.safe_agents:
        raise RequestRefused(
            f"agent {agent!r} is not in `replay.safe_agents` in vectorstep.yaml: replaying it runs its tools "
            "again, so only agents whose tools have no side effects may be replayed"
        )
    if candidate.kind == "model":
        problem = model_problem(candidate.value, settings.providers)
        if problem is not None:
            known = sorted({m for a in project.agents.values() for m in (a.spec.model, *a.spec.model_fallbacks)})
            raise RequestRefused(problem + did_you_mean(candidate.value, known))


def _mode(request: ReplayRequest) -> ReplayMode:
    if request.mode is None:
        return "rerender" if request.candidate.kind == "prompt" else "rendered"
    if request.mode == "rendered" and request.candidate.kind == "prompt":
        raise RequestRefused(
            "a candidate prompt needs `--mode rerender`: `rendered` sends the recorded prompt verbatim"
        )
    return request.mode


def _current(project: Project, pipeline: str, plan: StepPlan) -> CurrentConfig:
    agent = _agent_of(plan)
    definition = project.agents.get(agent) if plan.work.executor == "gateway" else None
    return CurrentConfig(
        pipeline=pipeline,
        step=plan.name,
        executor=plan.work.executor,
        agent=agent,
        prompt_hash=prompt_hash(plan.work.prompt_template),
        agent_version=definition.version if definition is not None else None,
    )


def _no_history(request: ReplayRequest, config: CurrentConfig, history: MarkedHistory) -> RequestRefused:
    where = f"{request.pipeline}/{request.step}"
    current = f"its current prompt ({config.prompt_hash[:8]}) and agent version ({config.agent_version or 'any'})"
    others = (
        f"; {history.marked} marked production execution(s) exist under earlier prompts or agent versions"
        if history.marked
        else ""
    )
    return RequestRefused(
        f"{where} has no marked production executions with {current}{others}. Replay compares a candidate with "
        f"marked history: mark runs with `vectorstep mark RUN/{request.step} correct|partial|incorrect` or on "
        "/ui/marking, then replay again"
    )


async def prepare_replay(project: Project, store: ReplayRepository, request: ReplayRequest) -> PreparedReplay:
    limit = project.settings.spec.replay.max_samples
    if not 1 <= request.k <= limit:
        raise RequestRefused(f"-k must be between 1 and {limit} (replay.max_samples), got {request.k}")
    plan = _plan(project, request.pipeline, request.step)
    _check_candidate(project, plan, request.candidate)
    mode = _mode(request)
    config = _current(project, request.pipeline, plan)
    history = await store.marked_history(config, request.k)
    if not history.samples:
        raise _no_history(request, config, history)
    pipeline = project.pipelines[request.pipeline].spec
    target = ReplayTarget(pipeline=pipeline, plan=plan, candidate=request.candidate, mode=mode)
    return PreparedReplay(target=target, history=history, team=pipeline.team)


async def run_replay(
    prepared: PreparedReplay,
    engine: Engine,
    store: ReplayRepository,
    *,
    concurrency: int,
    on_sample: Callable[[Sample], None] | None = None,
    run_id: str | None = None,
) -> ReplayOutcome:
    """Answer every sample (at most `concurrency` at once), then store the batch and its report."""
    target, clock = prepared.target, engine.clock
    run_id = run_id or new_replay_id()
    started_at = clock.now()
    work = candidate_work(target.plan.work, target.candidate, target.mode)
    log: list[LogEntry] = []

    async def say(level: str, message: str, step: str | None = None) -> None:
        log.append(LogEntry(run_id, clock.now(), level, "step_log", message, step=step))

    gate = asyncio.Semaphore(concurrency)

    async def one(number: int, recorded: RecordedExecution) -> tuple[Sample, StepRecord | None]:
        name = f"sample-{number:02d}"
        plan = replace(target.plan, index=number, work=work, when=None)
        env = StepEnvironment(
            run_id=run_id,
            pipeline=target.pipeline.name,
            stage="testing",
            executors=engine.executors,
            clock=clock,
            pricing=engine.project.settings.spec.pricing,
            log=lambda level, message: say(level, message, name),
            http=engine.http,
            workdir=engine.project.settings.base_dir,
            artifact_limits=engine.artifact_limits,
        )
        async with gate:
            try:
                result, evaluation = await replay_sample(target, recorded, plan, env, recorded_as=name)
            except Exception as error:  # one sample that breaks is that sample's failure, not the batch's
                reason = f"the sample could not be answered: {type(error).__name__}: {error}"
                result, evaluation = CandidateResult(status="failed", error=reason, step_name=name), None
        sample = Sample(recorded, result)
        if on_sample is not None:
            on_sample(sample)
        record = None if evaluation is None else _as_sample_step(evaluation.record, target, recorded.prompt)
        return sample, record

    answered = await asyncio.gather(*(one(n, s) for n, s in enumerate(prepared.history.samples, start=1)))
    samples = [sample for sample, _ in answered]
    report = replay_report(samples, target.plan.confidence_threshold)
    document = _document(prepared, report, run_id) | {"started_at": started_at.isoformat()}
    steps = [record for _, record in answered if record is not None]
    finished_at = clock.now()
    log.insert(0, LogEntry(run_id, started_at, "info", "run_started", _headline(prepared)))
    log.append(LogEntry(run_id, finished_at, "info", REPORT_EVENT, _summary(report), data=document))
    run = RunRecord(
        run_id=run_id,
        pipeline=target.pipeline.name,
        status=RunStatus.COMPLETED,
        stage="testing",
        started_at=started_at,
        finished_at=finished_at,
        source=SOURCE,
        team=prepared.team,
        context=_context(prepared, started_at).as_dict(),
        input_tokens=sum(step.total_input_tokens for step in steps),
        output_tokens=sum(step.total_output_tokens for step in steps),
        cost=_sum_cost(steps),
    )
    await store.save(run, steps, log)
    return ReplayOutcome(run_id, report, document)


def _as_sample_step(record: StepRecord, target: ReplayTarget, recorded_prompt: str | None) -> StepRecord:
    """Rendered: the prompt sent was the recorded one, so the step's own template is what it counts under."""
    if target.mode == "rendered":
        return replace(record, prompt=recorded_prompt, prompt_hash=prompt_hash(target.plan.work.prompt_template))
    return record


def _sum_cost(steps: list[StepRecord]) -> float | None:
    costs = [step.cost for step in steps if step.cost is not None]
    return sum(costs) if costs else None


def _headline(prepared: PreparedReplay) -> str:
    target = prepared.target
    return (
        f"replay of {target.pipeline.name}/{target.plan.name}: candidate {target.candidate.kind} "
        f"{target.candidate.label} on {len(prepared.history.samples)} marked execution(s), mode {target.mode}"
    )


def _summary(report: ReplayReport) -> str:
    accuracy = report.totals["accuracy"]
    if accuracy.candidate is None or accuracy.recorded is None:
        return f"replayed {len(report.samples)} sample(s); no candidate answer could be labelled"
    return (
        f"replayed {len(report.samples)} sample(s): on the {report.labelled} whose candidate answer could be "
        f"labelled, accuracy {accuracy.recorded:.2f} recorded, {accuracy.candidate:.2f} candidate "
        f"({report.failed} failed)"
    )


def _context(prepared: PreparedReplay, now: Any) -> NormalisedContext:
    target = prepared.target
    return NormalisedContext(
        source=SOURCE,
        received_at=now,
        pipeline=target.pipeline.name,
        summary=_headline(prepared),
        team=prepared.team,
        metadata={"replay": {"step": target.plan.name, "candidate": target.candidate.kind, "mode": target.mode}},
    )


def _document(prepared: PreparedReplay, report: ReplayReport, run_id: str) -> dict[str, Any]:
    target, history = prepared.target, prepared.history
    return {
        "run_id": run_id,
        "pipeline": target.pipeline.name,
        "step": target.plan.name,
        "candidate": {"kind": target.candidate.kind, "name": target.candidate.label},
        "mode": target.mode,
        "bucket": {"model": history.model, "provider": history.provider, "marked": history.marked_current},
        "human_checks_left_out": left_out_checks(target.plan.work),
        **report_json(report),
    }


@dataclass
class Progress:
    pipeline: str
    step: str
    team: str | None
    total: int
    done: int = 0
    error: str | None = None  # the batch itself failed (its samples' failures are in the report)


class ReplayDesk:
    """A service's replays in progress: started in the background, stored when every sample is answered."""

    def __init__(self, project: Callable[[], Project], engine: Callable[[], Engine], store: ReplayRepository):
        self._project, self._engine, self.store = project, engine, store
        self.running: dict[str, Progress] = {}
        self._tasks: set[asyncio.Task[ReplayOutcome | None]] = set()

    async def prepare(self, request: ReplayRequest) -> PreparedReplay:
        return await prepare_replay(self._project(), self.store, request)

    def start(self, prepared: PreparedReplay) -> tuple[str, asyncio.Task[ReplayOutcome | None]]:
        run_id = new_replay_id()
        target = prepared.target
        progress = Progress(target.pipeline.name, target.plan.name, prepared.team, len(prepared.history.samples))
        self.running[run_id] = progress

        def answered(_: Sample) -> None:
            progress.done += 1

        async def work() -> ReplayOutcome | None:
            try:
                concurrency = self._project().settings.spec.replay.max_concurrency
                return await run_replay(
                    prepared, self._engine(), self.store, concurrency=concurrency, on_sample=answered, run_id=run_id
                )
            except Exception as error:  # a batch that breaks says so on its progress, not in a log only
                progress.error = f"the replay stopped: {type(error).__name__}: {error}"
                return None
            finally:
                if progress.error is None:
                    self.running.pop(run_id, None)

        task = asyncio.create_task(work(), name=f"replay {run_id}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return run_id, task

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
