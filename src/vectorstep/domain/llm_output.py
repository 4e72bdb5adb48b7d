"""The step contract: `LLMOutput`, and finding it in an agent's text (SYSTEM.md §5.1)."""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError, field_validator

from vectorstep.domain.bounded_json import UnboundedJSON, check_bounds
from vectorstep.domain.storable import without_surrogates
from vectorstep.errors import LLMParseError, LLMSchemaError

SNIPPET_CHARS = 500


class LLMOutput(BaseModel):
    """A step's structured answer. Fields beyond these are kept and flow downstream."""

    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)

    confidence: float = Field(ge=0.0, le=1.0)
    summary: str
    next_step_context: str
    proceed: StrictBool = True
    proceed_reason: str | None = None
    reasoning: dict[str, Any] | None = None
    # Each value is checked by `domain.artifacts` when the step is recorded: one that is not text is
    # left out with a warning there, so a stray value never fails the whole answer.
    artifacts: dict[str, Any] | None = None

    @field_validator("confidence", mode="before")
    @classmethod
    def _a_number(cls, value: Any) -> Any:
        # "0.9" or true are not confidences; a model that writes them has not followed the contract.
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"confidence must be a number in [0, 1], got {value!r}")
        return value

    def extras(self) -> dict[str, Any]:
        return dict(self.model_extra or {})

    def as_context(self) -> dict[str, Any]:
        """What later steps see as `steps.<name>`: every field and extra, without `raw_response`."""
        data = self.model_dump(mode="json")
        data.pop("raw_response", None)
        return data


def parse_llm_output(text: str) -> LLMOutput:
    """Find the JSON object in `text` and validate it.

    Raises LLMParseError (no JSON object) or LLMSchemaError (not a valid LLMOutput); both keep
    the whole text.
    """
    text = without_surrogates(text)
    found = find_json_object(text)
    if found is None:
        raise LLMParseError(f"no JSON object found in the agent's answer: {snippet(text)!r}", raw_text=text)
    try:
        check_bounds(found, "the agent's JSON", max_values=None)  # its length bounds its values
    except UnboundedJSON as error:
        raise LLMParseError(str(error), raw_text=text) from None
    found = without_surrogates(found)
    try:
        return LLMOutput.model_validate(found)
    except ValidationError as error:
        details = "; ".join(
            f"{'.'.join(str(part) for part in err['loc']) or 'answer'}: {err['msg']}" for err in error.errors()
        )
        raise LLMSchemaError(
            f"the agent's JSON is not a valid step answer: {details}",
            raw_text=text,
            errors=[{"loc": list(err["loc"]), "msg": err["msg"], "type": err["type"]} for err in error.errors()],
        ) from None


def snippet(text: str) -> str:
    return text if len(text) <= SNIPPET_CHARS else text[:SNIPPET_CHARS] + "…"


_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)```", re.DOTALL)
_decoder = json.JSONDecoder()


def find_json_object(text: str) -> dict[str, Any] | None:
    """The last JSON object in `text`: the whole text, else the last fenced block, else a balanced scan."""
    stripped = text.strip()
    whole = _loads_object(stripped)
    if whole is not None:
        return whole
    for block in reversed(_FENCE.findall(text)):
        parsed = _loads_object(block.strip())
        if parsed is not None:
            return parsed
    return _last_balanced_object(text)


def _loads_object(text: str) -> dict[str, Any] | None:
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):  # not JSON, or nested deeper than Python's stack: no answer
        return None
    return value if isinstance(value, dict) else None


# Where an object can start: a brace, then a key or the closing brace. A failed decode costs the
# parser a count of the lines before it, so only such places are tried, and only so many of them.
_OBJECT_START = re.compile(r"\{\s*[\"}]")
MAX_DECODE_ATTEMPTS = 10_000


def _last_balanced_object(text: str) -> dict[str, Any] | None:
    """Decode objects left to right with a real JSON parser, keeping the last top-level one."""
    last: dict[str, Any] | None = None
    start = _OBJECT_START.search(text)
    for _ in range(MAX_DECODE_ATTEMPTS):
        if start is None:
            break
        try:
            value, end = _decoder.raw_decode(text, start.start())
        except (ValueError, RecursionError):
            start = _OBJECT_START.search(text, start.start() + 1)
            continue
        if isinstance(value, dict):
            last = value
        start = _OBJECT_START.search(text, end)
    return last
