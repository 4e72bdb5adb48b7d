"""The exception tree of VectorStep.

Expected outcomes (a low score, a failed check, a judge timeout) are values, not exceptions.
Exceptions are for things that stop a piece of work::

    VectorStepError
    ├── ConfigError            a user's file is wrong: every problem with file, line and key path
    ├── PayloadError           a trigger's payload cannot be normalised (HTTP 400, CLI exit 2)
    ├── TemplateError          a template or expression cannot be rendered or evaluated
    ├── ExecutorError          one executor attempt failed (retried by `retry`, then fails the step)
    │   ├── LLMParseError      no JSON object in the agent's text (keeps the raw text)
    │   ├── LLMSchemaError     JSON that is not a valid LLMOutput (keeps the raw text and errors)
    │   ├── ExecutorTimeout    the attempt ran past its timeout
    │   └── AgentRuntimeError  the agent runtime could not finish the turn
    ├── ToolError              an MCP server could not be reached or started
    ├── DuplicateRunError      the same event already has a run (dedup): carries that run's id
    ├── RequestRefused         a request asks what cannot be done here, and says why (HTTP 400, CLI exit 2)
    └── StoreError             the database could not do what was asked
        └── NotFoundError      no such run / approval
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vectorstep.domain.execution import Usage


class VectorStepError(Exception):
    """Base of every error VectorStep raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a user's file, located as precisely as we can."""

    file: str
    line: int | None
    key_path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        key = f" {self.key_path}:" if self.key_path else ""
        return f"{where}:{key} {self.message}"


class ConfigError(VectorStepError):
    """User input (a YAML file, a payload, a CLI argument) is invalid."""

    def __init__(self, problems: Iterable[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))

    @classmethod
    def single(cls, file: str, message: str, *, line: int | None = None, key_path: str = "") -> ConfigError:
        return cls([Problem(file=file, line=line, key_path=key_path, message=message)])


class PayloadError(VectorStepError):
    """A trigger payload (webhook body, `--payload` file) is not what its source promises."""


class TemplateError(VectorStepError):
    """A template or a bare expression could not be rendered or evaluated."""


@dataclass
class ExecutionDetails:
    """What an executor attempt produced before it failed, so a failed step still shows its trace."""

    prompt: str | None = None
    response_text: str | None = None
    trace: Sequence[Any] = field(default_factory=tuple)
    model: str | None = None
    provider: str | None = None
    agent_version: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    usage: Usage | None = None  # per model, for pricing what was spent before the failure


class ExecutorError(VectorStepError):
    """One executor attempt failed; `kind` becomes the step's `error_kind`."""

    kind = "executor_error"

    def __init__(self, message: str, *, details: ExecutionDetails | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details


class LLMParseError(ExecutorError):
    """The agent's text holds no JSON object; `raw_text` is the whole text, never a snippet."""

    kind = "parse_error"

    def __init__(self, message: str, raw_text: str, *, details: ExecutionDetails | None = None) -> None:
        super().__init__(message, details=details)
        self.raw_text = raw_text


class LLMSchemaError(ExecutorError):
    """The agent's JSON is not a valid LLMOutput."""

    kind = "schema_error"

    def __init__(
        self,
        message: str,
        raw_text: str,
        errors: Sequence[Mapping[str, Any]],
        *,
        details: ExecutionDetails | None = None,
    ) -> None:
        super().__init__(message, details=details)
        self.raw_text = raw_text
        self.errors = tuple(errors)


class ExecutorTimeout(ExecutorError):
    kind = "timeout"


class AgentRuntimeError(ExecutorError):
    """The agent runtime could not complete a turn (unknown agent, model error, no answer in time)."""

    kind = "runtime_error"

    def __init__(self, message: str, *, code: str = "runtime_error", details: ExecutionDetails | None = None):
        super().__init__(message, details=details)
        self.code = code


class ToolError(VectorStepError):
    """A tool server could not be started or reached."""


class DuplicateRunError(VectorStepError):
    """An event whose pipeline and fingerprint already have a run in flight or within the dedup window."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"deduplicated: run {run_id} handles this event")
        self.run_id = run_id


class RequestRefused(VectorStepError):
    """A well-formed request that cannot be carried out as asked (a replay of an agent not declared safe, say)."""


class StoreError(VectorStepError):
    """The database could not complete an operation."""


class DatabaseUnreachable(StoreError):
    """The database does not answer (down, wrong address, no such database, refused login): a setup mistake."""


class NotFoundError(StoreError):
    """The requested record does not exist."""
