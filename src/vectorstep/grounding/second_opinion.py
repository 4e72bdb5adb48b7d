"""Asking another agent for a second opinion, softly: whatever goes wrong becomes a recorded error."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from vectorstep.domain.execution import ExecutionResult, Usage
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
            # The executor gets a little longer, so that our own limit is the one that fires and
            # says so, unless a shorter runtime limit (`limits.max_run_seconds`) fires first.
            result = await ask(prompt, timeout_seconds + 1.0)
    except TimeoutError:
        return Opinion(None, timed_out, attribution())
    except ExecutorTimeout as error:  # a runtime limit (limits.max_run_seconds) may be the shorter one
        return Opinion(None, f"{what} call timed out: {error.message}", attribution())
    except (LLMParseError, LLMSchemaError) as error:
        details = error.details
        return Opinion(
            None,
            f"{what}: {error.message}",
            attribution(  # an answer arrived and was paid for, even if it cannot be read
                raw_output=error.raw_text,
                model=details.model if details else None,
                provider=details.provider if details else None,
                usage=details.usage if details and details.usage else Usage(),
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
