"""Assembling a working engine from a loaded project: runtime, executors, runner, observers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType

import httpx

from vectorstep.approvals.desk import ApprovalDesk, ApprovalStore, Interaction
from vectorstep.clock import Clock, SystemClock
from vectorstep.domain.artifacts import ArtifactLimits
from vectorstep.domain.calibration import CalibrationHistory
from vectorstep.domain.context import NormalisedContext
from vectorstep.domain.events import Observers, RunObserver
from vectorstep.domain.execution import ExecutorCapabilities
from vectorstep.domain.records import ResumePoint, RunRecord
from vectorstep.engine.children import Children, RunLookup
from vectorstep.engine.outbound import Outbound
from vectorstep.engine.runner import Runner, RunTraceListener
from vectorstep.errors import ConfigError
from vectorstep.executors.base import Executor
from vectorstep.executors.gateway import GatewayExecutor
from vectorstep.executors.human import HumanExecutor
from vectorstep.executors.notify import NotifyExecutor
from vectorstep.executors.pipeline import PipelineExecutor
from vectorstep.executors.registry import ExecutorRegistry, LazyExecutor
from vectorstep.executors.webhook import WebhookExecutor
from vectorstep.runtime.embedded import EmbeddedRuntime
from vectorstep.runtime.protocol import AgentRuntime
from vectorstep.spec.pipeline import PipelineSpec
from vectorstep.spec.project import Project
from vectorstep.spec.service import OpenClawSpec

# What each executor this version runs can report; grounding and a critic verifier need a trace.
EXECUTOR_CAPABILITIES: Mapping[str, ExecutorCapabilities] = {
    "gateway": GatewayExecutor.capabilities,
    "human": HumanExecutor.capabilities,
    "notify": NotifyExecutor.capabilities,
    "openclaw": ExecutorCapabilities(),  # no trace: the gateway runs the agent
    "pipeline": PipelineExecutor.capabilities,
    "webhook": WebhookExecutor.capabilities,
}


class Engine:
    """One per process (or per CLI command): owns the HTTP client, the agent runtime and its tool servers."""

    def __init__(
        self,
        project: Project,
        *,
        observers: Sequence[RunObserver] = (),
        clock: Clock | None = None,
        runtime: AgentRuntime | None = None,
        approvals: ApprovalStore | None = None,
        interaction: Interaction | None = None,
        park: bool = False,
        calibration: CalibrationHistory | None = None,
        runs: RunLookup | None = None,
        cancelled_runs_stay_running: bool = False,
    ) -> None:
        """`runs`: where sub-pipeline runs are looked up, so a parent that continues finds its child.
        `cancelled_runs_stay_running`: see `Runner`."""
        self.project = project
        self.clock = clock or SystemClock()
        self.http = httpx.AsyncClient(follow_redirects=False)
        self.runtime = runtime or _runtime(project, self.clock)
        service = project.settings.spec
        children = Children(lambda name: project.pipelines[name].spec if name in project.pipelines else None, runs)
        self.executors = ExecutorRegistry(
            {
                "gateway": GatewayExecutor(self.runtime),
                "human": HumanExecutor(),
                "webhook": WebhookExecutor(self.http),
                "notify": NotifyExecutor(self.http),
                "openclaw": LazyExecutor(
                    EXECUTOR_CAPABILITIES["openclaw"],
                    lambda: _openclaw(service.executors.openclaw, project.settings.base_dir),
                ),
                "pipeline": PipelineExecutor(children),
            }
        )
        self.desk = (
            ApprovalDesk(approvals, service.human_approval, self.http, self.clock, public_url=service.server.public_url)
            if approvals is not None
            else None
        )
        # A step's artifacts are kept within these, by the runner and by a replay alike.
        self.artifact_limits = ArtifactLimits(service.limits.max_artifact_bytes, service.limits.max_artifacts_per_step)
        self.runner = Runner(
            executors=self.executors,
            clock=self.clock,
            pricing=service.pricing,
            observers=Observers(observers),
            http=self.http,
            outbound=Outbound(service.notifications, self.http),
            desk=self.desk,
            interaction=interaction,
            park=park,
            workdir=project.settings.base_dir,
            calibration=calibration,
            calibration_settings=service.calibration,
            cancelled_runs_stay_running=cancelled_runs_stay_running,
            artifact_limits=self.artifact_limits,
            agents=project.agents,
        )
        children.start = self.runner.run

    async def run(
        self, pipeline: PipelineSpec, context: NormalisedContext, *, on_trace: RunTraceListener | None = None
    ) -> RunRecord:
        return await self.runner.run(pipeline, context, on_trace=on_trace)

    async def resume(self, point: ResumePoint, *, on_trace: RunTraceListener | None = None) -> RunRecord:
        return await self.runner.resume(point, on_trace=on_trace)

    async def aclose(self) -> None:
        await self.runtime.aclose()
        await self.http.aclose()

    async def __aenter__(self) -> Engine:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


def _runtime(project: Project, clock: Clock) -> AgentRuntime:
    gateway = project.settings.spec.gateway
    if gateway.mode == "remote":
        if not gateway.url or not gateway.token:
            raise ConfigError([project.settings.problem(("gateway",), "gateway mode 'remote' needs `url` and `token`")])
        from vectorstep.runtime.remote_client import RemoteRuntime  # noqa: PLC0415 - only remote mode needs it

        limits = project.settings.spec.limits
        return RemoteRuntime(gateway.url, gateway.token, max_concurrent_turns=limits.max_concurrent_runs)
    return EmbeddedRuntime(project.agents, project.settings.spec, clock=clock, base_dir=project.settings.base_dir)


def _openclaw(settings: OpenClawSpec, base_dir: Path) -> Executor:
    from vectorstep.executors.openclaw import OpenClawExecutor  # noqa: PLC0415 - see LazyExecutor

    return OpenClawExecutor(settings, base_dir)
