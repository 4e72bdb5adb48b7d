"""Channels against real local servers: webhook, Slack (webhook and bot), Telegram, SMTP email."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from email import message_from_bytes
from typing import Any

import httpx
import pytest
from aiosmtpd.controller import Controller

from tests.conftest import RecordingServer
from vectorstep.notify.channels import (
    ChannelError,
    EmailChannel,
    Message,
    SlackChannel,
    TelegramChannel,
    WebhookChannel,
)
from vectorstep.spec.service import EmailSpec, SlackSpec, TelegramSpec, WebhookChannelSpec

MESSAGE = Message(
    "Approval needed: checkout / restart",
    "Restart checkout-7d9f?",
    {"view": "http://vs/ui/approvals/1"},
    {"approval": {"id": "1"}},
)


class Inbox:
    def __init__(self) -> None:
        self.messages: list[Any] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append((envelope.rcpt_tos, message_from_bytes(envelope.content)))
        return "250 OK"


@pytest.fixture
def smtp() -> Iterator[tuple[Inbox, int]]:
    inbox = Inbox()
    with socket.socket() as probe:  # a free port (aiosmtpd checks readiness by connecting to it)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    controller = Controller(inbox, hostname="127.0.0.1", port=port)
    controller.start()
    yield inbox, port
    controller.stop()


async def test_webhook_gets_the_structured_message(http_server: RecordingServer) -> None:
    async with httpx.AsyncClient() as client:
        await WebhookChannel(client, WebhookChannelSpec(url=http_server.url + "/hook", headers={"X-Key": "k"})).send(
            MESSAGE
        )
    (request,) = http_server.requests
    assert request["body"]["approval"] == {"id": "1"} and request["body"]["links"]["view"].endswith("/1")  # type: ignore[index]
    assert request["headers"]["X-Key"] == "k"  # type: ignore[index]


async def test_slack_incoming_webhook_and_bot_token(http_server: RecordingServer) -> None:
    http_server.responses = [(200, "ok"), (200, '{"ok": true}'), (200, '{"ok": false, "error": "channel_not_found"}')]
    async with httpx.AsyncClient() as client:
        await SlackChannel(client, SlackSpec(webhook_url=http_server.url + "/services/T/B/x")).send(MESSAGE)
        bot = SlackChannel(client, SlackSpec(bot_token="xoxb-secret", channel="#sre", api_url=http_server.url))
        await bot.send(MESSAGE)
        with pytest.raises(ChannelError, match="channel_not_found") as raised:
            await bot.send(MESSAGE)
    assert "xoxb-secret" not in str(raised.value)
    incoming, posted, _ = http_server.requests
    assert (
        "Restart checkout-7d9f?" in incoming["body"]["text"]
        and "<http://vs/ui/approvals/1|view>" in incoming["body"]["text"]
    )  # type: ignore[index]
    assert posted["path"] == "/chat.postMessage" and posted["body"]["channel"] == "#sre"  # type: ignore[index]
    assert posted["headers"]["Authorization"] == "Bearer xoxb-secret"  # type: ignore[index]


async def test_telegram_errors_never_show_the_bot_token(http_server: RecordingServer) -> None:
    http_server.responses = [(200, '{"ok": true}'), (401, '{"ok": false}')]
    spec = TelegramSpec(bot_token="123:SECRET", chat_id="-100", api_url=http_server.url)
    async with httpx.AsyncClient() as client:
        await TelegramChannel(client, spec).send(MESSAGE)
        with pytest.raises(ChannelError) as raised:
            await TelegramChannel(client, spec).send(MESSAGE)
    assert http_server.requests[0]["path"] == "/bot123:SECRET/sendMessage"
    assert http_server.requests[0]["body"]["chat_id"] == "-100"  # type: ignore[index]
    assert "SECRET" not in str(raised.value) and "401" in str(raised.value)


async def test_email_over_a_real_smtp_server(smtp: tuple[Inbox, int]) -> None:
    inbox, port = smtp
    spec = EmailSpec.model_validate(
        {
            "smtp_host": "127.0.0.1",
            "smtp_port": port,
            "starttls": False,
            "from": "vs@example.org",
            "to": "sre@example.org",
        }
    )
    await EmailChannel(spec).send(MESSAGE)
    ((recipients, email),) = inbox.messages
    assert recipients == ["sre@example.org"] and email["Subject"] == "Approval needed: checkout / restart"
    assert "Restart checkout-7d9f?" in email.get_payload() and "http://vs/ui/approvals/1" in email.get_payload()


async def test_an_unreachable_smtp_server_is_a_channel_error() -> None:
    spec = EmailSpec.model_validate(
        {"smtp_host": "127.0.0.1", "smtp_port": 9, "starttls": False, "from": "a@b", "to": "c@d"}
    )
    with pytest.raises(ChannelError, match=r"email via 127\.0\.0\.1:9 failed"):
        await EmailChannel(spec).send(MESSAGE)
    await asyncio.sleep(0)
