"""Channels that deliver a message: log, webhook, Slack, Telegram, email (SMTP).

A channel raises ChannelError when delivery fails; callers log it and carry on (a notification
never fails a run). Error texts never carry credentials (a Telegram URL holds the bot token).
"""

from __future__ import annotations

import asyncio
import logging
import re
import smtplib
from collections.abc import Mapping
from dataclasses import dataclass, field
from email.message import EmailMessage
from typing import Any, Protocol

import httpx

from vectorstep.errors import VectorStepError
from vectorstep.spec.service import EmailSpec, SlackSpec, TelegramSpec, WebhookChannelSpec

log = logging.getLogger("vectorstep.notify")
TIMEOUT_SECONDS = 10.0


class ChannelError(VectorStepError):
    """A message could not be delivered."""


# What no channel can deliver: control characters (but line breaks and tabs) and lone surrogates.
_UNDELIVERABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def deliverable(text: str) -> str:
    """A notification informs: what a channel cannot carry is shown as U+FFFD rather than losing the message."""
    return _UNDELIVERABLE.sub("\ufffd", text)


@dataclass(frozen=True)
class Message:
    title: str
    text: str
    links: Mapping[str, str] = field(default_factory=dict)
    data: Mapping[str, Any] = field(default_factory=dict)  # structured fields, for webhooks
    # A chat message opens with the title, unless the text was written whole by the user's own
    # `template` (then it is the message, as written); an email keeps the title as its subject.
    titled: bool = True

    def __post_init__(self) -> None:
        # A subject line is one line: a line break there would start a header of its own.
        object.__setattr__(self, "title", deliverable(self.title).replace("\r", " ").replace("\n", " "))
        object.__setattr__(self, "text", deliverable(self.text))

    def plain(self) -> str:
        lines = [self.title, "", self.text] if self.titled else [self.text]
        lines += [f"{name}: {url}" for name, url in self.links.items()]
        return "\n".join(lines).strip()


class Channel(Protocol):
    name: str

    async def send(self, message: Message) -> None: ...


class LogChannel:
    name = "log"

    async def send(self, message: Message) -> None:
        log.warning("%s — %s", message.title, message.text.replace("\n", " / "))


class WebhookChannel:
    name = "webhook"

    def __init__(self, client: httpx.AsyncClient, spec: WebhookChannelSpec) -> None:
        self._client, self._spec = client, spec

    async def send(self, message: Message) -> None:
        body = {"title": message.title, "text": message.text, "links": dict(message.links), **message.data}
        await _post(self._client, self._spec.url, body, dict(self._spec.headers), "webhook")


class SlackChannel:
    name = "slack"

    def __init__(self, client: httpx.AsyncClient, spec: SlackSpec) -> None:
        self._client, self._spec, self._api = client, spec, spec.api_url.rstrip("/")

    async def send(self, message: Message) -> None:
        head = f"*{message.title}*\n" if message.titled else ""
        text = f"{head}{message.text}" + "".join(f"\n<{url}|{name}>" for name, url in message.links.items())
        if self._spec.webhook_url:
            await _post(self._client, self._spec.webhook_url, {"text": text}, {}, "slack webhook")
            return
        answer = await _post(
            self._client,
            f"{self._api}/chat.postMessage",
            {"channel": self._spec.channel, "text": text},
            {"Authorization": f"Bearer {self._spec.bot_token}"},
            "slack chat.postMessage",
        )
        if isinstance(answer, dict) and answer.get("ok") is False:
            raise ChannelError(f"slack chat.postMessage refused: {answer.get('error', 'unknown error')}")


class TelegramChannel:
    name = "telegram"

    def __init__(self, client: httpx.AsyncClient, spec: TelegramSpec) -> None:
        self._client, self._spec = client, spec

    async def send(self, message: Message) -> None:
        url = f"{self._spec.api_url.rstrip('/')}/bot{self._spec.bot_token}/sendMessage"
        body = {"chat_id": self._spec.chat_id, "text": message.plain(), "disable_web_page_preview": True}
        await _post(self._client, url, body, {}, "telegram sendMessage")


class EmailChannel:
    name = "email"

    def __init__(self, spec: EmailSpec) -> None:
        self._spec = spec

    async def send(self, message: Message) -> None:
        email = EmailMessage()
        email["Subject"] = message.title
        email["From"] = self._spec.sender
        email["To"] = ", ".join(self._spec.to)
        email.set_content(message.plain())
        try:
            await asyncio.to_thread(self._deliver, email)
        except (OSError, smtplib.SMTPException) as error:
            raise ChannelError(f"email via {self._spec.smtp_host}:{self._spec.smtp_port} failed: {error}") from None

    def _deliver(self, email: EmailMessage) -> None:
        with smtplib.SMTP(self._spec.smtp_host, self._spec.smtp_port, timeout=TIMEOUT_SECONDS) as smtp:
            if self._spec.starttls:
                smtp.starttls()
            if self._spec.username:
                smtp.login(self._spec.username, self._spec.password or "")
            smtp.send_message(email)


async def _post(
    client: httpx.AsyncClient, url: str, body: Mapping[str, Any], headers: dict[str, str], what: str
) -> Any:
    try:
        response = await client.post(url, json=dict(body), headers=headers, timeout=TIMEOUT_SECONDS)
    except httpx.HTTPError as error:
        raise ChannelError(f"{what} failed: {type(error).__name__}") from None
    if not 200 <= response.status_code < 300:
        raise ChannelError(f"{what} answered {response.status_code}")
    try:
        return response.json()
    except ValueError:
        return response.text
