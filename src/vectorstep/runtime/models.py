"""Model strings to pydantic-ai models: `scripted` plays the agent's script; `<provider>/<model>` routes by prefix.

Keys and endpoints come from `providers:` in vectorstep.yaml only (never from agent files or a
provider SDK's own environment variables). A prefix that is not a known provider but has a
`base_url` under `providers:` is any OpenAI-compatible server (vLLM, llama.cpp, LM Studio, ...).
Provider SDK retries are off: our loop retries, with backoff, and records each retry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from vectorstep.errors import AgentRuntimeError
from vectorstep.runtime.scripted import SCRIPTED_MODEL, scripted_model
from vectorstep.spec.agent_files import AgentDefinition
from vectorstep.spec.model_names import model_problem
from vectorstep.spec.service import ProviderSpec

OLLAMA_DEFAULT_URL = "http://127.0.0.1:11434/v1"


@dataclass(frozen=True)
class ResolvedModel:
    model: Model
    provider: str
    name: str
    settings: ModelSettings = field(default_factory=ModelSettings)  # what this provider needs on every call


ModelResolver = Callable[[AgentDefinition, str], ResolvedModel]


class ModelFactory:
    """Builds each model once per process (a model holds its provider's HTTP client)."""

    def __init__(self, providers: Mapping[str, ProviderSpec], *, request_timeout_seconds: float = 180.0) -> None:
        self._providers = providers
        self._timeout = request_timeout_seconds
        self._built: dict[str, ResolvedModel] = {}

    def __call__(self, agent: AgentDefinition, model_name: str) -> ResolvedModel:
        if model_name == SCRIPTED_MODEL:
            return ResolvedModel(model=scripted_model(agent.spec), provider=SCRIPTED_MODEL, name=SCRIPTED_MODEL)
        found = self._built.get(model_name)
        if found is None:
            found = self._built[model_name] = self._build(agent, model_name)
        return found

    def _build(self, agent: AgentDefinition, model_name: str) -> ResolvedModel:
        problem = model_problem(model_name, self._providers)
        if problem is not None:
            raise AgentRuntimeError(f"agent {agent.name!r}: {problem}", code="model_unavailable")
        prefix, _, name = model_name.partition("/")
        spec = self._providers.get(prefix) or ProviderSpec()
        model = _BUILDERS.get(prefix, _openai_compatible)(name, spec)
        settings = ModelSettings(max_retries=0, timeout=self._timeout)
        if spec.headers:
            settings["extra_headers"] = dict(spec.headers)
        return ResolvedModel(model=model, provider=prefix, name=model_name, settings=settings)


def _openai(name: str, spec: ProviderSpec) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415 - each SDK loads only when used
    from pydantic_ai.providers.openai import OpenAIProvider  # noqa: PLC0415

    return OpenAIChatModel(name, provider=OpenAIProvider(base_url=spec.base_url, api_key=spec.api_key))


def _openai_compatible(name: str, spec: ProviderSpec) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415
    from pydantic_ai.providers.openai import OpenAIProvider  # noqa: PLC0415

    # Local servers usually take no key, but the OpenAI client insists on one.
    return OpenAIChatModel(name, provider=OpenAIProvider(base_url=spec.base_url, api_key=spec.api_key or "unused"))


def _ollama(name: str, spec: ProviderSpec) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415
    from pydantic_ai.providers.ollama import OllamaProvider  # noqa: PLC0415

    provider = OllamaProvider(base_url=spec.base_url or OLLAMA_DEFAULT_URL, api_key=spec.api_key or "unused")
    return OpenAIChatModel(name, provider=provider)


def _openrouter(name: str, spec: ProviderSpec) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415
    from pydantic_ai.providers.openai import OpenAIProvider  # noqa: PLC0415

    base_url = spec.base_url or "https://openrouter.ai/api/v1"
    return OpenAIChatModel(name, provider=OpenAIProvider(base_url=base_url, api_key=spec.api_key))


def _azure(name: str, spec: ProviderSpec) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415
    from pydantic_ai.providers.azure import AzureProvider  # noqa: PLC0415

    provider = AzureProvider(azure_endpoint=spec.base_url, api_version=spec.api_version, api_key=spec.api_key)
    return OpenAIChatModel(name, provider=provider)


def _anthropic(name: str, spec: ProviderSpec) -> Model:
    from pydantic_ai.models.anthropic import AnthropicModel  # noqa: PLC0415
    from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: PLC0415

    return AnthropicModel(name, provider=AnthropicProvider(api_key=spec.api_key, base_url=spec.base_url))


def _google(name: str, spec: ProviderSpec) -> Model:
    from pydantic_ai.models.google import GoogleModel  # noqa: PLC0415
    from pydantic_ai.providers.google import GoogleProvider  # noqa: PLC0415

    return GoogleModel(name, provider=GoogleProvider(api_key=spec.api_key, base_url=spec.base_url))


_BUILDERS: dict[str, Callable[[str, ProviderSpec], Model]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "ollama": _ollama,
    "openrouter": _openrouter,
    "azure": _azure,
    "google": _google,
}
