"""Model strings to pydantic-ai models: `scripted` plays the agent's script; `<provider>/<model>` routes by prefix.

Keys and endpoints come from `providers:` in vectorstep.yaml only (never from agent files or a
provider SDK's own environment variables). A prefix that is not a known provider but has a
`base_url` under `providers:` is any OpenAI-compatible server (vLLM, llama.cpp, LM Studio, ...).
Provider SDK retries are off: our loop retries, with backoff, and records each retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai.models import Model
from pydantic_ai.settings import ModelSettings

from vectorstep.errors import AgentRuntimeError
from vectorstep.runtime.rehearsal import REHEARSAL_SPEC, rehearsal_client, rehearse
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


class HttpClients:
    """One pooled HTTP client per provider for the process's life, sending through aiohttp.

    The SDKs' aiohttp transport (`openai[aiohttp]`, `anthropic[aiohttp]`) costs a fifth to a third
    less CPU per model call than their default httpx2 transport when calls overlap
    (benchmarks/bench_model_call.py). An aiohttp pool belongs to the event loop it first ran on, so
    a process that runs a second loop gets new clients (the old ones cannot be closed on a loop
    that has ended).
    """

    def __init__(self, make: Callable[[], Any] | None = None) -> None:
        self._clients: dict[str, Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._make = make  # instead of each SDK's aiohttp client (the rehearsal's, answered in process)

    def follow_loop(self) -> bool:
        """True when the running loop is not the one the clients were made on (they are dropped)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # built ahead in the warm-up's thread: the first request binds them
            return False
        if self._loop is None or loop is self._loop:
            self._loop = loop
            return False
        self._loop = loop
        self._clients.clear()
        return True

    def openai(self, provider: str) -> Any:
        from openai import DefaultAioHttpClient  # noqa: PLC0415 - each SDK loads only when used

        return self._shared(provider, self._make or DefaultAioHttpClient)

    def anthropic(self, provider: str) -> Any:
        from anthropic import DefaultAioHttpClient  # noqa: PLC0415

        return self._shared(provider, self._make or DefaultAioHttpClient)

    def _shared(self, provider: str, make: Callable[[], Any]) -> Any:
        client = self._clients.get(provider)
        if client is None:
            client = self._clients[provider] = make()
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.aclose()


class ModelFactory:
    """Builds each model once per process (a model holds its provider's HTTP client)."""

    def __init__(self, providers: Mapping[str, ProviderSpec], *, request_timeout_seconds: float = 180.0) -> None:
        self._providers = providers
        self._timeout = request_timeout_seconds
        self._built: dict[str, ResolvedModel] = {}
        self._http = HttpClients()

    def __call__(self, agent: AgentDefinition, model_name: str) -> ResolvedModel:
        if model_name == SCRIPTED_MODEL:
            return ResolvedModel(model=scripted_model(agent.spec), provider=SCRIPTED_MODEL, name=SCRIPTED_MODEL)
        if self._http.follow_loop():
            self._built.clear()
        found = self._built.get(model_name)
        if found is None:
            found = self._built[model_name] = self._build(agent, model_name)
        return found

    async def aclose(self) -> None:
        self._built.clear()
        await self._http.aclose()

    async def rehearse(self) -> dict[str, str | None]:
        """A first request through each kind of model built so far, answered in process (rehearsal.py).

        Each rehearsed model string, with why its rehearsal failed (None: it did not). A failed one
        only leaves the first real request slower."""
        clients = HttpClients(make=rehearsal_client)
        outcomes: dict[str, str | None] = {}
        rehearsed: set[Callable[..., Model]] = set()
        try:
            for resolved in list(self._built.values()):
                prefix = resolved.name.partition("/")[0]
                builder = _BUILDERS.get(prefix, _openai_compatible)
                if builder in rehearsed or builder is _google:  # Google's SDK does not send through httpx2
                    continue
                rehearsed.add(builder)
                try:
                    # a model name of its own: a provider's warnings about the agent's model are said once, by it
                    await rehearse(builder("rehearsal", REHEARSAL_SPEC, Http(clients, prefix)))
                    outcomes[resolved.name] = None
                except Exception as error:
                    outcomes[resolved.name] = f"{type(error).__name__}: {error}"
        finally:
            await clients.aclose()
        return outcomes

    def _build(self, agent: AgentDefinition, model_name: str) -> ResolvedModel:
        problem = model_problem(model_name, self._providers)
        if problem is not None:
            raise AgentRuntimeError(f"agent {agent.name!r}: {problem}", code="model_unavailable")
        prefix, _, name = model_name.partition("/")
        spec = self._providers.get(prefix) or ProviderSpec()
        model = _BUILDERS.get(prefix, _openai_compatible)(name, spec, Http(self._http, prefix))
        settings = ModelSettings(max_retries=0, timeout=self._timeout)
        if spec.headers:
            settings["extra_headers"] = dict(spec.headers)
        return ResolvedModel(model=model, provider=prefix, name=model_name, settings=settings)


@dataclass(frozen=True)
class Http:
    """The shared clients, as one provider's builder asks for them (keyed by the model string's prefix)."""

    clients: HttpClients
    provider: str

    def openai(self) -> Any:
        return self.clients.openai(self.provider)

    def anthropic(self) -> Any:
        return self.clients.anthropic(self.provider)


def _openai(name: str, spec: ProviderSpec, http: Http) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415 - each SDK loads only when used
    from pydantic_ai.providers.openai import OpenAIProvider  # noqa: PLC0415

    provider = OpenAIProvider(base_url=spec.base_url, api_key=spec.api_key, http_client=http.openai())
    return OpenAIChatModel(name, provider=provider)


def _openai_compatible(name: str, spec: ProviderSpec, http: Http) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415
    from pydantic_ai.providers.openai import OpenAIProvider  # noqa: PLC0415

    # Local servers usually take no key, but the OpenAI client insists on one.
    provider = OpenAIProvider(base_url=spec.base_url, api_key=spec.api_key or "unused", http_client=http.openai())
    return OpenAIChatModel(name, provider=provider)


def _ollama(name: str, spec: ProviderSpec, http: Http) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415
    from pydantic_ai.providers.ollama import OllamaProvider  # noqa: PLC0415

    provider = OllamaProvider(
        base_url=spec.base_url or OLLAMA_DEFAULT_URL, api_key=spec.api_key or "unused", http_client=http.openai()
    )
    return OpenAIChatModel(name, provider=provider)


def _openrouter(name: str, spec: ProviderSpec, http: Http) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415
    from pydantic_ai.providers.openai import OpenAIProvider  # noqa: PLC0415

    base_url = spec.base_url or "https://openrouter.ai/api/v1"
    provider = OpenAIProvider(base_url=base_url, api_key=spec.api_key, http_client=http.openai())
    return OpenAIChatModel(name, provider=provider)


def _azure(name: str, spec: ProviderSpec, http: Http) -> Model:
    from pydantic_ai.models.openai import OpenAIChatModel  # noqa: PLC0415
    from pydantic_ai.providers.azure import AzureProvider  # noqa: PLC0415

    provider = AzureProvider(
        azure_endpoint=spec.base_url, api_version=spec.api_version, api_key=spec.api_key, http_client=http.openai()
    )
    return OpenAIChatModel(name, provider=provider)


def _anthropic(name: str, spec: ProviderSpec, http: Http) -> Model:
    from pydantic_ai.models.anthropic import AnthropicModel  # noqa: PLC0415
    from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: PLC0415

    provider = AnthropicProvider(api_key=spec.api_key, base_url=spec.base_url, http_client=http.anthropic())
    return AnthropicModel(name, provider=provider)


def _google(name: str, spec: ProviderSpec, http: Http) -> Model:
    from pydantic_ai.models.google import GoogleModel  # noqa: PLC0415
    from pydantic_ai.providers.google import GoogleProvider  # noqa: PLC0415

    # The Google SDK has no aiohttp transport of its own here: its provider keeps its default client.
    return GoogleModel(name, provider=GoogleProvider(api_key=spec.api_key, base_url=spec.base_url))


_BUILDERS: dict[str, Callable[[str, ProviderSpec, Http], Model]] = {
    "openai": _openai,
    "anthropic": _anthropic,
    "ollama": _ollama,
    "openrouter": _openrouter,
    "azure": _azure,
    "google": _google,
}
