"""What an executor returns for one attempt (SYSTEM.md §5)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from vectorstep.domain.llm_output import LLMOutput
from vectorstep.domain.trace import TraceEvent


@dataclass(frozen=True)
class ModelUsage:
    input_tokens: int = 0  # all input tokens, the cached ones included
    output_tokens: int = 0
    requests: int = 0
    cached_input_tokens: int = 0  # of input_tokens, those the provider read from its prompt cache

    def __add__(self, other: ModelUsage) -> ModelUsage:
        return ModelUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.requests + other.requests,
            self.cached_input_tokens + other.cached_input_tokens,
        )


@dataclass(frozen=True)
class Usage:
    """Tokens per model, so mixed-model turns (fallbacks) can be priced correctly."""

    by_model: Mapping[str, ModelUsage] = field(default_factory=dict)

    @property
    def input_tokens(self) -> int:
        return sum(usage.input_tokens for usage in self.by_model.values())

    @property
    def output_tokens(self) -> int:
        return sum(usage.output_tokens for usage in self.by_model.values())

    def add(self, model: str, usage: ModelUsage) -> Usage:
        merged = dict(self.by_model)
        merged[model] = merged.get(model, ModelUsage()) + usage
        return Usage(merged)

    def as_dict(self) -> dict[str, dict[str, int]]:
        return {
            model: {
                "input_tokens": u.input_tokens,
                "output_tokens": u.output_tokens,
                "cached_input_tokens": u.cached_input_tokens,
                "requests": u.requests,
            }
            for model, u in self.by_model.items()
        }


@dataclass(frozen=True)
class ExecutorCapabilities:
    """What an executor can report: grounding and a critic verifier need a trace."""

    trace: bool = False
    usage: bool = False
    version: bool = False


@dataclass(frozen=True)
class ExecutionResult:
    output: LLMOutput
    prompt: str
    response_text: str
    duration_ms: float
    trace: tuple[TraceEvent, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    provider: str | None = None
    agent_version: str | None = None
    agent: str | None = None
    stop_reason: str | None = None
    truncated: bool = False
    # The whole result of each tool call (by call_id), kept in memory for this step's own verifier
    # and grounding judge; the persisted trace holds only the capped copy.
    full_tool_results: Mapping[str, str] = field(default_factory=dict, repr=False)
