"""Model strings: `scripted`, or `<provider>/<model>` with a known provider or one given a `base_url`."""

from __future__ import annotations

from collections.abc import Mapping

from vectorstep.spec.service import ProviderSpec

SCRIPTED = "scripted"
KNOWN_PROVIDERS = ("openai", "anthropic", "ollama", "openrouter", "azure", "google")
NEEDS_KEY = frozenset({"openai", "anthropic", "openrouter", "azure", "google"})


def model_problem(model: str, providers: Mapping[str, ProviderSpec]) -> str | None:
    """What is wrong with using `model` under these `providers:` settings, or None."""
    if model == SCRIPTED:
        return None
    prefix, slash, name = model.partition("/")
    configured = providers.get(prefix)
    if not slash or not name or (prefix not in KNOWN_PROVIDERS and (configured is None or not configured.base_url)):
        return (
            f"unknown model {model!r}; write <provider>/<model> with a provider of {', '.join(KNOWN_PROVIDERS)} "
            "(or one given a `base_url` under `providers:` in vectorstep.yaml), or `scripted`"
        )
    if prefix in NEEDS_KEY and (configured is None or not configured.api_key):
        return f"model {model!r} needs `providers.{prefix}.api_key` in vectorstep.yaml (use ${{VAR}})"
    if prefix == "azure" and (configured is None or not configured.base_url or not configured.api_version):
        return f"model {model!r} needs `providers.azure.base_url` (the endpoint) and `api_version` in vectorstep.yaml"
    return None


def ignores_thinking(model: str) -> bool:
    """An OpenAI-compatible server we know nothing about: `thinking_level` is not sent to it."""
    prefix, slash, _ = model.partition("/")
    return model != SCRIPTED and bool(slash) and prefix not in KNOWN_PROVIDERS
