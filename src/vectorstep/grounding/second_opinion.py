"""Asking another agent for a second opinion, softly: whatever goes wrong becomes a recorded error."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from vectorstep.domain.execution import ExecutionResult
from vectorstep.domain.signals import CallAttribution
from vectorstep.errors import ExecutorError, ExecutorTimeout, LLMParseError, LLMSchemaError, TemplateError

# (prompt, timeout in seconds) → the other agent's parsed answer; raises ExecutorError.
Ask = Callable[[str, float], Awaitable[ExecutionResult]]


@dataclass(frozen=True)
class Opinion:
    result: ExecutionResult | None
    error: str | None
    call: CallAttribution


async def ask_softly(ask: Ask, prompt: str, timeout_seconds: float, what: str, agent: str | None) -> Opinion:
    """Never raises for the other agent's failure, and never takes longer than `timeout_seconds`."""
    started = time.monotonic()

    def attribution(**fields: object) -> CallAttribution:
        elapsed = round((time.monotonic() - started) * 1000, 3)
        return CallAttribution(agent=agent, prompt=prompt, duration_ms=elapsed, **fields)  # type: ignore[arg-type]

    timed_out = f"{what} call timed out after {timeout_seconds:g}s"
    try:
        async with asyncio.timeout(timeout_seconds):
            result = await ask(prompt, timeout_seconds)
    except (TimeoutError, ExecutorTimeout):
        return Opinion(None, timed_out, attribution())
    except (LLMParseError, LLMSchemaError) as error:
        details = error.details
        return Opinion(
            None,
            f"{what}: {error.message}",
            attribution(
                raw_output=error.raw_text,
                model=details.model if details else None,
                provider=details.provider if details else None,
            ),
        )
    except (ExecutorError, TemplateError) as error:
        return Opinion(None, f"{what} failed: {error}", attribution())
    return Opinion(
        result,
        None,
        attribution(
            model=result.model,
            provider=result.provider,
            raw_output=result.response_text,
            usage=result.usage,
        ),
    )
