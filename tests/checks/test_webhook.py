"""The webhook check: a real request, `expect` on the response, and every failure fails closed."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import RecordingServer
from vectorstep.checks.webhook import run_webhook_check
from vectorstep.spec.trust_blocks import WebhookCheckSpec
from vectorstep.templating import NamedMapping

CONTEXT = {"steps": NamedMapping("steps", {"investigate": NamedMapping("steps.investigate", {"uid": "abc-123"})})}


def spec(url: str, **fields: object) -> WebhookCheckSpec:
    return WebhookCheckSpec.model_validate({"type": "webhook", "name": "dashboard", "url": url, **fields})


async def test_the_rendered_request_is_sent_and_expect_sees_the_response(http_server: RecordingServer) -> None:
    http_server.responses = [(200, '{"dashboard": {"uid": "abc-123", "title": "Checkout"}}')]
    check = spec(
        http_server.url + "/api/dashboards/uid/{{ steps.investigate.uid }}",
        headers={"X-Step": "{{ steps.investigate.uid }}"},
        expect="response.status_code == 200 and response.body.dashboard.title == 'Checkout'",
    )
    async with httpx.AsyncClient() as client:
        result = await run_webhook_check(check, CONTEXT, client)
    assert result.passed, result.detail
    (request,) = http_server.requests
    assert request["path"] == "/api/dashboards/uid/abc-123" and request["headers"]["X-Step"] == "abc-123"  # type: ignore[index]


async def test_a_non_2xx_is_evaluated_not_raised(http_server: RecordingServer) -> None:
    http_server.responses = [(404, '{"message": "not found"}'), (404, "{}")]
    async with httpx.AsyncClient() as client:
        gone = await run_webhook_check(spec(http_server.url + "/x", expect="response.status_code == 404"), {}, client)
        default = await run_webhook_check(spec(http_server.url + "/x"), {}, client)
    assert gone.passed
    assert not default.passed and "status 404" in default.detail  # the default expects status < 400


@pytest.mark.parametrize(
    ("url", "fields", "detail"),
    [
        ("http://127.0.0.1:9/x", {}, "GET http://127.0.0.1:9/… failed: ConnectError"),
        ("{{ steps.nope.uid }}", {}, "cannot be rendered"),
        ("SERVER/x", {"expect": "response.body.missing.key == 1"}, "expect cannot be evaluated"),
    ],
    ids=["unreachable", "undefined", "bad-expect"],
)
async def test_failures_fail_closed(
    http_server: RecordingServer, url: str, fields: dict[str, object], detail: str
) -> None:
    async with httpx.AsyncClient() as client:
        result = await run_webhook_check(spec(url.replace("SERVER", http_server.url), **fields), CONTEXT, client)
    assert not result.passed and detail in result.detail


async def test_a_timeout_fails_the_check() -> None:
    import asyncio

    release = asyncio.Event()

    async def hang(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await release.wait()  # never answers while the check waits
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(hang, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server, httpx.AsyncClient() as client:
        result = await run_webhook_check(spec(f"http://127.0.0.1:{port}/slow", timeout_seconds=0.3), {}, client)
        release.set()
        await asyncio.sleep(0.05)
    assert not result.passed and "timed out after 0.3s" in result.detail
