"""Pricing token usage with the service's `pricing` table."""

from __future__ import annotations

from fnmatch import fnmatchcase

from vectorstep.domain.execution import Usage
from vectorstep.spec.service import PriceSpec, PricingSpec


def price_of(pricing: PricingSpec, provider: str | None, model: str) -> PriceSpec | None:
    """The first price whose `match` fits (`provider` and `model` are globs; unset matches anything)."""
    for price in pricing.models:
        wanted_provider, wanted_model = price.match.provider, price.match.model
        if wanted_provider is not None and not fnmatchcase(provider or "", wanted_provider):
            continue
        if wanted_model is not None and not fnmatchcase(model, wanted_model):
            continue
        return price
    return None


FREE_PROVIDERS = frozenset({"scripted"})  # plays a script: no model, no money


def cost_of(pricing: PricingSpec, provider: str | None, usage: Usage) -> float | None:
    """The cost of `usage`, or None when some model in it has no price."""
    if not usage.by_model:
        return None
    if provider in FREE_PROVIDERS:
        return 0.0
    total = 0.0
    for model, model_usage in usage.by_model.items():
        price = price_of(pricing, provider, model)
        if price is None:
            return None
        # Tokens the provider read from its prompt cache cost their own price, when one is given.
        cached = model_usage.cached_input_tokens if price.cached_input_per_mtok is not None else 0
        total += (model_usage.input_tokens - cached) / 1e6 * price.input_per_mtok
        total += cached / 1e6 * (price.cached_input_per_mtok or 0.0)
        total += model_usage.output_tokens / 1e6 * price.output_per_mtok
    return round(total, 6)
