"""One agent turn on the embedded runtime: model, tools, trace and the errors it maps (imports pydantic-ai)."""

from __future__ import annotations

import asyncio

from pydantic_ai.exceptions import AgentRunError, UserError
from pydantic_ai.settings import ModelSettings

from vectorstep.clock import Clock
from vectorstep.errors import AgentRuntimeError, ExecutionDetails
from vectorstep.runtime.loop import run_turn
from vectorstep.runtime.model_calls import ModelCaller, RetryPolicy
from vectorstep.runtime.models import ModelFactory, ModelResolver
from vectorstep.runtime.protocol import AgentReply, AgentRequest, TraceListener
from vectorstep.runtime.tool_policy import ToolPolicy
from vectorstep.runtime.toolbox import Toolbox, ToolHub
from vectorstep.runtime.trace_recorder import TraceRecorder
from vectorstep.spec.agent_files import AgentDefinition
from vectorstep.spec.service import LimitsSpec, ServiceSpec


def model_factory(service: ServiceSpec) -> ModelFactory:
    return ModelFactory(service.providers, request_timeout_seconds=service.limits.request_timeout_seconds)


async def answer(
    agent: AgentDefinition,
    request: AgentRequest,
    on_event: TraceListener | None,
    *,
    hub: ToolHub,
    policy: ToolPolicy,
    limits: LimitsSpec,
    clock: Clock,
    models: ModelResolver,
) -> AgentReply:
    names = [request.model or agent.spec.model, *agent.spec.model_fallbacks]
    candidates = [models(agent, name) for name in dict.fromkeys(names)]
    cap = request.trace_tool_result_max or limits.trace_tool_result_max_chars
    recorder = TraceRecorder(clock, cap, on_event)
    toolbox = Toolbox(
        hub, agent.name, agent.spec.tool_grants(), tool_timeout_seconds=limits.mcp_tool_timeout_seconds, policy=policy
    )
    retry = RetryPolicy(limits.llm_retry_attempts, limits.llm_retry_base_delay_seconds)
    caller = ModelCaller(
        candidates, _model_settings(agent, request.thinking_level), retry, recorder=recorder, clock=clock
    )
    started = clock.monotonic()
    timeout = min(
        (limit for limit in (request.timeout_seconds, limits.max_run_seconds) if limit is not None),
        default=None,
    )
    try:
        async with asyncio.timeout(timeout):
            result = await run_turn(
                caller=caller,
                instructions=agent.instructions,
                message=request.message,
                toolbox=toolbox,
                max_iterations=agent.spec.max_iterations or limits.max_agent_iterations,
                recorder=recorder,
                clock=clock,
            )
    except TimeoutError:
        raise AgentRuntimeError(
            f"agent {agent.name!r} did not answer within {timeout:g}s",
            code="timeout",
            details=_details(recorder, caller.current.name, caller.current.provider, agent.version),
        ) from None
    except AgentRuntimeError as error:
        error.details = _details(recorder, caller.current.name, caller.current.provider, agent.version)
        raise
    except (AgentRunError, UserError) as error:
        raise AgentRuntimeError(
            f"model {caller.current.name!r} failed: {error}",
            code="model_error",
            details=_details(recorder, caller.current.name, caller.current.provider, agent.version),
        ) from error
    return AgentReply(
        text=result.text,
        trace=tuple(recorder.events),
        usage=result.usage,
        model=result.model,
        provider=result.provider,
        agent_version=agent.version,
        duration_ms=round((clock.monotonic() - started) * 1000, 3),
        stop_reason=result.stop_reason,
        truncated=result.truncated,
        full_tool_results=dict(recorder.full_tool_results),
    )


def _model_settings(agent: AgentDefinition, thinking_level: str | None) -> ModelSettings:
    settings = ModelSettings(max_tokens=agent.spec.max_tokens)
    if agent.spec.temperature is not None:
        settings["temperature"] = agent.spec.temperature
    level = thinking_level or agent.spec.thinking_level
    if level is not None:
        settings["thinking"] = False if level == "off" else level  # type: ignore[typeddict-item]
    return settings


def _details(recorder: TraceRecorder, model: str, provider: str, version: str) -> ExecutionDetails:
    return ExecutionDetails(
        trace=tuple(recorder.events),
        model=model,
        provider=provider,
        agent_version=version,
        input_tokens=sum(event.input_tokens or 0 for event in recorder.events),
        output_tokens=sum(event.output_tokens or 0 for event in recorder.events),
    )
