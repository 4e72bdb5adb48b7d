"""`executor: gateway`: run a named agent on the agent runtime and parse its answer."""

from __future__ import annotations

from vectorstep.domain.execution import ExecutionResult, ExecutorCapabilities
from vectorstep.domain.llm_output import parse_llm_output
from vectorstep.errors import AgentRuntimeError, ExecutionDetails, ExecutorError, ExecutorTimeout
from vectorstep.executors.base import StepCall
from vectorstep.runtime.protocol import AgentReply, AgentRequest, AgentRuntime
from vectorstep.spec.executor_config import GatewayConfig


class GatewayExecutor:
    capabilities = ExecutorCapabilities(trace=True, usage=True, version=True)

    def __init__(self, runtime: AgentRuntime) -> None:
        self._runtime = runtime

    async def execute(self, call: StepCall) -> ExecutionResult:
        config = call.config
        if not isinstance(config, GatewayConfig):
            raise ExecutorError(f"the gateway executor got a {type(config).__name__}")
        request = AgentRequest(
            agent=config.agent,
            message=call.prompt,
            session_key=config.session_key or f"agent:{config.agent}:{call.run_id}:{call.step}",
            model=config.model,
            thinking_level=config.thinking_level,
            trace_tool_result_max=config.trace_max_chars,
            timeout_seconds=call.timeout_seconds or config.timeout_seconds,
        )
        try:
            reply = await self._runtime.run(request, call.on_trace)
        except AgentRuntimeError as error:
            details = error.details or ExecutionDetails()
            details.prompt = call.prompt
            if error.code == "timeout":
                raise ExecutorTimeout(error.message, details=details) from None
            error.details = details
            raise
        details = _details(call.prompt, reply)
        try:
            output = parse_llm_output(reply.text)
        except ExecutorError as error:  # LLMParseError / LLMSchemaError: keep what the agent did
            error.details = details
            raise
        return ExecutionResult(
            output=output,
            prompt=call.prompt,
            response_text=reply.text,
            duration_ms=reply.duration_ms,
            trace=reply.trace,
            usage=reply.usage,
            model=reply.model,
            provider=reply.provider,
            agent_version=reply.agent_version,
            agent=config.agent,
            stop_reason=reply.stop_reason,
            truncated=reply.truncated,
            full_tool_results=reply.full_tool_results,
        )


def _details(prompt: str, reply: AgentReply) -> ExecutionDetails:
    return ExecutionDetails(
        prompt=prompt,
        response_text=reply.text,
        trace=reply.trace,
        model=reply.model,
        provider=reply.provider,
        agent_version=reply.agent_version,
        input_tokens=reply.usage.input_tokens,
        output_tokens=reply.usage.output_tokens,
        usage=reply.usage,
    )
