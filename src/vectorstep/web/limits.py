"""Request bodies are counted while they arrive: one larger than the limit is refused before it is held whole.

A declared `Content-Length` over the limit is refused at once; a body sent without one (chunked) is
refused as soon as the bytes received pass the limit. Either way the answer is a 413 that says the
limit, and memory stays bounded however many large bodies arrive at once.
"""

from __future__ import annotations

import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send

MAX_BODY_BYTES = 1_048_576


class BodyTooLarge(Exception):
    pass


def too_large_detail() -> str:
    return f"the body is larger than {MAX_BODY_BYTES:,} bytes, the most this service accepts"


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers", [])).get(b"content-length")
        # Thousands of digits are too many for `int`, and far more than any body this service takes.
        if declared is not None and (
            not declared.isdigit() or len(declared) > len(str(self.max_bytes)) or int(declared) > self.max_bytes
        ):
            await _refuse(send)
            return
        received = 0

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise BodyTooLarge
            return message

        await self.app(scope, counted, send)


async def _refuse(send: Send) -> None:
    body = json.dumps({"error": "too_large", "detail": too_large_detail()}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})
