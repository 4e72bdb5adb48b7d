"""Asking a model, with retries and fallbacks: what a flaky provider needs, each step recorded in the trace.

A rate limit, an unavailable or failing server, a timeout or a broken connection is retried with
exponential backoff and jitter (or after the provider's `Retry-After`), `limits.llm_retry_attempts`
times. When a model still fails — or fails in a way waiting cannot fix (a bad key, an unknown
model) — the agent's next `model_fallbacks` entry takes over the same conversation, and keeps it.
"""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_ai.direct import model_request
from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelConnectionError,
    ModelRateLimitError,
    ModelServerError,
    ModelUnavailableError,
    UnexpectedModelBehavior,
)
from pydantic_ai.messages import ModelMessage, ModelResponse
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.settings import ModelSettings, merge_model_settings

from vectorstep.clock import Clock
from vectorstep.errors import AgentRuntimeError
from vectorstep.runtime.models import ResolvedModel
from vectorstep.runtime.trace_recorder import TraceRecorder

TRANSIENT = (ModelRateLimitError, ModelUnavailableError, ModelServerError, ModelConnectionError)
LONGEST_WAIT_SECONDS = 60.0


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int  # retries after the first try
    base_delay_seconds: float


class ModelCaller:
    def __init__(
        self,
        candidates: Sequence[ResolvedModel],
        settings: ModelSettings,
        retry: RetryPolicy,
        *,
        recorder: TraceRecorder,
        clock: Clock,
        jitter: random.Random | None = None,
    ) -> None:
        self._candidates = list(candidates)
        self._settings = settings
        self._retry = retry
        self._recorder = recorder
        self._clock = clock
        self._jitter = jitter or random.Random()  # noqa: S311 - spreading retries, not secrecy
        self._current = 0

    @property
    def current(self) -> ResolvedModel:
        return self._candidates[self._current]

    async def request(self, messages: list[ModelMessage], parameters: ModelRequestParameters) -> ModelResponse:
        while True:
            try:
                return await self._with_retries(self.current, messages, parameters)
            except (ModelAPIError, UnexpectedModelBehavior) as error:
                failed = self.current
                if self._current + 1 >= len(self._candidates):
                    tried = "" if len(self._candidates) == 1 else f" (the last of {len(self._candidates)} models)"
                    message = f"model {failed.name!r} failed{tried}: {_what_happened(error)}"
                    raise AgentRuntimeError(message, code="model_error") from error
                self._current += 1
                self._recorder.add(
                    "model_fallback",
                    model=self.current.name,
                    provider=self.current.provider,
                    reason=f"{failed.name} failed: {_describe(error)}",
                )

    async def _with_retries(
        self, resolved: ResolvedModel, messages: list[ModelMessage], parameters: ModelRequestParameters
    ) -> ModelResponse:
        settings = merge_model_settings(resolved.settings, self._settings)
        for attempt in range(self._retry.attempts + 1):
            try:
                return await model_request(
                    resolved.model, messages, model_settings=settings, model_request_parameters=parameters
                )
            except TRANSIENT as error:
                if attempt == self._retry.attempts:
                    raise
                delay = self._delay(attempt, error.retry_after)
                self._recorder.add(
                    "llm_retry",
                    model=resolved.name,
                    provider=resolved.provider,
                    reason=f"{_describe(error)}; retry {attempt + 1} of {self._retry.attempts} in {delay:.2f}s",
                )
                await self._clock.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), LONGEST_WAIT_SECONDS)
        backoff: float = self._retry.base_delay_seconds * 2**attempt
        return min(backoff * (0.5 + self._jitter.random() / 2), LONGEST_WAIT_SECONDS)


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    kind = type(error).__name__
    return f"{kind} ({status}): {_what_happened(error)}" if status else f"{kind}: {_what_happened(error)}"


def _what_happened(error: BaseException) -> str:
    """The SDK's message, or — when the connection itself failed — that, with the address it tried.

    The SDKs' aiohttp transport reports every failed connection (refused, reset, closed by the
    server) as a connect timeout, and the SDK then says "Request timed out."; the chain of causes
    says what really happened.
    """
    aiohttp = sys.modules.get("aiohttp")  # loaded by the transport that raised, if it was aiohttp's
    link = error.__cause__
    while link is not None:
        if isinstance(link, TimeoutError):
            break
        if isinstance(link, OSError) or (aiohttp is not None and isinstance(link, aiohttp.ClientConnectionError)):
            return f"Connection error ({link})"
        link = link.__cause__
    return str(error)
