"""Model strings to pydantic-ai models: `scripted` plays the agent's script; providers by prefix."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic_ai.models import Model

from vectorstep.errors import AgentRuntimeError
from vectorstep.runtime.scripted import SCRIPTED_MODEL, scripted_model
from vectorstep.spec.agent_files import AgentDefinition


@dataclass(frozen=True)
class ResolvedModel:
    model: Model
    provider: str
    name: str


ModelResolver = Callable[[AgentDefinition, str], ResolvedModel]


def resolve_model(agent: AgentDefinition, model_name: str) -> ResolvedModel:
    if model_name == SCRIPTED_MODEL:
        return ResolvedModel(model=scripted_model(agent.spec), provider=SCRIPTED_MODEL, name=SCRIPTED_MODEL)
    provider = model_name.split("/", 1)[0]
    raise AgentRuntimeError(
        f"agent {agent.name!r} asks for model {model_name!r}: provider {provider!r} is not available in "
        "this build of the embedded runtime; use `model: scripted`, or a remote gateway that serves it",
        code="model_unavailable",
    )
