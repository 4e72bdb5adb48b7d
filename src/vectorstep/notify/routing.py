"""Building a channel from its name and configuration (service credentials, then per-use overrides)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
from pydantic import BaseModel, ValidationError

from vectorstep.errors import ConfigError, Problem
from vectorstep.notify.channels import (
    Channel,
    EmailChannel,
    LogChannel,
    SlackChannel,
    TelegramChannel,
    WebhookChannel,
)
from vectorstep.spec.service import EmailSpec, SlackSpec, TelegramSpec, WebhookChannelSpec

CHANNEL_SPECS: dict[str, type[BaseModel]] = {
    "webhook": WebhookChannelSpec,
    "slack": SlackSpec,
    "telegram": TelegramSpec,
    "email": EmailSpec,
}


def channel_settings(
    name: str, configured: BaseModel | None, override: Mapping[str, Any], where: str
) -> BaseModel | None:
    """The validated settings of channel `name`: the configured block with `override` on top."""
    if name == "log":
        return None
    data = {**(configured.model_dump(by_alias=True, exclude_none=True) if configured else {}), **override}
    try:
        return CHANNEL_SPECS[name].model_validate(data)
    except ValidationError as error:
        details = "; ".join(f"{'.'.join(map(str, err['loc'])) or name}: {err['msg']}" for err in error.errors())
        raise ConfigError([Problem(where, None, name, f"{name} channel is not configured fully: {details}")]) from None


def build_channel(name: str, settings: BaseModel | None, client: httpx.AsyncClient) -> Channel:
    if isinstance(settings, WebhookChannelSpec):
        return WebhookChannel(client, settings)
    if isinstance(settings, SlackSpec):
        return SlackChannel(client, settings)
    if isinstance(settings, TelegramSpec):
        return TelegramChannel(client, settings)
    if isinstance(settings, EmailSpec):
        return EmailChannel(settings)
    return LogChannel()
